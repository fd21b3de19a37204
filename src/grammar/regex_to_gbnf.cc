// Hand-written: PCRE2 (a project dependency) matches regexes but cannot enumerate or convert them.
#include "grammar/regex_to_gbnf.h"

#include <vector>

#include "grammar/grammar.h"
#include "grammar/utf8_ranges.h"
#include "tokenizer/utf8.h"

namespace lockstep::grammar {
namespace {

using Ranges = std::vector<CodepointRange>;

const Ranges kDigits = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpaceAscii = {{'\t', '\r'}, {' ', ' '}};
// Every ECMAScript whitespace and line terminator (what \s matches there).
const Ranges kSpaceAll = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680},
                          {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                          {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Ranges kLineTerminators = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

std::string Hex(uint32_t cp) {
  static const char* digits = "0123456789ABCDEF";
  const int width = cp < 0x100 ? 2 : cp < 0x10000 ? 4 : 8;
  std::string out = width == 2 ? "\\x" : width == 4 ? "\\u" : "\\U";
  for (int i = width - 1; i >= 0; --i) out += digits[(cp >> (4 * i)) & 15];
  return out;
}

// A GBNF class of already normalised ranges ("[]" matches nothing).
std::string ClassText(const Ranges& ranges) {
  std::string out = "[";
  for (const CodepointRange& r : ranges) {
    out += Hex(r.first);
    if (r.last != r.first) {
      out += '-';
      out += Hex(r.last);
    }
  }
  return out + "]";
}

std::string JsonEscaped(uint32_t cp, const std::set<uint32_t>& escaped) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  if (cp < 0x20 || escaped.count(cp) != 0) {
    static const char* digits = "0123456789abcdef";
    std::string out = "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += digits[(cp >> shift) & 15];
    return out;
  }
  std::string s;
  utf8::Append(cp, &s);
  return s;
}

class RegexParser {
 public:
  RegexParser(std::vector<uint32_t> cps, bool json, const std::set<uint32_t>& escaped)
      : cps_(std::move(cps)), json_(json), escaped_(escaped) {}

  Result<std::string> Parse() {
    size_t end = cps_.size();
    if (pos_ < end && cps_[pos_] == '^') ++pos_;
    if (end > pos_ && cps_[end - 1] == '$' && !(end >= 2 && cps_[end - 2] == '\\')) --end;
    end_ = end;
    std::string expr = Render(ParseAlternation());
    if (error_.ok() && pos_ < end_) Fail(pos_, "unbalanced ')'");
    if (!error_.ok()) return error_;
    return expr;
  }

 private:
  bool AtEnd() const { return pos_ >= end_; }
  uint32_t Peek(size_t ahead = 0) const { return pos_ + ahead < end_ ? cps_[pos_ + ahead] : 0; }

  void Fail(size_t at, const std::string& what) {
    if (error_.ok()) error_ = InvalidArgument("regex at character " + std::to_string(at + 1) + ": " + what);
  }

  std::string Literal(uint32_t cp) {
    if (json_) return GbnfLiteral(JsonEscaped(cp, escaped_));
    if (escaped_.count(cp) != 0) {  // raw text that must not hold it
      std::string c;
      utf8::Append(cp, &c);
      Fail(pos_ - 1, "the pattern spells '" + c + "', which this value cannot hold");
      return "[]";
    }
    std::string s;
    utf8::Append(cp, &s);
    return GbnfLiteral(s);
  }

  // A set of code points as an expression; in JSON mode ", \ and controls become their escapes.
  std::string SetExpr(const Ranges& raw, bool negated) {
    Ranges ranges = NormalizeRanges(raw, negated);
    if (!json_) {  // the escaped code points left out
      Ranges kept;
      for (const CodepointRange& r : ranges) {
        CodepointRange rest = r;
        for (uint32_t e : escaped_) {
          if (rest.first <= e && e <= rest.last) {
            if (rest.first < e) kept.push_back({rest.first, e - 1});
            rest.first = e + 1;
          }
        }
        if (rest.first <= rest.last) kept.push_back(rest);
      }
      return ClassText(kept);
    }
    Ranges plain;
    std::vector<std::string> alts;
    for (const CodepointRange& r : ranges) {
      for (uint32_t c = r.first; c <= std::min<uint32_t>(r.last, 0x1F); ++c) alts.push_back(Literal(c));
      CodepointRange rest{std::max<uint32_t>(r.first, 0x20), r.last};
      std::set<uint32_t> specials = escaped_;  // ascending
      specials.insert({uint32_t('"'), uint32_t('\\')});
      for (uint32_t special : specials) {
        if (rest.first <= special && special <= rest.last) {
          alts.push_back(Literal(special));
          if (rest.first < special) plain.push_back({rest.first, special - 1});
          rest.first = special + 1;
        }
      }
      if (rest.first <= rest.last) plain.push_back(rest);
    }
    if (!plain.empty()) alts.insert(alts.begin(), ClassText(plain));
    if (alts.empty()) return "[]";
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : " ") + alts[i];
    return out + " )";
  }

  // An atom under its (collapsed) quantifier: `base` repeated min..max times (max kUnbounded: no limit).
  struct Item {
    std::string base;
    int64_t min = 1;
    int64_t max = 1;
  };
  static constexpr int64_t kUnbounded = -1;

  static std::string Render(const Item& item) {
    if (item.min == 1 && item.max == 1) return item.base;
    std::string op;
    if (item.min == 0 && item.max == kUnbounded) {
      op = "*";
    } else if (item.min == 1 && item.max == kUnbounded) {
      op = "+";
    } else if (item.min == 0 && item.max == 1) {
      op = "?";
    } else {
      op = '{';
      op += std::to_string(item.min);
      if (item.max != item.min) {
        op += ',';
        if (item.max != kUnbounded) op += std::to_string(item.max);
      }
      op += '}';
    }
    return "( " + item.base + " )" + op;
  }

  // (X{a,b}){c,d} as X{min,max} when that is the very same language and no larger a grammar. The counts
  // are the union over k in [c,d] of [k*a, k*b]: gap-free unless a - 1 > k * (b - a) for k = c (the
  // widest gap). So X** = X*, (X+)* = X*, (X?){3} = X{0,3}, but (X{2})* (even counts) stays nested.
  static bool Compose(const Item& inner, int64_t c, int64_t d, Item* out) {
    const int64_t a = inner.min, b = inner.max;
    if (b == 0 || d == 0) {
      *out = Item{inner.base, 0, 0};
      return true;
    }
    if (c != d && (b == kUnbounded ? (c == 0 && a > 1) : (a - 1 > c * (b - a)))) return false;
    const int64_t max = b == kUnbounded || d == kUnbounded ? kUnbounded : b * d;
    // Only where it does not grow the grammar: X{m,n} expands to about max(m, n) copies, the nested form to
    // those of each level (so (X{50}){50} stays nested rather than 2500 copies).
    const auto copies = [](int64_t lo, int64_t hi) { return hi == kUnbounded ? lo + 1 : hi; };
    if (copies(a * c, max) > copies(a, b) + copies(c, d)) return false;
    if (a * c > kMaxRepetition || max > kMaxRepetition) return false;  // the GBNF parser's limit
    *out = Item{inner.base, a * c, max};
    return true;
  }

  // X{a,b} X{c,d} as X{a+c, b+d} (always the same language), within kMaxRepetition; only for two
  // quantified atoms (so `.*.*` collapses and plain literals stay as written).
  static bool Merge(const Item& x, const Item& y, Item* out) {
    if (x.base != y.base || (x.min == 1 && x.max == 1) || (y.min == 1 && y.max == 1)) return false;
    const int64_t max = x.max == kUnbounded || y.max == kUnbounded ? kUnbounded : x.max + y.max;
    if (x.min + y.min > kMaxRepetition || max > kMaxRepetition) return false;
    *out = Item{x.base, x.min + y.min, max};
    return true;
  }

  // A group's content: the one item it holds (so `(X*)*` composes), else its text as one item.
  Item ParseAlternation() {
    std::vector<std::vector<Item>> alts = {ParseSequence()};
    while (error_.ok() && !AtEnd() && Peek() == '|') {
      ++pos_;
      alts.push_back(ParseSequence());
    }
    if (alts.size() == 1 && alts[0].size() == 1) return alts[0][0];
    std::vector<std::string> texts;
    for (const std::vector<Item>& seq : alts) {
      std::string text;
      for (const Item& item : seq) {
        if (!text.empty()) text += ' ';
        text += Render(item);
      }
      texts.push_back(text.empty() ? "\"\"" : text);
    }
    if (texts.size() == 1) return Item{"( " + texts[0] + " )"};
    std::string out = "(";
    for (size_t i = 0; i < texts.size(); ++i) out += (i ? " | " : " ") + texts[i];
    return Item{out + " )"};
  }

  std::vector<Item> ParseSequence() {
    std::vector<Item> out;
    while (error_.ok() && !AtEnd() && Peek() != '|' && Peek() != ')') {
      Item atom = ParseAtom();
      if (!error_.ok()) break;
      atom = ParseQuantifiers(std::move(atom));
      Item merged;
      if (!out.empty() && Merge(out.back(), atom, &merged)) {
        out.back() = std::move(merged);
      } else {
        out.push_back(std::move(atom));
      }
    }
    return out;
  }

  // Reads {n}, {n,}, {n,m} at pos_ (just after '{'); false (pos_ unchanged) when it is not one, in which
  // case the '{' is a literal, as in ECMAScript.
  bool ReadCount(int64_t* min, int64_t* max) {
    size_t p = pos_;
    auto number = [&](int64_t* out) {
      if (p >= end_ || cps_[p] < '0' || cps_[p] > '9') return false;
      *out = 0;
      for (; p < end_ && cps_[p] >= '0' && cps_[p] <= '9'; ++p)
        *out = std::min<int64_t>(*out * 10 + (cps_[p] - '0'), 1 << 30);
      return true;
    };
    if (!number(min)) return false;
    *max = *min;
    if (p < end_ && cps_[p] == ',') {
      ++p;
      *max = -1;
      number(max);
    }
    if (p >= end_ || cps_[p] != '}') return false;
    pos_ = p + 1;
    return true;
  }

  Item ParseQuantifiers(Item atom) {
    while (error_.ok() && !AtEnd()) {
      const size_t at = pos_;
      const uint32_t c = Peek();
      int64_t min = 0, max = kUnbounded;
      if (c == '*' || c == '+' || c == '?') {
        ++pos_;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
      } else if (c == '{') {
        ++pos_;
        if (!ReadCount(&min, &max)) {
          --pos_;
          break;
        }
        if (max >= 0 && max < min) return Fail(at, "repetition {n,m} with m < n"), atom;
        if (min > kMaxRepetition || max > kMaxRepetition) {
          return Fail(at, "repetition bound above " + std::to_string(kMaxRepetition)), atom;
        }
      } else {
        break;
      }
      if (!AtEnd() && Peek() == '?') ++pos_;  // lazy: the same language
      if (!AtEnd() && Peek() == '+') return Fail(pos_, "possessive quantifiers are not supported"), atom;
      Item composed;
      if (Compose(atom, min, max, &composed)) {
        atom = std::move(composed);
      } else {
        atom = Item{"( " + Render(atom) + " )", min, max};
      }
    }
    return atom;
  }

  // One escape after '\' inside or outside a class: a class (\d ...) as ranges, or one code point.
  bool ParseEscape(bool in_class, Ranges* set, bool* negated_set, uint32_t* cp) {
    const size_t at = pos_ - 1;
    if (AtEnd()) return Fail(at, "a pattern cannot end with '\\'"), false;
    const uint32_t e = cps_[pos_++];
    *negated_set = false;
    switch (e) {
      case 'd':
      case 'D':
        *set = kDigits;
        *negated_set = e == 'D';
        return true;
      case 'w':
      case 'W':
        *set = kWord;
        *negated_set = e == 'W';
        return true;
      case 's':
        *set = kSpaceAscii;
        return true;
      case 'S':
        *set = kSpaceAll;
        *negated_set = true;
        return true;
      case 'n':
        *cp = '\n';
        return true;
      case 't':
        *cp = '\t';
        return true;
      case 'r':
        *cp = '\r';
        return true;
      case 'f':
        *cp = '\f';
        return true;
      case 'v':
        *cp = '\v';
        return true;
      case '0':
        *cp = 0;
        return true;
      case 'b':
        if (in_class) {
          *cp = '\b';
          return true;
        }
        return Fail(at, "word boundaries (\\b) are not supported"), false;
      case 'B':
        return Fail(at, "word boundaries (\\B) are not supported"), false;
      case 'p':
      case 'P':
        return Fail(at, "Unicode property classes (\\p{...}) are not supported"), false;
      case 'x':
      case 'u': {
        const bool braces = e == 'u' && !AtEnd() && Peek() == '{';
        if (braces) ++pos_;
        const int want = e == 'x' ? 2 : braces ? 8 : 4;
        uint32_t v = 0;
        int n = 0;
        for (; n < want && !AtEnd(); ++n) {
          const uint32_t h = Peek();
          int d = -1;
          if (h >= '0' && h <= '9') d = int(h - '0');
          if (h >= 'a' && h <= 'f') d = int(h - 'a' + 10);
          if (h >= 'A' && h <= 'F') d = int(h - 'A' + 10);
          if (d < 0) break;
          v = v * 16 + uint32_t(d);
          ++pos_;
        }
        if (braces ? (n == 0 || AtEnd() || Peek() != '}') : n != want) {
          return Fail(at, std::string("malformed \\") + char(e) + " escape"), false;
        }
        if (braces) ++pos_;
        if (v > kMaxCodepoint) return Fail(at, "escape beyond U+10FFFF"), false;
        *cp = v;
        return true;
      }
      default:
        if (e >= '1' && e <= '9') return Fail(at, "backreferences are not supported"), false;
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
          return Fail(at, std::string("unknown escape \\") + char(e)), false;
        }
        *cp = e;  // escaped punctuation (or any other character) stands for itself
        return true;
    }
  }

  std::string ParseClass() {
    const size_t at = pos_ - 1;
    bool negated = false;
    if (!AtEnd() && Peek() == '^') {
      negated = true;
      ++pos_;
    }
    Ranges ranges;
    bool first = true;
    while (true) {
      if (AtEnd()) return Fail(at, "unterminated character class"), "";
      if (Peek() == ']' && !first) break;
      first = false;
      uint32_t lo = cps_[pos_++];
      if (lo == '\\') {
        Ranges set;
        bool set_negated;
        if (!ParseEscape(true, &set, &set_negated, &lo)) return "";
        if (!set.empty()) {
          for (const CodepointRange& r : NormalizeRanges(set, set_negated)) ranges.push_back(r);
          continue;
        }
      }
      uint32_t hi = lo;
      if (Peek() == '-' && pos_ + 1 < end_ && cps_[pos_ + 1] != ']') {
        ++pos_;
        hi = cps_[pos_++];
        if (hi == '\\') {
          Ranges set;
          bool set_negated;
          if (!ParseEscape(true, &set, &set_negated, &hi)) return "";
          if (!set.empty()) return Fail(at, "a class escape cannot end a range"), "";
        }
        if (hi < lo) return Fail(at, "character range out of order"), "";
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;  // ']'
    return SetExpr(ranges, negated);
  }

  // A parenthesised group, pos_ just after '('.
  Item ParseGroup() {
    const size_t at = pos_ - 1;
    if (Peek() == '?') {
      if (Peek(1) == ':') {
        pos_ += 2;
      } else if (Peek(1) == '<' && Peek(2) != '=' && Peek(2) != '!') {
        while (!AtEnd() && Peek() != '>') ++pos_;
        ++pos_;
      } else if (Peek(1) == 'P' && Peek(2) == '<') {
        while (!AtEnd() && Peek() != '>') ++pos_;
        ++pos_;
      } else {
        return Fail(at, "lookaround and other (?...) groups are not supported"), Item{};
      }
    }
    if (nesting_ == kMaxRegexNesting) {
      return Fail(at, "groups nested more than " + std::to_string(kMaxRegexNesting) + " deep"), Item{};
    }
    ++nesting_;
    Item inner = ParseAlternation();
    --nesting_;
    if (!error_.ok()) return Item{};
    if (AtEnd() || Peek() != ')') return Fail(at, "unbalanced '('"), Item{};
    ++pos_;
    return inner;
  }

  Item ParseAtom() {
    if (cps_[pos_] == '(') {
      ++pos_;
      return ParseGroup();
    }
    return Item{ParseSimpleAtom()};
  }

  std::string ParseSimpleAtom() {
    const size_t at = pos_;
    const uint32_t c = cps_[pos_++];
    switch (c) {
      case '[':
        return ParseClass();
      case '.':
        return SetExpr(kLineTerminators, /*negated=*/true);
      case '\\': {
        Ranges set;
        bool negated;
        uint32_t cp = 0;
        if (!ParseEscape(false, &set, &negated, &cp)) return "";
        return set.empty() ? Literal(cp) : SetExpr(set, negated);
      }
      case '^':
      case '$':
        return Fail(at, "anchors (^, $) are only supported at the ends of the pattern"), "";
      case '*':
      case '+':
      case '?':
        return Fail(at, std::string("'") + char(c) + "' has nothing to repeat"), "";
      default:
        return Literal(c);
    }
  }

  std::vector<uint32_t> cps_;
  bool json_;
  size_t pos_ = 0;
  size_t end_ = 0;
  int nesting_ = 0;  // groups open at pos_
  std::set<uint32_t> escaped_;
  Status error_;
};

}  // namespace

Result<std::string> RegexToGbnf(std::string_view pattern, bool json_string,
                                const std::set<uint32_t>& escaped) {
  if (size_t bad = utf8::FindInvalid(pattern); bad != std::string_view::npos) {
    return InvalidArgument("regex has invalid UTF-8 at byte " + std::to_string(bad));
  }
  std::vector<uint32_t> cps;
  for (size_t p = 0; p < pattern.size();) cps.push_back(utf8::DecodeAt(pattern, &p));
  return RegexParser(std::move(cps), json_string, escaped).Parse();
}

}  // namespace lockstep::grammar
