// Grammars for JSON numbers between bounds (JSON schema minimum / maximum / exclusiveMinimum /
// exclusiveMaximum on "integer" and "number"). Exact: every number the rules produce lies within the bounds,
// and every number within them with at most kMaxIntegerDigits integer and kMaxFractionDigits fraction
// digits (no exponent) is produced. Built digit by digit, comparing against each bound while the prefix
// still equals it (the classic digit-range construction), one rule per such "tight" state.
// Pure functions over a GbnfBuilder.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "grammar/gbnf_builder.h"

namespace lockstep::grammar {

inline constexpr int kMaxIntegerDigits = 16;
inline constexpr int kMaxFractionDigits = 15;

// A finite decimal: sign, integer digits (no leading zeros; "0" for zero), fraction digits (no trailing
// zeros).
struct Decimal {
  bool negative = false;
  std::string int_digits = "0";
  std::string frac_digits;
  bool zero() const { return int_digits == "0" && frac_digits.empty(); }
};

// Parses JSON number text ("12", "-0.5", "1e-3", "2.50E+2"); InvalidArgument when it is not one or has more
// than 40 digits either side of the point.
Result<Decimal> ParseDecimal(std::string_view text);
// -1, 0, 1 as a < b, a == b, a > b.
int CompareDecimals(const Decimal& a, const Decimal& b);

struct NumberBound {
  Decimal value;
  bool inclusive = true;
};

// Adds rules for the JSON numbers x with lo <= x (or lo < x) and x <= hi (or x < hi), either bound
// optional, to *builder and returns the entry rule's name. integer: no fraction. Bounded numbers never use
// an exponent. InvalidArgument when no number satisfies the bounds.
Result<std::string> AddNumberRange(GbnfBuilder* builder, const std::string& name,
                                   const std::optional<NumberBound>& lo, const std::optional<NumberBound>& hi,
                                   bool integer);

}  // namespace lockstep::grammar
