// Vocabulary: the validated contents of a GGUF file's tokenizer.ggml.* metadata -- pieces, scores, token
// types, BPE merges (as id pairs), special token ids and the encoding flags -- plus lookup tables derived
// from them (piece -> id, per-token decoded bytes, byte tokens, special-token list). Immutable after Load();
// safe to share between threads. Internal to the tokenizer layer.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "tokenizer/fim_tokens.h"

namespace lockstep {

// tokenizer.ggml.token_type values (as llama.cpp / gguf-py define them).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// kWordPiece: BERT's ("bert"; tokenizer/tokenizer_model.h), pieces stored as llama.cpp's converter writes
// them (word-initial "▁piece", continuation "piece").
enum class VocabKind { kSentencePiece, kByteLevelBpe, kWordPiece };

struct TokenData {
  std::string piece;
  float score = 0.0f;
  TokenType type = TokenType::kNormal;
  // Special tokens only: whitespace right before (lstrip) or after (rstrip) a match in the text is dropped,
  // as llama.cpp sets these by model name (SetStripAttributes).
  bool lstrip = false;
  bool rstrip = false;
};

// Transparent hashing so maps keyed by std::string can be searched with a std::string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class Vocabulary {
 public:
  static Result<std::unique_ptr<Vocabulary>> Load(const GgufFile& file);

  VocabKind kind() const { return kind_; }
  const std::string& model_name() const { return model_name_; }
  const std::string& pre_name() const { return pre_name_; }
  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  bool InRange(int32_t id) const { return id >= 0 && id < size(); }
  const TokenData& token(int32_t id) const { return tokens_[id]; }
  // Bytes a token contributes to decoded text (▁ -> space, <0xNN> -> the byte, byte-level chars -> bytes).
  const std::string& decoded(int32_t id) const { return decoded_[id]; }

  // Exact piece lookup; -1 when absent.
  int32_t Find(std::string_view piece) const {
    auto it = piece_to_id_.find(piece);
    return it == piece_to_id_.end() ? -1 : it->second;
  }
  // SentencePiece byte-fallback token <0xNN> for `byte`; -1 when absent.
  int32_t ByteToken(unsigned char byte) const { return byte_tokens_[byte]; }

  // Byte-level BPE merge of the adjacent tokens (left, right): its rank (lower merges first) and the merged
  // id; false when there is no such merge.
  bool FindMerge(int32_t left, int32_t right, int32_t* rank, int32_t* merged) const {
    if (merge_slots_.empty()) return false;
    const uint64_t key = MergeKey(left, right);
    for (size_t i = MergeSlot(key);; i = (i + 1) & (merge_slots_.size() - 1)) {
      const MergeSlotEntry& e = merge_slots_[i];
      if (e.merged < 0) return false;  // empty slot: not present
      if (e.key == key) {
        *rank = e.rank;
        *merged = e.merged;
        return true;
      }
    }
  }
  size_t merge_count() const { return merge_count_; }

  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t eot_id() const { return eot_id_; }
  int32_t eom_id() const { return eom_id_; }
  int32_t unk_id() const { return unk_id_; }
  // WordPiece: the separator token ([SEP]) that ends an encoded text after BOS ([CLS]) began it; else -1.
  int32_t sep_id() const { return sep_id_; }
  const FimTokens& fim() const { return fim_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  // SentencePiece: a space is put in front of the text (and removed again by decoding). WordPiece: true,
  // for decoding only (the "▁" of the first word gives no space).
  bool add_space_prefix() const { return add_space_prefix_; }
  bool ignore_merges() const { return ignore_merges_; }

  // Tokens matched as whole pieces in text: control and unknown (only when parsing special text) and
  // user-defined (always). Longest piece first.
  const std::vector<int32_t>& special_tokens() const { return special_tokens_; }
  // EOS, EOT, EOM, FIM pad / repo / separator, and the chat end markers that are control or user-defined
  // tokens; not <|end|> in a Harmony vocabulary (gpt-oss: it has <|return|> and <|call|>), where it ends a
  // message of the reply rather than the reply.
  bool IsEndOfGeneration(int32_t id) const;
  bool IsType(int32_t id, TokenType type) const { return InRange(id) && tokens_[id].type == type; }

 private:
  // Merges live in an open-addressing hash table (linear probing, at most half full): one cache line per
  // lookup in the common case, which matters because every candidate pair of every word is looked up.
  struct MergeSlotEntry {
    uint64_t key = 0;
    int32_t rank = 0;
    int32_t merged = -1;  // -1: empty slot
  };
  static uint64_t MergeKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  size_t MergeSlot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & (merge_slots_.size() - 1);
  }
  // Inserts unless the pair is already there (the first, lowest-rank merge wins).
  void InsertMerge(uint64_t key, int32_t rank, int32_t merged);
  Status LoadTokens(const GgufFile& file);
  Status LoadMerges(const GgufFile& file);
  Status LoadSpecialIds(const GgufFile& file);
  // FIM tokens by key, then by piece (tokenizer/fim_tokens.h). A key out of range is InvalidArgument.
  Status LoadFimIds(const GgufFile& file);
  Status LoadFlags(const GgufFile& file);
  void BuildDerivedTables();
  // llama.cpp's rules by general.name / tokenizer.ggml.pre (its llama-vocab.cpp): a name containing "phi-3"
  // or "phi3" (lowercased) gives every control, user-defined and unknown token rstrip, except <unk>, <s> and
  // <|endoftext|>; the jina-v2-de/es/code pre-tokenizers give <mask> lstrip.
  void SetStripAttributes(const GgufFile& file);

  VocabKind kind_ = VocabKind::kSentencePiece;
  std::string model_name_;
  std::string pre_name_;
  std::vector<TokenData> tokens_;
  std::vector<std::string> decoded_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> piece_to_id_;
  std::vector<MergeSlotEntry> merge_slots_;  // size a power of two
  size_t merge_count_ = 0;
  std::array<int32_t, 256> byte_tokens_{};
  std::vector<int32_t> special_tokens_;
  std::vector<int32_t> eog_ids_;
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  int32_t eot_id_ = -1;
  int32_t eom_id_ = -1;
  int32_t unk_id_ = -1;
  int32_t sep_id_ = -1;
  FimTokens fim_;
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool add_space_prefix_ = false;
  bool ignore_merges_ = false;
};

}  // namespace lockstep
