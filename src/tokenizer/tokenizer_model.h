// TokenizerModel: the subword algorithm behind a Tokenizer, applied to one fragment of plain text (special
// tokens are split off before). Three implementations:
//   SentencePiece BPE (sentencepiece_bpe.cc): the fragment arrives escaped (spaces as ▁, the prefix space
//     already added); adjacent symbols merge while the merged text is a piece, best score first; characters
//     without a piece fall back to <0xNN> byte tokens (or the unknown token).
//   Byte-level BPE (byte_level_bpe.cc): the fragment is split into words by the pre-tokenizer regexes, each
//   word's
//     bytes are mapped through the GPT-2 byte-to-unicode table, then merged by tokenizer.ggml.merges rank.
//   WordPiece (wordpiece.cc): BERT's normalisation (accents stripped, lower case), words split at whitespace
//     and punctuation, each word cut greedily into the longest pieces; see the file.
// Both BPE models use a linked list of symbols and a priority queue of candidate merges: O(n log n) in the
// word length. SentencePiece text is cut into words (at a ▁ after a non-▁ character) when no piece has ▁
// after a non-▁ character -- then no merge can cross such a cut and the result is identical; otherwise the
// fragment is merged whole. Both models encode each distinct word once per call (a per-call cache). Immutable
// after creation; EncodeFragment is safe to call from any thread (all scratch is per call).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/vocabulary.h"

namespace lockstep {

class TokenizerModel {
 public:
  virtual ~TokenizerModel() = default;
  // Appends the ids of `text` (valid UTF-8) to *out.
  virtual Status EncodeFragment(std::string_view text, std::vector<int32_t>* out) const = 0;
};

// The vocabulary must outlive the model.
std::unique_ptr<TokenizerModel> CreateSentencePieceBpe(const Vocabulary& vocab);
Result<std::unique_ptr<TokenizerModel>> CreateByteLevelBpe(const Vocabulary& vocab);
// The vocabulary must have an unknown token.
std::unique_ptr<TokenizerModel> CreateWordPiece(const Vocabulary& vocab);

}  // namespace lockstep
