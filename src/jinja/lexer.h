// Lexer for the Jinja subset: splits template source into text and tag tokens, applying whitespace control
// (trim_blocks, lstrip_blocks, `-` and `+` markers) and dropping comments. Pure function; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace lockstep::jinja {

struct Token {
  enum class Kind {
    kText,
    kVarBegin,
    kVarEnd,
    kBlockBegin,
    kBlockEnd,
    kName,
    kString,
    kInt,
    kFloat,
    kOp,
    kEnd
  };
  Kind kind;
  std::string text;  // kText: the text; kName/kOp: the name or operator; kString: the unescaped value
  int line = 0;
};

Result<std::vector<Token>> Lex(const std::string& source);

}  // namespace lockstep::jinja
