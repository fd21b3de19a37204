// Recursive-descent parser for the Jinja subset (see jinja/ast.h). Operator precedence follows Jinja2:
// ternary < or < and < not < comparisons/in < + - < ~ < * / // % < ** < unary < filters/tests < postfix.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <set>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace lockstep::jinja {
namespace {

// The deepest nesting a source may have: parentheses, lists and call arguments inside each other, `not` and
// unary signs in a row, operator, filter and attribute chains (each link is a level of the tree), blocks
// inside blocks. Every pass over the tree (this parser, rendering, freeing it) recurses once per level, so a
// deeper source (from a model file or a flag) is refused with an error instead of exhausting the stack.
// Real chat templates stay under ~20.
constexpr int kMaxNesting = 256;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  std::shared_ptr<const Template> Run() {
    auto tmpl = std::make_shared<Template>();
    std::string end_tag;
    tmpl->body = ParseBody({}, &end_tag);
    return tmpl;
  }

 private:
  const Token& Peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& Next() { return tokens_[std::min(pos_++, tokens_.size() - 1)]; }
  [[noreturn]] void Fail(const std::string& what) const {
    throw Error("chat template line " + std::to_string(Peek().line) + ": " + what);
  }
  [[noreturn]] void FailTooDeep() const {
    Fail("nested deeper than " + std::to_string(kMaxNesting) + " levels");
  }

  // Counts one level of the parser's own recursion while alive.
  class NestingGuard {
   public:
    explicit NestingGuard(Parser& parser) : parser_(parser) {
      if (++parser_.nesting_ > kMaxNesting) parser_.FailTooDeep();
    }
    ~NestingGuard() { --parser_.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    Parser& parser_;
  };

  // Appends `child` to `parent`'s operands, keeping the tree within kMaxNesting levels.
  void Adopt(Expr& parent, ExprPtr child) {
    parent.height = std::max(parent.height, child->height + 1);
    if (parent.height > kMaxNesting) FailTooDeep();
    parent.args.push_back(std::move(child));
  }

  // An integer literal's value; one past int64 fails with a clear error (Python's would be a big integer).
  int64_t IntLiteral(const std::string& text) const {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) {
      Fail("integer literal " + text.substr(0, 40) + (text.size() > 40 ? "..." : "") +
           " does not fit in 64 bits");
    }
    return v;
  }
  bool IsOp(const char* op, size_t ahead = 0) const {
    return Peek(ahead).kind == Token::Kind::kOp && Peek(ahead).text == op;
  }
  bool IsName(const char* name, size_t ahead = 0) const {
    return Peek(ahead).kind == Token::Kind::kName && Peek(ahead).text == name;
  }
  void ExpectOp(const char* op) {
    if (!IsOp(op)) Fail(std::string("expected '") + op + "', found '" + Peek().text + "'");
    ++pos_;
  }
  std::string ExpectName() {
    if (Peek().kind != Token::Kind::kName) Fail("expected a name, found '" + Peek().text + "'");
    return Next().text;
  }
  void ExpectBlockEnd() {
    if (Peek().kind != Token::Kind::kBlockEnd) Fail("expected '%}', found '" + Peek().text + "'");
    ++pos_;
  }

  // Parses nodes until a block tag whose keyword is in `ends` (consumed up to the keyword; stored in
  // *end_tag).
  NodeList ParseBody(const std::set<std::string>& ends, std::string* end_tag) {
    NodeList body;
    while (true) {
      const Token& t = Peek();
      if (t.kind == Token::Kind::kEnd) {
        if (!ends.empty()) Fail("unexpected end of template (missing {% " + *ends.begin() + " %})");
        return body;
      }
      if (t.kind == Token::Kind::kText) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kText;
        node->text = Next().text;
        body.push_back(std::move(node));
      } else if (t.kind == Token::Kind::kVarBegin) {
        ++pos_;
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kOutput;
        node->line = t.line;
        node->expr = ParseExpr();
        if (Peek().kind != Token::Kind::kVarEnd) Fail("expected '}}', found '" + Peek().text + "'");
        ++pos_;
        body.push_back(std::move(node));
      } else if (t.kind == Token::Kind::kBlockBegin) {
        ++pos_;
        const std::string keyword = Peek().text;
        if (ends.count(keyword)) {
          ++pos_;
          *end_tag = keyword;
          return body;
        }
        body.push_back(ParseStatement());
      } else {
        Fail("unexpected '" + t.text + "'");
      }
    }
  }

  std::unique_ptr<Node> ParseStatement() {
    const NestingGuard guard(*this);
    auto node = std::make_unique<Node>();
    node->line = Peek().line;
    const std::string keyword = ExpectName();
    std::string end;
    if (keyword == "if") {
      node->kind = Node::Kind::kIf;
      node->conditions.push_back(ParseExpr());
      ExpectBlockEnd();
      while (true) {
        node->bodies.push_back(ParseBody({"elif", "else", "endif"}, &end));
        if (end == "elif") {
          node->conditions.push_back(ParseExpr());
          ExpectBlockEnd();
        } else if (end == "else") {
          ExpectBlockEnd();
          node->bodies.push_back(ParseBody({"endif"}, &end));
          ExpectBlockEnd();
          break;
        } else {
          ExpectBlockEnd();
          break;
        }
      }
    } else if (keyword == "for") {
      node->kind = Node::Kind::kFor;
      node->targets.push_back(ExpectName());
      while (IsOp(",")) {
        ++pos_;
        node->targets.push_back(ExpectName());
      }
      if (!IsName("in")) Fail("expected 'in' in for loop");
      ++pos_;
      node->expr = ParseTernaryFree();
      if (IsName("if")) {
        ++pos_;
        node->filter = ParseTernaryFree();
      }
      if (IsName("recursive")) Fail("recursive loops are not supported");
      ExpectBlockEnd();
      node->bodies.push_back(ParseBody({"else", "endfor"}, &end));
      ExpectBlockEnd();
      if (end == "else") {
        node->bodies.push_back(ParseBody({"endfor"}, &end));
        ExpectBlockEnd();
      }
    } else if (keyword == "set") {
      node->targets.push_back(ExpectName());
      if (IsOp(".")) {
        ++pos_;
        node->targets.push_back(ExpectName());
      }
      if (IsOp("=")) {
        ++pos_;
        node->kind = Node::Kind::kSet;
        node->expr = ParseExpr();
        ExpectBlockEnd();
      } else {
        node->kind = Node::Kind::kSetBlock;
        ExpectBlockEnd();
        node->bodies.push_back(ParseBody({"endset"}, &end));
        ExpectBlockEnd();
      }
    } else if (keyword == "macro") {
      node->kind = Node::Kind::kMacro;
      node->targets.push_back(ExpectName());
      ExpectOp("(");
      while (!IsOp(")")) {
        node->targets.push_back(ExpectName());
        if (IsOp("=")) {
          ++pos_;
          node->defaults.push_back(ParseExpr());
        } else if (!node->defaults.empty()) {
          Fail("macro parameter without a default after one with a default");
        }
        if (!IsOp(")")) ExpectOp(",");
      }
      ++pos_;
      ExpectBlockEnd();
      node->bodies.push_back(ParseBody({"endmacro"}, &end));
      ExpectBlockEnd();
    } else if (keyword == "break" || keyword == "continue") {
      node->kind = keyword == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
      ExpectBlockEnd();
    } else if (keyword == "filter") {  // {% filter trim %}...{% endfilter %}: the body's text through filters
      node->kind = Node::Kind::kFilterBlock;
      ExprPtr chain = Make(Expr::Kind::kLiteral, node->line);  // undefined: the body at render time
      do {
        if (chain->kind == Expr::Kind::kFilter) ++pos_;  // the '|' before the next filter
        auto e = Make(Expr::Kind::kFilter, node->line);
        e->name = ExpectName();
        Adopt(*e, std::move(chain));
        if (IsOp("(")) {
          ++pos_;
          ParseCallArgs(e.get());
        }
        chain = std::move(e);
      } while (IsOp("|"));
      node->expr = std::move(chain);
      ExpectBlockEnd();
      node->bodies.push_back(ParseBody({"endfilter"}, &end));
      ExpectBlockEnd();
    } else if (keyword == "generation") {  // Hugging Face's assistant-mask marker: renders its body
      node->kind = Node::Kind::kBlock;
      ExpectBlockEnd();
      node->bodies.push_back(ParseBody({"endgeneration"}, &end));
      ExpectBlockEnd();
    } else {
      Fail("unsupported statement '" + keyword + "'");
    }
    return node;
  }

  ExprPtr Make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  ExprPtr MakeBinary(Expr::Kind kind, std::string op, ExprPtr a, ExprPtr b) {
    auto e = Make(kind, a->line);
    e->name = std::move(op);
    Adopt(*e, std::move(a));
    Adopt(*e, std::move(b));
    return e;
  }

  ExprPtr ParseExpr() {
    const NestingGuard guard(*this);
    ExprPtr value = ParseOr();
    if (IsName("if")) {
      ++pos_;
      auto e = Make(Expr::Kind::kTernary, value->line);
      ExprPtr cond = ParseOr();
      ExprPtr other;
      if (IsName("else")) {
        ++pos_;
        other = ParseExpr();
      } else {
        other = Make(Expr::Kind::kLiteral, value->line);  // undefined
      }
      Adopt(*e, std::move(cond));
      Adopt(*e, std::move(value));
      Adopt(*e, std::move(other));
      return e;
    }
    return value;
  }
  // For loops: `for x in xs if cond` must not read `if` as a ternary.
  ExprPtr ParseTernaryFree() { return ParseOr(); }

  ExprPtr ParseOr() {
    ExprPtr left = ParseAnd();
    while (IsName("or")) {
      ++pos_;
      left = MakeBinary(Expr::Kind::kOr, "or", std::move(left), ParseAnd());
    }
    return left;
  }
  ExprPtr ParseAnd() {
    ExprPtr left = ParseNot();
    while (IsName("and")) {
      ++pos_;
      left = MakeBinary(Expr::Kind::kAnd, "and", std::move(left), ParseNot());
    }
    return left;
  }
  ExprPtr ParseNot() {
    if (IsName("not")) {
      const NestingGuard guard(*this);
      const int line = Next().line;
      auto e = Make(Expr::Kind::kNot, line);
      Adopt(*e, ParseNot());
      return e;
    }
    return ParseCompare();
  }
  ExprPtr ParseCompare() {
    ExprPtr left = ParseAdd();
    while (true) {
      std::string op;
      if (Peek().kind == Token::Kind::kOp &&
          (IsOp("==") || IsOp("!=") || IsOp("<") || IsOp(">") || IsOp("<=") || IsOp(">="))) {
        op = Next().text;
      } else if (IsName("in")) {
        ++pos_;
        op = "in";
      } else if (IsName("not") && IsName("in", 1)) {
        pos_ += 2;
        op = "not in";
      } else {
        return left;
      }
      left = MakeBinary(Expr::Kind::kBinary, op, std::move(left), ParseAdd());
    }
  }
  ExprPtr ParseAdd() {
    ExprPtr left = ParseConcat();
    while (IsOp("+") || IsOp("-")) {
      const std::string op = Next().text;
      left = MakeBinary(Expr::Kind::kBinary, op, std::move(left), ParseConcat());
    }
    return left;
  }
  ExprPtr ParseConcat() {
    ExprPtr left = ParseMul();
    while (IsOp("~")) {
      ++pos_;
      left = MakeBinary(Expr::Kind::kBinary, "~", std::move(left), ParseMul());
    }
    return left;
  }
  ExprPtr ParseMul() {
    ExprPtr left = ParsePow();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const std::string op = Next().text;
      left = MakeBinary(Expr::Kind::kBinary, op, std::move(left), ParsePow());
    }
    return left;
  }
  ExprPtr ParsePow() {
    ExprPtr left = ParseUnary();
    while (IsOp("**")) {
      ++pos_;
      left = MakeBinary(Expr::Kind::kBinary, "**", std::move(left), ParseUnary());
    }
    return left;
  }
  ExprPtr ParseUnary() {
    if (IsOp("-") || IsOp("+")) {
      const NestingGuard guard(*this);
      const Token& t = Next();
      auto e = Make(Expr::Kind::kUnary, t.line);
      e->name = t.text;
      Adopt(*e, ParseUnary());
      return e;
    }
    return ParseFilters(ParsePostfix(ParsePrimary()));
  }

  // Call arguments after '(' up to and including ')': positionals into e->args, then keywords.
  void ParseCallArgs(Expr* e) {
    std::vector<ExprPtr> keyword_values;
    while (!IsOp(")")) {
      if (Peek().kind == Token::Kind::kName && IsOp("=", 1)) {
        e->kwarg_names.push_back(Next().text);
        ++pos_;
        keyword_values.push_back(ParseExpr());
      } else {
        if (!keyword_values.empty()) Fail("positional argument after a keyword argument");
        Adopt(*e, ParseExpr());
      }
      if (!IsOp(")")) ExpectOp(",");
    }
    ++pos_;
    for (auto& v : keyword_values) Adopt(*e, std::move(v));
  }

  ExprPtr ParseFilters(ExprPtr value) {
    while (true) {
      if (IsOp("|")) {
        ++pos_;
        auto e = Make(Expr::Kind::kFilter, Peek().line);
        e->name = ExpectName();
        Adopt(*e, std::move(value));
        if (IsOp("(")) {
          ++pos_;
          ParseCallArgs(e.get());
        }
        value = std::move(e);
      } else if (IsName("is")) {
        ++pos_;
        auto e = Make(Expr::Kind::kTest, Peek().line);
        if (IsName("not")) {
          ++pos_;
          e->negated = true;
        }
        e->name = ExpectName();
        Adopt(*e, std::move(value));
        if (IsOp("(")) {
          ++pos_;
          ParseCallArgs(e.get());
        } else if (Peek().kind == Token::Kind::kString || Peek().kind == Token::Kind::kInt ||
                   Peek().kind == Token::Kind::kFloat ||
                   (Peek().kind == Token::Kind::kName && !IsName("and") && !IsName("or") && !IsName("else") &&
                    !IsName("if") && !IsName("in") && !IsName("not") && !IsName("is"))) {
          Adopt(*e, ParsePostfix(ParsePrimary()));  // `x is divisibleby 3`, `x is sameas none`
        }
        value = std::move(e);
      } else {
        return value;
      }
    }
  }

  ExprPtr ParsePostfix(ExprPtr value) {
    while (true) {
      if (IsOp(".")) {
        ++pos_;
        auto e = Make(Expr::Kind::kAttr, value->line);
        if (Peek().kind == Token::Kind::kInt) {
          e->kind = Expr::Kind::kItem;
          auto index = Make(Expr::Kind::kLiteral, value->line);
          index->literal = Value(IntLiteral(Next().text));
          Adopt(*e, std::move(value));
          Adopt(*e, std::move(index));
        } else {
          e->name = ExpectName();
          Adopt(*e, std::move(value));
        }
        value = std::move(e);
      } else if (IsOp("[")) {
        ++pos_;
        value = ParseSubscript(std::move(value));
      } else if (IsOp("(")) {
        ++pos_;
        auto e = Make(Expr::Kind::kCall, value->line);
        Adopt(*e, std::move(value));
        ParseCallArgs(e.get());
        value = std::move(e);
      } else {
        return value;
      }
    }
  }

  ExprPtr ParseSubscript(ExprPtr value) {
    ExprPtr parts[3];
    int colons = 0;
    while (!IsOp("]")) {
      if (IsOp(":")) {
        ++pos_;
        if (++colons > 2) Fail("too many ':' in slice");
        continue;
      }
      if (parts[colons]) Fail("expected ':' or ']' in subscript");
      parts[colons] = ParseExpr();
    }
    ++pos_;
    auto e = Make(colons == 0 ? Expr::Kind::kItem : Expr::Kind::kSlice, value->line);
    Adopt(*e, std::move(value));
    if (colons == 0) {
      if (!parts[0]) Fail("empty subscript");
      Adopt(*e, std::move(parts[0]));
    } else {
      for (auto& p : parts) Adopt(*e, p ? std::move(p) : Make(Expr::Kind::kLiteral, e->line));
    }
    return e;
  }

  ExprPtr ParsePrimary() {
    const Token& t = Next();
    auto e = Make(Expr::Kind::kLiteral, t.line);
    switch (t.kind) {
      case Token::Kind::kString: {
        std::string s = t.text;
        while (Peek().kind == Token::Kind::kString) s += Next().text;  // adjacent literals concatenate
        e->literal = Value(std::move(s));
        return e;
      }
      case Token::Kind::kInt:
        e->literal = Value(IntLiteral(t.text));
        return e;
      case Token::Kind::kFloat:
        e->literal = Value(std::strtod(t.text.c_str(), nullptr));  // past double: inf, as in Python
        return e;
      case Token::Kind::kName:
        if (t.text == "true" || t.text == "True") {
          e->literal = Value(true);
        } else if (t.text == "false" || t.text == "False") {
          e->literal = Value(false);
        } else if (t.text == "none" || t.text == "None") {
          e->literal = Value::None();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        return e;
      case Token::Kind::kOp:
        if (t.text == "(") {
          ExprPtr inner = ParseExpr();
          if (IsOp(",")) {  // tuple → list
            e->kind = Expr::Kind::kList;
            Adopt(*e, std::move(inner));
            while (IsOp(",")) {
              ++pos_;
              if (IsOp(")")) break;
              Adopt(*e, ParseExpr());
            }
            ExpectOp(")");
            return e;
          }
          ExpectOp(")");
          return inner;
        }
        if (t.text == "[") {
          e->kind = Expr::Kind::kList;
          while (!IsOp("]")) {
            Adopt(*e, ParseExpr());
            if (!IsOp("]")) ExpectOp(",");
          }
          ++pos_;
          return e;
        }
        if (t.text == "{") {
          e->kind = Expr::Kind::kDict;
          while (!IsOp("}")) {
            Adopt(*e, ParseExpr());
            ExpectOp(":");
            Adopt(*e, ParseExpr());
            if (!IsOp("}")) ExpectOp(",");
          }
          ++pos_;
          return e;
        }
        break;
      default:
        break;
    }
    --pos_;
    Fail("unexpected '" + (t.text.empty() ? std::string("end of tag") : t.text) + "' in expression");
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int nesting_ = 0;  // live NestingGuards
};

}  // namespace

Result<std::shared_ptr<const Template>> Parse(const std::string& source) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(source));
  try {
    return Parser(std::move(tokens)).Run();
  } catch (const Error& e) {
    return InvalidArgument(e.what());
  }
}

}  // namespace lockstep::jinja
