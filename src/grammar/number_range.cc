#include "grammar/number_range.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "base/excerpt.h"

namespace lockstep::grammar {
namespace {

constexpr size_t kMaxDecimalDigits = 40;

std::string DigitClass(char first, char last) {
  if (first == last) return std::string("\"") + first + "\"";
  if (first == '0' && last == '9') return "[0-9]";
  return std::string("[") + first + "-" + last + "]";
}

// Rules for non-negative magnitudes m with lo <| m <| hi (hi optional), as alternatives over the number of
// integer digits L. A state (L, i, tight_lo, tight_hi) is "i digits written, equal so far to lo's / hi's".
class MagnitudeRules {
 public:
  MagnitudeRules(GbnfBuilder* b, std::string name, const Decimal& lo, bool lo_incl, const Decimal* hi,
                 bool hi_incl, bool integer)
      : b_(b),
        name_(std::move(name)),
        lo_(lo),
        lo_incl_(lo_incl),
        hi_(hi),
        hi_incl_(hi_incl),
        integer_(integer) {}

  // GBNF alternatives (without parentheses), or "" when no magnitude fits.
  std::string Alternatives() {
    const int lo_len = int(lo_.int_digits.size());
    const int hi_len = hi_ ? int(hi_->int_digits.size()) : std::max(kMaxIntegerDigits, lo_len);
    std::vector<std::string> alts;
    for (L_ = lo_len; L_ <= hi_len; ++L_) {
      memo_.clear();
      std::optional<std::string> e = State(0, L_ == lo_len, hi_ && L_ == hi_len);
      if (e) alts.push_back(e->empty() ? "\"\"" : *e);
    }
    std::string out;
    for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + a;
    return out;
  }

 private:
  char LoDigit(int i) const {
    if (i < L_) return lo_.int_digits[size_t(i)];
    const size_t k = size_t(i - L_);
    return k < lo_.frac_digits.size() ? lo_.frac_digits[k] : '0';
  }
  char HiDigit(int i) const {
    if (i < L_) return hi_->int_digits[size_t(i)];
    const size_t k = size_t(i - L_);
    return k < hi_->frac_digits.size() ? hi_->frac_digits[k] : '0';
  }

  // Anything may follow (both bounds already left behind), i >= 1.
  std::string Free(int i) const {
    if (i < L_) return "[0-9]{" + std::to_string(L_ - i) + "}" + (integer_ ? "" : " " + Free(L_));
    if (integer_) return "";
    const int k = i - L_;
    if (k == 0) return "( \".\" [0-9]{1," + std::to_string(kMaxFractionDigits) + "} )?";
    return k < kMaxFractionDigits ? "[0-9]{0," + std::to_string(kMaxFractionDigits - k) + "}" : "";
  }

  bool EndAllowed(int i, bool tl, bool th) const {
    const size_t k = size_t(i - L_);
    const bool lo_ok = !tl || (k >= lo_.frac_digits.size() && lo_incl_);
    const bool hi_ok = !th || (k >= hi_->frac_digits.size() ? hi_incl_ : true);
    return lo_ok && hi_ok;
  }

  // The expression for a state ("" = the empty string), or nullopt when nothing can complete it.
  std::optional<std::string> State(int i, bool tl, bool th) {
    if (!tl && !th && i > 0) return Free(i);
    const auto key = std::make_tuple(i, tl, th);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    std::vector<std::string> alts;
    const int k = i - L_;
    if (i >= L_ && EndAllowed(i, tl, th)) alts.push_back("\"\"");
    const bool digits = i < L_ || (!integer_ && k < kMaxFractionDigits);
    if (digits) {
      char lo_d = tl ? LoDigit(i) : '0';
      const char hi_d = th ? HiDigit(i) : '9';
      if (i == 0 && L_ > 1) lo_d = std::max(lo_d, '1');
      const std::string prefix = i == L_ ? "\".\" " : "";
      // Digits split into runs sharing the next state: lo's digit, hi's digit, and those between.
      for (char d = lo_d; d <= hi_d;) {
        const bool ntl = tl && d == LoDigit(i);
        const bool nth = th && d == HiDigit(i);
        char last = d;
        while (last < hi_d && !(tl && last + 1 == LoDigit(i)) && !(th && last + 1 == HiDigit(i)) && !ntl &&
               !nth) {
          ++last;
        }
        std::optional<std::string> next = State(i + 1, ntl, nth);
        if (next) alts.push_back(prefix + DigitClass(d, last) + (next->empty() ? "" : " " + *next));
        d = char(last + 1);
      }
    }
    std::optional<std::string> result;
    if (alts.size() == 1) {
      result = alts[0] == "\"\"" ? "" : alts[0];
    } else if (!alts.empty()) {
      std::string body;
      for (const std::string& a : alts) body += (body.empty() ? "" : " | ") + a;
      result = b_->Add(name_ + "-digits", body);
    }
    memo_[key] = result;
    return result;
  }

  GbnfBuilder* b_;
  std::string name_;
  const Decimal& lo_;
  bool lo_incl_;
  const Decimal* hi_;
  bool hi_incl_;
  bool integer_;
  int L_ = 1;
  std::map<std::tuple<int, bool, bool>, std::optional<std::string>> memo_;
};

Decimal Negate(Decimal d) {
  if (!d.zero()) d.negative = !d.negative;
  return d;
}

}  // namespace

Result<Decimal> ParseDecimal(std::string_view text) {
  auto bad = [&] { return InvalidArgument("'" + Excerpt(text) + "' is not a JSON number"); };
  size_t p = 0;
  Decimal d;
  if (p < text.size() && text[p] == '-') {
    d.negative = true;
    ++p;
  }
  std::string digits;
  int point = -1;
  for (; p < text.size() && ((text[p] >= '0' && text[p] <= '9') || text[p] == '.'); ++p) {
    if (text[p] == '.') {
      if (point >= 0) return bad();
      point = int(digits.size());
    } else {
      digits += text[p];
    }
  }
  if (digits.empty()) return bad();
  if (point < 0) point = int(digits.size());
  if (p < text.size() && (text[p] == 'e' || text[p] == 'E')) {
    ++p;
    int sign = 1;
    if (p < text.size() && (text[p] == '+' || text[p] == '-')) sign = text[p++] == '-' ? -1 : 1;
    int exp = 0;
    if (p >= text.size()) return bad();
    for (; p < text.size() && text[p] >= '0' && text[p] <= '9'; ++p) {
      exp = exp * 10 + (text[p] - '0');
      if (exp > 1000) return InvalidArgument("'" + Excerpt(text) + "' has too large an exponent");
    }
    point += sign * exp;
  }
  if (p != text.size()) return bad();
  if (point < 0) {
    digits.insert(0, size_t(-point), '0');
    point = 0;
  }
  if (size_t(point) > digits.size()) digits.append(size_t(point) - digits.size(), '0');
  d.int_digits = digits.substr(0, size_t(point));
  d.frac_digits = digits.substr(size_t(point));
  d.int_digits.erase(0, std::min(d.int_digits.find_first_not_of('0'), d.int_digits.size()));
  if (d.int_digits.empty()) d.int_digits = "0";
  while (!d.frac_digits.empty() && d.frac_digits.back() == '0') d.frac_digits.pop_back();
  if (d.int_digits.size() > kMaxDecimalDigits || d.frac_digits.size() > kMaxDecimalDigits) {
    return InvalidArgument("'" + std::string(text) + "' has more than " + std::to_string(kMaxDecimalDigits) +
                           " digits before or after the point");
  }
  if (d.zero()) d.negative = false;
  return d;
}

int CompareDecimals(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  const int sign = a.negative ? -1 : 1;
  if (a.int_digits.size() != b.int_digits.size()) {
    return a.int_digits.size() < b.int_digits.size() ? -sign : sign;
  }
  if (int c = a.int_digits.compare(b.int_digits); c != 0) return c < 0 ? -sign : sign;
  if (int c = a.frac_digits.compare(b.frac_digits); c != 0) return c < 0 ? -sign : sign;
  return 0;
}

Result<std::string> AddNumberRange(GbnfBuilder* builder, const std::string& name,
                                   const std::optional<NumberBound>& lo, const std::optional<NumberBound>& hi,
                                   bool integer) {
  std::vector<std::string> alts;
  const auto empty_range = [](const Decimal& a, bool a_incl, const Decimal* b, bool b_incl) {
    if (b == nullptr) return false;
    const int c = CompareDecimals(a, *b);
    return c > 0 || (c == 0 && !(a_incl && b_incl));
  };
  // x >= 0: magnitudes from max(lo, 0) to hi.
  {
    const bool lo_below = !lo || lo->value.negative;
    const Decimal zero;
    const Decimal& a = lo_below ? zero : lo->value;
    const bool a_incl = lo_below || lo->inclusive;
    const Decimal* b = hi ? &hi->value : nullptr;
    const bool b_incl = hi && hi->inclusive;
    if (!(hi && hi->value.negative) && !empty_range(a, a_incl, b, b_incl)) {
      const std::string m = MagnitudeRules(builder, name, a, a_incl, b, b_incl, integer).Alternatives();
      if (!m.empty()) alts.push_back("( " + m + " )");
    }
  }
  // x < 0: "-" and magnitudes from max(-hi, 0) (exclusive of 0) to -lo.
  if (!lo || lo->value.negative) {
    const bool hi_above = !hi || !hi->value.negative;
    const Decimal a = hi_above ? Decimal{} : Negate(hi->value);
    const bool a_incl = !hi_above && hi->inclusive;
    const Decimal upper = lo ? Negate(lo->value) : Decimal{};
    const Decimal* b = lo ? &upper : nullptr;
    const bool b_incl = lo && lo->inclusive;
    if (!empty_range(a, a_incl, b, b_incl)) {
      const std::string m =
          MagnitudeRules(builder, name + "-neg", a, a_incl, b, b_incl, integer).Alternatives();
      if (!m.empty()) alts.push_back("\"-\" ( " + m + " )");
    }
  }
  if (alts.empty())
    return InvalidArgument("no " + std::string(integer ? "integer" : "number") +
                           " satisfies the minimum and maximum");
  std::string body;
  for (const std::string& a : alts) body += (body.empty() ? "" : " | ") + a;
  return builder->Add(name, body);
}

}  // namespace lockstep::grammar
