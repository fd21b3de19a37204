// FimTokens: a vocabulary's fill-in-the-middle tokens, found once when the vocabulary loads
// (Vocabulary::Load) as llama.cpp's vocabulary loader finds them (its llama-vocab.cpp):
//   1. the GGUF keys tokenizer.ggml.fim_{pre,suf,mid,pad,rep,sep}_token_id, or the older
//      tokenizer.ggml.{prefix,suffix,middle}_token_id for the first three;
//   2. where a key is absent, the first of the known spellings (FimPieces(): Qwen's <|fim_prefix|>,
//      StarCoder's <fim_prefix>, CodeLlama's <PRE>, ...) that the vocabulary has, of any token type.
// FIM_PAD, FIM_REP and FIM_SEP end generation (as llama.cpp puts them among its end-of-generation tokens).
// A plain value type; -1 means "absent".
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace lockstep {

struct FimTokens {
  int32_t pre = -1;  // FIM_PRE: the prefix follows
  int32_t suf = -1;  // FIM_SUF: the suffix follows
  int32_t mid = -1;  // FIM_MID: the model writes the middle
  int32_t pad = -1;
  int32_t rep = -1;  // FIM_REP: the repository name follows (repo-level FIM, Qwen2.5-Coder)
  int32_t sep = -1;  // FIM_SEP: a file name and its text follow

  // /infill needs prefix, suffix and middle tokens.
  bool CanInfill() const { return pre >= 0 && suf >= 0 && mid >= 0; }
};

// Which FimTokens slot a piece list describes.
enum class FimSlot { kPre, kSuf, kMid, kPad, kRep, kSep };

// The spellings tried for one slot, in the order tried (llama.cpp takes the first it meets in its hash map; a
// vocabulary has at most one of them in practice). llama.cpp's lists, plus DeepSeek-Coder's
// <｜fim▁begin｜> / <｜fim▁hole｜> / <｜fim▁end｜> and CodeLlama's ▁<PRE> / ▁<SUF> / ▁<MID>, whose GGUFs
// usually carry the keys but not always.
std::span<const std::string_view> FimPieces(FimSlot slot);

}  // namespace lockstep
