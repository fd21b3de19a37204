#include "jinja/lexer.h"

#include <algorithm>
#include <cctype>

namespace lockstep::jinja {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class Lexer {
 public:
  explicit Lexer(const std::string& src) : src_(src) {}

  Result<std::vector<Token>> Run() {
    bool line_starting = true;
    std::string text;
    while (pos_ < src_.size()) {
      const size_t open = FindTagOpen(pos_);
      text.append(src_, pos_, open - pos_);
      pos_ = open;
      if (open >= src_.size()) break;
      const char type = src_[open + 1];  // '{', '%' or '#'
      const char marker = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (marker == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      } else if (marker != '+' && type != '{') {
        LstripLine(text, line_starting);
      }
      Flush(text);
      pos_ = open + 2 + ((marker == '-' || marker == '+') ? 1 : 0);
      if (type == '#') {
        const size_t close = src_.find("#}", pos_);
        if (close == std::string::npos) return Fail("unterminated comment");
        const bool strip = close > pos_ && src_[close - 1] == '-';
        const bool keep = close > pos_ && src_[close - 1] == '+';
        line_ += CountLines(pos_, close);
        pos_ = close + 2;
        line_starting = AfterTag(strip, keep);
        continue;
      }
      tokens_.push_back({type == '{' ? Token::Kind::kVarBegin : Token::Kind::kBlockBegin, "", line_});
      Status status = LexInside(type == '{' ? '}' : '%');
      if (!status.ok()) return status;
      line_starting = last_tag_line_starting_;
    }
    Flush(text);
    tokens_.push_back({Token::Kind::kEnd, "", line_});
    return std::move(tokens_);
  }

 private:
  Status Fail(const std::string& what) const {
    return InvalidArgument("chat template line " + std::to_string(line_) + ": " + what);
  }

  size_t FindTagOpen(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  int CountLines(size_t from, size_t to) const {
    int n = 0;
    for (size_t i = from; i < to && i < src_.size(); ++i) n += src_[i] == '\n';
    return n;
  }

  // lstrip_blocks: spaces and tabs between the start of a line and a block tag are removed.
  static void LstripLine(std::string& text, bool line_starting) {
    const size_t nl = text.rfind('\n');
    const size_t line_start = nl == std::string::npos ? 0 : nl + 1;
    if (nl == std::string::npos && !line_starting) return;
    for (size_t i = line_start; i < text.size(); ++i) {
      if (text[i] != ' ' && text[i] != '\t') return;
    }
    text.resize(line_start);
  }

  void Flush(std::string& text) {
    if (!text.empty()) {
      tokens_.push_back({Token::Kind::kText, text, line_});
      line_ += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    }
    text.clear();
  }

  // After a block or comment tag: `-` strips all following whitespace; otherwise trim_blocks removes one
  // newline. Returns whether the next text starts a line (for lstrip_blocks).
  bool AfterTag(bool strip, bool keep) {
    bool line_starting = false;
    if (strip) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) {
        line_starting = src_[pos_] == '\n';
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
    } else if (!keep && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
      line_starting = true;
    } else if (!keep && pos_ + 1 < src_.size() && src_[pos_] == '\r' && src_[pos_ + 1] == '\n') {
      pos_ += 2;
      ++line_;
      line_starting = true;
    }
    return line_starting;
  }

  Status LexInside(char close) {
    int depth = 0;
    while (true) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) line_ += src_[pos_++] == '\n';
      if (pos_ >= src_.size()) return Fail(std::string("unterminated tag (missing '") + close + "}')");
      const char c = src_[pos_];
      // The closing delimiter, with an optional whitespace-control marker before it.
      for (int m = 0; m < 2; ++m) {
        const size_t at = pos_ + m;
        const bool marker = m == 1 && (c == '-' || c == '+');
        if ((m == 0 || marker) && depth == 0 && at + 1 < src_.size() && src_[at] == close &&
            src_[at + 1] == '}') {
          pos_ = at + 2;
          tokens_.push_back({close == '}' ? Token::Kind::kVarEnd : Token::Kind::kBlockEnd, "", line_});
          if (close == '%') {
            last_tag_line_starting_ = AfterTag(marker && c == '-', marker && c == '+');
          } else {
            last_tag_line_starting_ = marker && c == '-' ? AfterTag(true, false) : false;
          }
          return Status::Ok();
        }
      }
      if (c == '\'' || c == '"') {
        LOCKSTEP_RETURN_IF_ERROR(LexString(c));
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        LexNumber();
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        const size_t start = pos_;
        while (pos_ < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
          ++pos_;
        }
        tokens_.push_back({Token::Kind::kName, src_.substr(start, pos_ - start), line_});
      } else {
        static const char* kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                     ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|"};
        bool found = false;
        for (const char* op : kOps) {
          const size_t n = std::char_traits<char>::length(op);
          if (src_.compare(pos_, n, op) == 0) {
            if (op[0] == '{' || op[0] == '(' || op[0] == '[') ++depth;
            if ((op[0] == '}' || op[0] == ')' || op[0] == ']') && depth > 0) --depth;
            tokens_.push_back({Token::Kind::kOp, op, line_});
            pos_ += n;
            found = true;
            break;
          }
        }
        if (!found) return Fail(std::string("unexpected character '") + c + "'");
      }
    }
  }

  Status LexString(char quote) {
    std::string value;
    ++pos_;
    while (pos_ < src_.size() && src_[pos_] != quote) {
      char c = src_[pos_++];
      if (c == '\n') ++line_;
      if (c == '\\' && pos_ < src_.size()) {
        const char e = src_[pos_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case '0':
            c = '\0';
            break;
          case '\\':
          case '\'':
          case '"':
            c = e;
            break;
          default:
            value += '\\';
            c = e;
        }
      }
      value += c;
    }
    if (pos_ >= src_.size()) return Fail("unterminated string literal");
    ++pos_;
    tokens_.push_back({Token::Kind::kString, std::move(value), line_});
    return Status::Ok();
  }

  void LexNumber() {
    const size_t start = pos_;
    bool is_float = false;
    while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_'))
      ++pos_;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
      is_float = true;
      ++pos_;
      while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) ++pos_;
    }
    std::string text = src_.substr(start, pos_ - start);
    std::erase(text, '_');
    tokens_.push_back({is_float ? Token::Kind::kFloat : Token::Kind::kInt, text, line_});
  }

  const std::string& src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool last_tag_line_starting_ = false;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<Token>> Lex(const std::string& source) { return Lexer(source).Run(); }

}  // namespace lockstep::jinja
