// GBNF grammars used by several grammar tests (written for these tests).
#pragma once

namespace lockstep::grammar::testing {

inline constexpr char kArithmeticGbnf[] = R"gbnf(# integer arithmetic
root   ::= expr
expr   ::= term (ws ("+" | "-") ws term)*
term   ::= factor (ws ("*" | "/") ws factor)*
factor ::= number | "(" ws expr ws ")"
number ::= "-"? [0-9]+
ws     ::= [ ]*
)gbnf";

inline constexpr char kJsonGbnf[] = R"gbnf(root   ::= value
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]*
)gbnf";

inline constexpr char kListGbnf[] = R"gbnf(root ::= ("- " item "\n")+
item ::= [^\n]+
)gbnf";

}  // namespace lockstep::grammar::testing
