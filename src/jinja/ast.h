// Syntax tree of the Jinja subset used by chat templates, and the lexer/parser entry point.
// Parse() is pure (no shared state); the tree is immutable after parsing and may be rendered from many
// threads. Whitespace control follows Hugging Face's chat-template environment: trim_blocks and lstrip_blocks
// on, plus the explicit `-`/`+` markers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "jinja/value.h"

namespace lockstep::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,
    kName,
    kList,
    kDict,
    kUnary,
    kBinary,
    kAnd,
    kOr,
    kNot,
    kTernary,
    kAttr,
    kItem,
    kSlice,
    kCall,
    kFilter,
    kTest,
  };
  Kind kind;
  Value literal;     // kLiteral
  std::string name;  // kName, kAttr (attribute), kFilter / kTest (filter or test name), kUnary/kBinary op
  std::vector<ExprPtr>
      args;  // operands; kCall/kFilter/kTest: args[0] is the callee/subject, then positionals
  std::vector<std::string> kwarg_names;  // kCall/kFilter/kTest: names of the last kwarg_names.size() args
  bool negated = false;                  // kTest: `is not`
  int line = 0;
  int height = 1;  // 1 + the tallest operand's; the parser refuses trees taller than its nesting limit
};

struct Node;
using NodeList = std::vector<std::unique_ptr<Node>>;

struct Node {
  enum class Kind {
    kText,
    kOutput,
    kIf,
    kFor,
    kSet,
    kSetBlock,
    kMacro,
    kBreak,
    kContinue,
    kBlock,
    kFilterBlock
  };
  Kind kind;
  std::string text;  // kText
  // kOutput; kFor: iterable; kSet: value; kFilterBlock: the filters, each a kFilter whose args[0] is the one
  // before (the first's an undefined literal: the rendered body takes its place).
  ExprPtr expr;
  // kIf: conditions[i] guards bodies[i]; a trailing extra body is the else branch.
  std::vector<ExprPtr> conditions;
  std::vector<NodeList> bodies;  // kFor: bodies[0] loop body, bodies[1] (optional) else;
                                 // kMacro/kSetBlock/kBlock/kFilterBlock: [0]
  std::vector<std::string>
      targets;  // kFor: loop variables; kSet: [name] or [namespace, attribute]; kMacro: [name, params...]
  std::vector<ExprPtr> defaults;  // kMacro: defaults of the last defaults.size() params
  ExprPtr filter;                 // kFor: `for x in xs if cond`
  int line = 0;
};

struct Template {
  NodeList body;
};

// Parses template source. Errors carry the line number and what was expected. Sources nested deeper than
// 256 levels (expressions, operator chains, blocks) are refused: parsing, rendering and freeing a tree all
// recurse once per level.
Result<std::shared_ptr<const Template>> Parse(const std::string& source);

}  // namespace lockstep::jinja
