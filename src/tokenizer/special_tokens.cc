#include "tokenizer/special_tokens.h"

namespace lockstep {
namespace {

// C's isspace in the "C" locale, as llama.cpp strips: space, \t, \n, \v, \f, \r.
bool IsSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

}  // namespace

SpecialTokenMatcher::SpecialTokenMatcher(const Vocabulary& vocab) : vocab_(vocab) {
  for (int32_t id : vocab.special_tokens()) {  // already longest first
    const auto first = static_cast<unsigned char>(vocab.token(id).piece[0]);
    by_first_byte_[first].push_back(id);
    if (vocab.token(id).type == TokenType::kUserDefined) any_user_defined_[first] = true;
  }
}

void SpecialTokenMatcher::Split(std::string_view text, bool parse_special, std::vector<Fragment>* out) const {
  out->clear();
  size_t plain_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto c = static_cast<unsigned char>(text[pos]);
    const bool candidates = parse_special ? !by_first_byte_[c].empty() : any_user_defined_[c];
    int32_t match = -1;
    if (candidates) {
      for (int32_t id : by_first_byte_[c]) {
        const TokenData& t = vocab_.token(id);
        if (!parse_special && t.type != TokenType::kUserDefined) continue;
        if (text.compare(pos, t.piece.size(), t.piece) == 0) {
          match = id;
          break;
        }
      }
    }
    if (match < 0) {
      ++pos;
      continue;
    }
    const TokenData& t = vocab_.token(match);
    size_t plain_end = pos;
    if (t.lstrip) {
      while (plain_end > plain_start && IsSpace(text[plain_end - 1])) --plain_end;
    }
    if (plain_end > plain_start)
      out->push_back(Fragment{-1, text.substr(plain_start, plain_end - plain_start)});
    out->push_back(Fragment{match, text.substr(pos, t.piece.size())});
    pos += t.piece.size();
    if (t.rstrip) {
      while (pos < text.size() && IsSpace(text[pos])) ++pos;
    }
    plain_start = pos;
  }
  if (plain_start < text.size()) out->push_back(Fragment{-1, text.substr(plain_start)});
}

}  // namespace lockstep
