// SpecialTokenMatcher: splits text into plain-text fragments and special-token matches before the subword
// model runs. User-defined tokens (added tokens) always match as whole pieces; control and unknown tokens
// match only when parsing special text. At each position the longest matching piece wins; scanning is left to
// right, one pass, so the cost is linear in the text. Whitespace before a match of an lstrip token and after
// one of an rstrip token (Vocabulary::SetStripAttributes) is left out of the plain fragments. Immutable; safe
// to share between threads.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocabulary.h"

namespace lockstep {

class SpecialTokenMatcher {
 public:
  struct Fragment {
    int32_t token;          // >= 0: this special token; -1: plain text
    std::string_view text;  // the matched piece, or the plain text (a view into the input)
  };
  explicit SpecialTokenMatcher(const Vocabulary& vocab);
  void Split(std::string_view text, bool parse_special, std::vector<Fragment>* out) const;

 private:
  const Vocabulary& vocab_;
  // Candidates by first byte, longest piece first.
  std::array<std::vector<int32_t>, 256> by_first_byte_;
  std::array<bool, 256> any_user_defined_{};  // some user-defined piece starts with this byte
};

}  // namespace lockstep
