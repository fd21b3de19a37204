// GBNF text -> Grammar: a recursive-descent parser (syntax in grammar/grammar.h). Hand-written: no Debian
// library parses llama.cpp's grammar dialect.
#include <algorithm>
#include <unordered_map>

#include "base/excerpt.h"
#include "grammar/grammar.h"
#include "tokenizer/utf8.h"

namespace lockstep::grammar {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  explicit Parser(std::string_view text) : src_(text) {}

  Result<Grammar> Parse(std::string_view root_name) {
    if (size_t bad = utf8::FindInvalid(src_); bad != std::string_view::npos) {
      Fail(bad, "invalid UTF-8");
      return error_;
    }
    SkipSpace(true);
    while (ok() && pos_ < src_.size()) ParseRule();
    if (!ok()) return error_;
    for (uint32_t r = 0; r < rules_.size(); ++r) {
      if (!defined_[r]) {
        Fail(first_use_[r], "undefined rule '" + Excerpt(rules_[r].name) + "'");
        return error_;
      }
    }
    auto root = ids_.find(std::string(root_name));
    if (root == ids_.end()) {
      return InvalidArgument("grammar has no '" + std::string(root_name) + "' rule (the start rule)");
    }
    Grammar g;
    g.rules = std::move(rules_);
    g.root = root->second;
    return g;
  }

 private:
  bool ok() const { return error_.ok(); }
  bool AtEnd() const { return pos_ >= src_.size(); }
  char Peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }

  void Fail(size_t offset, const std::string& message) {
    if (!ok()) return;
    int line = 1, column = 1;
    for (size_t i = 0; i < offset && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<unsigned char>(src_[i]) & 0xC0) != 0x80) {
        ++column;
      }
    }
    error_ = InvalidArgument("grammar line " + std::to_string(line) + ", column " + std::to_string(column) +
                             ": " + message);
  }

  // What is at pos_, for messages: "end of input", "end of line" or the character.
  std::string Found() const {
    if (AtEnd()) return "end of input";
    if (Peek() == '\n' || Peek() == '\r') return "end of line";
    size_t p = pos_;
    std::string c;
    utf8::Append(utf8::DecodeAt(src_, &p), &c);
    return "'" + c + "'";
  }

  void SkipSpace(bool newline_ok) {
    while (!AtEnd()) {
      const char c = Peek();
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!AtEnd() && Peek() != '\n' && Peek() != '\r') ++pos_;
      } else {
        break;
      }
    }
  }

  uint32_t RuleId(const std::string& name, size_t use_offset) {
    auto [it, inserted] = ids_.try_emplace(name, uint32_t(rules_.size()));
    if (inserted) {
      rules_.push_back(Rule{name, {}});
      defined_.push_back(false);
      first_use_.push_back(use_offset);
    }
    return it->second;
  }

  uint32_t NewRule(uint32_t base) {
    const std::string name = rules_[base].name + "_" + std::to_string(rules_.size());
    const uint32_t id = RuleId(name, pos_);
    defined_[id] = true;
    return id;
  }

  bool CountSymbols(size_t n) {
    symbols_ += n;
    if (symbols_ > kMaxGrammarSymbols) {
      Fail(pos_, "grammar too large (more than " + std::to_string(kMaxGrammarSymbols) + " symbols)");
      return false;
    }
    return true;
  }

  void ParseRule() {
    const size_t start = pos_;
    std::string name;
    while (!AtEnd() && IsNameChar(Peek())) name += src_[pos_++];
    if (name.empty()) return Fail(pos_, "expected a rule name, found " + Found());
    SkipSpace(false);
    if (src_.substr(pos_, 3) != "::=") {
      return Fail(pos_, "expected '::=' after rule name '" + Excerpt(name) + "', found " + Found());
    }
    pos_ += 3;
    const uint32_t id = RuleId(name, start);
    if (defined_[id]) return Fail(start, "rule '" + Excerpt(name) + "' is defined twice");
    defined_[id] = true;
    SkipSpace(true);
    std::vector<Sequence> alternatives = ParseAlternatives(id, /*nested=*/false);
    if (!ok()) return;
    rules_[id].alternatives = std::move(alternatives);
    if (!AtEnd() && Peek() != '\n' && Peek() != '\r') {
      return Fail(pos_, "expected the end of rule '" + Excerpt(name) + "', found " + Found());
    }
    SkipSpace(true);
  }

  std::vector<Sequence> ParseAlternatives(uint32_t rule, bool nested) {
    std::vector<Sequence> alternatives;
    alternatives.push_back(ParseSequence(rule, nested));
    while (ok() && Peek() == '|') {
      ++pos_;
      SkipSpace(true);
      alternatives.push_back(ParseSequence(rule, nested));
    }
    return alternatives;
  }

  // One character of a literal or class at pos_ (an escape or a UTF-8 code point).
  bool ParseChar(uint32_t* out) {
    if (AtEnd()) {
      Fail(pos_, "unexpected end of input");
      return false;
    }
    if (Peek() != '\\') {
      *out = utf8::DecodeAt(src_, &pos_);
      return true;
    }
    const size_t start = pos_;
    const char e = Peek(1);
    pos_ += 2;
    int hex = 0;
    switch (e) {
      case 'x':
        hex = 2;
        break;
      case 'u':
        hex = 4;
        break;
      case 'U':
        hex = 8;
        break;
      case 't':
        *out = '\t';
        return true;
      case 'r':
        *out = '\r';
        return true;
      case 'n':
        *out = '\n';
        return true;
      case '\\':
      case '"':
      case '[':
      case ']':
        *out = uint32_t(e);
        return true;
      default:
        Fail(start, "unknown escape '\\" + std::string(e ? 1 : 0, e) + "'");
        return false;
    }
    uint32_t value = 0;
    for (int i = 0; i < hex; ++i) {
      const char c = Peek();
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0) {
        Fail(start, "expected " + std::to_string(hex) + " hex digits after '\\" + std::string(1, e) + "'");
        return false;
      }
      value = value * 16 + uint32_t(d);
      ++pos_;
    }
    if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
      Fail(start, "escape is not a Unicode scalar value");
      return false;
    }
    *out = value;
    return true;
  }

  bool ParseInt(int64_t* out) {
    if (!IsDigit(Peek())) {
      Fail(pos_, "expected an integer, found " + Found());
      return false;
    }
    int64_t v = 0;
    while (IsDigit(Peek())) {
      v = std::min<int64_t>(v * 10 + (Peek() - '0'), kMaxRepetition + 1);
      ++pos_;
    }
    *out = v;
    return true;
  }

  // Symbols [item_start, end) of `seq` repeated min..max times (max < 0: unbounded), expanded as llama.cpp
  // does: the required copies, then nested optional rules (x (x (x)?)?)? or a recursive x* rule.
  void Repeat(uint32_t rule, Sequence& seq, size_t item_start, int64_t min, int64_t max) {
    Sequence item(seq.begin() + item_start, seq.end());
    seq.resize(item_start);
    if (item.size() > 1) {
      const uint32_t r = NewRule(rule);
      rules_[r].alternatives = {std::move(item)};
      item = {Symbol::Ref(r)};
    }
    if (!CountSymbols(size_t(std::max<int64_t>(min, max)) + 2)) return;
    for (int64_t i = 0; i < min; ++i) seq.push_back(item[0]);
    if (max < 0) {
      const uint32_t r = NewRule(rule);
      rules_[r].alternatives = {{item[0], Symbol::Ref(r)}, {}};
      seq.push_back(Symbol::Ref(r));
      return;
    }
    uint32_t inner = UINT32_MAX;
    for (int64_t i = min; i < max; ++i) {
      const uint32_t r = NewRule(rule);
      Sequence first = {item[0]};
      if (inner != UINT32_MAX) first.push_back(Symbol::Ref(inner));
      rules_[r].alternatives = {std::move(first), {}};
      inner = r;
    }
    if (inner != UINT32_MAX) seq.push_back(Symbol::Ref(inner));
  }

  Sequence ParseSequence(uint32_t rule, bool nested) {
    Sequence seq;
    size_t item_start = SIZE_MAX;  // where the last item (a postfix operator's operand) begins in seq
    while (ok() && !AtEnd()) {
      const size_t here = pos_;
      const char c = Peek();
      if (c == '"') {
        ++pos_;
        item_start = seq.size();
        const size_t literal_start = seq.size();
        while (ok() && Peek() != '"') {
          if (AtEnd()) return Fail(here, "unterminated string literal"), seq;
          uint32_t cp;
          if (ParseChar(&cp)) seq.push_back(Symbol::Char(cp));
        }
        if (!ok()) return seq;
        if (seq.size() == item_start) item_start = SIZE_MAX;  // "" is nothing to repeat
        ++pos_;
        if (!CountSymbols(seq.size() - literal_start)) return seq;
      } else if (c == '[') {
        ++pos_;
        Symbol s;
        if (Peek() == '^') {
          s.negated = true;
          ++pos_;
        }
        while (ok() && Peek() != ']') {
          if (AtEnd()) return Fail(here, "unterminated character class"), seq;
          uint32_t first, last;
          if (!ParseChar(&first)) return seq;
          last = first;
          if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < src_.size()) {
            ++pos_;
            const size_t end_at = pos_;
            if (!ParseChar(&last)) return seq;
            if (last < first) return Fail(end_at, "character range ends before it starts"), seq;
          }
          s.ranges.push_back({first, last});
        }
        if (!ok()) return seq;
        ++pos_;
        item_start = seq.size();
        seq.push_back(std::move(s));
        if (!CountSymbols(1)) return seq;
      } else if (c == '.') {
        ++pos_;
        item_start = seq.size();
        seq.push_back(Symbol{Symbol::Kind::kChars, true, {}, 0});  // [^] : any code point
      } else if (IsNameChar(c)) {
        std::string name;
        while (!AtEnd() && IsNameChar(Peek())) name += src_[pos_++];
        item_start = seq.size();
        seq.push_back(Symbol::Ref(RuleId(name, here)));
        if (!CountSymbols(1)) return seq;
      } else if (c == '(') {
        if (nesting_ == kMaxGrammarNesting) {
          return Fail(here, "groups nested more than " + std::to_string(kMaxGrammarNesting) + " deep"), seq;
        }
        ++pos_;
        SkipSpace(true);
        const uint32_t group = NewRule(rule);
        ++nesting_;
        std::vector<Sequence> alternatives = ParseAlternatives(group, /*nested=*/true);
        --nesting_;
        if (!ok()) return seq;
        rules_[group].alternatives = std::move(alternatives);
        if (Peek() != ')')
          return Fail(pos_, "expected ')' to close the '(' opened earlier, found " + Found()), seq;
        ++pos_;
        item_start = seq.size();
        seq.push_back(Symbol::Ref(group));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (item_start == SIZE_MAX) {
          return Fail(here, std::string("'") + c + "' must follow a symbol, a string or a group"), seq;
        }
        ++pos_;
        int64_t min = 0, max = -1;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
        if (c == '{') {
          SkipSpace(nested);
          if (!ParseInt(&min)) return seq;
          SkipSpace(nested);
          max = min;
          if (Peek() == ',') {
            ++pos_;
            SkipSpace(nested);
            max = -1;
            if (IsDigit(Peek()) && !ParseInt(&max)) return seq;
            SkipSpace(nested);
          }
          if (Peek() != '}') return Fail(pos_, "expected '}' to close the repetition, found " + Found()), seq;
          ++pos_;
          if (min > kMaxRepetition || max > kMaxRepetition) {
            return Fail(here, "repetition bound above " + std::to_string(kMaxRepetition)), seq;
          }
          if (max >= 0 && max < min) return Fail(here, "repetition {m,n} with n < m"), seq;
        }
        Repeat(rule, seq, item_start, min, max);
        item_start = SIZE_MAX;
      } else {
        break;  // '|', ')', end of line, or something the caller reports
      }
      SkipSpace(nested);
    }
    if (ok() && !AtEnd() && Peek() != '|' && Peek() != '\n' && Peek() != '\r' && !(nested && Peek() == ')')) {
      Fail(pos_, "unexpected " + Found());
    }
    return seq;
  }

  std::string_view src_;
  size_t pos_ = 0;
  Status error_;
  std::vector<Rule> rules_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  std::unordered_map<std::string, uint32_t> ids_;
  size_t symbols_ = 0;
  int nesting_ = 0;  // groups open at pos_
};

}  // namespace

Result<Grammar> ParseGbnf(std::string_view text, std::string_view root) { return Parser(text).Parse(root); }

std::string GbnfClassChar(uint32_t c) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = "\\U";
  for (int shift = 28; shift >= 0; shift -= 4) out += hex[(c >> shift) & 15];
  return out;
}

std::string GbnfLiteral(std::string_view utf8) {
  std::string out = "\"";
  for (unsigned char c : utf8) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      static const char* hex = "0123456789ABCDEF";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

}  // namespace lockstep::grammar
