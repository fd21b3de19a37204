// WordPiece (tokenizer.ggml.model "bert"), as llama.cpp's WPM tokenizer runs it on a fragment of text:
//   1. every code point is replaced by the first code point of its canonical decomposition (accents go:
//      "é" -> "e") and then lower-cased; NUL, U+FFFD and control/format characters are dropped;
//   2. words are split at whitespace, and every punctuation character, ASCII symbol ($+<=>^`|~) and CJK
//      ideograph is a word of its own;
//   3. each word, with "▁" in front (llama.cpp's converter stores word-initial pieces as "▁piece" and the
//      "##piece" continuations as "piece"), is cut greedily from the left into the longest pieces of the
//      vocabulary; a word with any part that matches nothing becomes the unknown token, whole.
// Step 3 matches byte strings of up to the longest piece's length (a cut inside a UTF-8 sequence never
// matches a piece, so it only costs a look-up).
#include <algorithm>
#include <string>

#include "tokenizer/tokenizer_model.h"
#include "tokenizer/unicode_class.h"
#include "tokenizer/utf8.h"

namespace lockstep {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // ▁ U+2581

bool IsAsciiSymbol(uint32_t cp) {
  return cp == '$' || cp == '+' || cp == '<' || cp == '=' || cp == '>' || cp == '^' || cp == '`' ||
         cp == '|' || cp == '~';
}

class WordPiece final : public TokenizerModel {
 public:
  explicit WordPiece(const Vocabulary& vocab) : vocab_(vocab) {
    for (int32_t id = 0; id < vocab.size(); ++id) {
      max_piece_bytes_ = std::max(max_piece_bytes_, vocab.token(id).piece.size());
    }
  }

  Status EncodeFragment(std::string_view text, std::vector<int32_t>* out) const override {
    std::string word(kWordStart);
    auto finish_word = [&] {
      if (word.size() > kWordStart.size()) EncodeWord(word, out);
      word.resize(kWordStart.size());
    };
    for (size_t pos = 0; pos < text.size();) {
      const uint32_t cp = unicode::NfdFirst(utf8::DecodeAt(text, &pos));
      if (unicode::IsWhitespace(cp)) {
        finish_word();
        continue;
      }
      if (cp == 0 || cp == 0xFFFD || unicode::IsControl(cp)) continue;
      const uint32_t lower = unicode::ToLower(cp);
      if (unicode::IsPunctuation(cp) || (cp < 0x7F && IsAsciiSymbol(cp)) || unicode::IsCjkIdeograph(cp)) {
        finish_word();
        utf8::Append(lower, &word);
        finish_word();
      } else {
        utf8::Append(lower, &word);
      }
    }
    finish_word();
    return Status::Ok();
  }

 private:
  // `word` starts with ▁.
  void EncodeWord(std::string_view word, std::vector<int32_t>* out) const {
    const size_t first = out->size();
    for (size_t i = 0; i < word.size();) {
      size_t len = std::min(word.size() - i, max_piece_bytes_);
      int32_t id = -1;
      for (; len > 0; --len) {
        id = vocab_.Find(word.substr(i, len));
        if (id >= 0) break;
      }
      if (id < 0) {  // some part matches nothing: the whole word is unknown
        out->resize(first);
        break;
      }
      out->push_back(id);
      i += len;
    }
    if (out->size() == first) out->push_back(vocab_.unk_id());
  }

  const Vocabulary& vocab_;
  size_t max_piece_bytes_ = 0;
};

}  // namespace

std::unique_ptr<TokenizerModel> CreateWordPiece(const Vocabulary& vocab) {
  return std::make_unique<WordPiece>(vocab);
}

}  // namespace lockstep
