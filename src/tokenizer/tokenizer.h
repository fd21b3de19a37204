// Tokenizer: text <-> token ids, read entirely from a GGUF file's `tokenizer.ggml.*` metadata.
//
// Supported vocabularies (tokenizer.ggml.model):
//   "llama"  SentencePiece BPE: merges by piece score, `▁` for spaces, add_space_prefix, byte fallback
//   <0xNN>. "gpt2"   byte-level BPE: tokenizer.ggml.merges ranks, GPT-2 byte-to-unicode map, and the
//   pre-tokenizer regex
//            list chosen by tokenizer.ggml.pre (gpt-2, llama-bpe/llama3, qwen2, deepseek-llm, deepseek-coder,
//            falcon, starcoder, refact, mpt, gpt-neox/olmo, smollm, dbrx, phi-2, tekken, ...).
//   "bert"   WordPiece (BERT embedding models): lower case, accents stripped, split at whitespace and
//            punctuation, greedy longest pieces; with add_bos, [CLS] ... [SEP]. Lossy: Decode gives the
//            normalised words back, not the text.
// Anything else is an Unimplemented error from FromGguf.
//
// Special tokens: control tokens (token_type 3: <s>, </s>, <|im_end|> ...) are recognised in the text only
// when Encode(..., parse_special = true); user-defined tokens (token_type 4, "added tokens") are always
// matched as whole pieces, as Hugging Face tokenizers and llama.cpp do. Where llama.cpp strips whitespace
// around special tokens by model name (Phi-3: after them; tokenizer/vocabulary.h SetStripAttributes), so
// does Encode.
//
// Decoding: every token's bytes are concatenated (byte tokens give their byte, byte-level BPE pieces are
// mapped back to bytes, SentencePiece `▁` becomes a space); with add_space_prefix (SentencePiece only) the
// one space Encode put in front of the text -- at its start and after each control token -- is removed again,
// so Decode(Encode(s)) == s for every valid UTF-8 string the vocabulary can represent (not WordPiece; but for
// whitespace stripped around special tokens). Invalid UTF-8 in the decoded bytes is replaced by U+FFFD, one
// per maximal invalid subsequence; the result is always valid UTF-8.
//
// Thread-safety: a Tokenizer is immutable after FromGguf; every const method is safe from any thread.
// An IncrementalDetokenizer is a small per-stream object (one thread at a time); it borrows the Tokenizer,
// which must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "tokenizer/fim_tokens.h"

namespace lockstep {

class Vocabulary;
class TokenizerModel;
class SpecialTokenMatcher;

class Tokenizer {
 public:
  // Loads and validates the vocabulary: tokens, scores, token types, merges, special ids, flags.
  // Malformed metadata (missing/duplicate pieces, wrong array lengths, merges naming unknown pieces,
  // special ids out of range) gives InvalidArgument naming the key; an unknown model or pre-tokenizer name
  // gives Unimplemented.
  static Result<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& file);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Tokenizes `text` (must be valid UTF-8: otherwise InvalidArgument naming the byte offset).
  // add_bos: add BOS / EOS as the vocabulary's add_bos_token / add_eos_token say.
  // parse_special: control-token text in `text` (e.g. "<|im_end|>") becomes that token; otherwise it is
  // tokenized as plain text.
  // A character the vocabulary cannot represent at all (no piece, no byte fallback, no unknown token -- e.g.
  // some control bytes with Falcon's vocabulary) is an InvalidArgument error ("cannot represent"), never
  // dropped. Linear-ish cost: O(n log n) in the longest word, with repeated words encoded once per call.
  Result<std::vector<int32_t>> Encode(std::string_view text, bool add_bos, bool parse_special) const;

  // Text of a token sequence (see the decoding rules above). skip_special: control and unknown tokens give no
  // text. continuation: the ids continue an earlier text (e.g. a completion after its prompt), so the
  // SentencePiece leading space of the first token is kept. Ids out of range are skipped.
  std::string Decode(std::span<const int32_t> ids, bool skip_special = false,
                     bool continuation = false) const;

  // The raw vocabulary piece (e.g. "▁Hello", "Ġworld", "<0x0A>", "<s>"); "" for an id out of range.
  std::string TokenPiece(int32_t id) const;
  // The bytes this token contributes to decoded text on its own (no leading-space removal; may be part of a
  // UTF-8 sequence for byte tokens and byte-level pieces); "" for an id out of range.
  std::string TokenBytes(int32_t id) const;

  int32_t vocab_size() const;
  int32_t bos_id() const;  // -1 when absent
  int32_t eos_id() const;  // -1 when absent
  int32_t eot_id() const;  // -1 when absent
  int32_t unk_id() const;  // -1 when absent
  // Fill-in-the-middle tokens (tokenizer/fim_tokens.h), found at load.
  const FimTokens& fim() const;
  bool add_bos() const;
  bool add_eos() const;
  // EOS, EOT, EOM, FIM_PAD / FIM_REP / FIM_SEP and end-of-generation control tokens present in the vocabulary
  // (<|im_end|>, <|eot_id|>, <|end|>, <|endoftext|>, <end_of_turn>, ...).
  bool IsEndOfGeneration(int32_t id) const;
  // Control or user-defined token.
  bool IsSpecial(int32_t id) const;
  bool IsControl(int32_t id) const;
  // Looks a piece up ("<|im_end|>"); -1 when absent.
  int32_t FindToken(std::string_view piece) const;
  // The ids of those of `pieces` that are control tokens here, sorted (what a request keeps in its text:
  // Request::preserved_tokens).
  std::vector<int32_t> ControlTokens(std::span<const std::string_view> pieces) const;
  // "llama" (SentencePiece) or "gpt2" (byte-level BPE), and the pre-tokenizer name ("" for SentencePiece).
  std::string model_name() const;
  std::string pre_name() const;

  // Internal, for IncrementalDetokenizer and tests.
  const Vocabulary& vocabulary() const { return *vocab_; }

 private:
  Tokenizer() = default;
  std::unique_ptr<Vocabulary> vocab_;
  std::unique_ptr<TokenizerModel> model_;
  std::unique_ptr<SpecialTokenMatcher> matcher_;
};

// Streaming decode: Push() each generated token and get the newly completed text. Concatenating every Push()
// and the final Flush() gives exactly Tokenizer::Decode() of the same ids (same options). Never returns a
// partial UTF-8 sequence: incomplete bytes are held until the next token completes them; bytes that can never
// form valid UTF-8 come out as U+FFFD.
class IncrementalDetokenizer {
 public:
  // kept_special: with skip_special, the control tokens among these ids still give their text (llama.cpp's
  // preserved tokens: tool-call markers such as Mistral's [TOOL_CALLS] that a parser must see).
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special = false,
                                  bool continuation = false, std::vector<int32_t> kept_special = {});
  std::string Push(int32_t id);
  // Returns any held bytes (an incomplete UTF-8 sequence at the end becomes U+FFFD) and resets the held
  // state.
  std::string Flush();
  // Bytes held back waiting for the rest of a UTF-8 sequence.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int32_t> kept_special_;  // sorted
  bool at_text_start_;
  std::string pending_;
};

}  // namespace lockstep
