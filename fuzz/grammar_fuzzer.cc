// Fuzzes the structured-output grammar compilers (src/grammar/): the first byte picks GBNF, a JSON schema or
// a regex; the rest up to a NUL byte is the source and what follows it is text fed to a matcher of the
// compiled grammar. Properties: any source compiles or is refused with a message (no crash, hang or
// unbounded memory); the matcher takes text byte by byte, a rejected byte leaves its state unchanged
// (grammar_matcher.h; past its work bound it refuses for good), and accepted bytes never lead to a state
// that is neither complete nor extensible.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "grammar/regex_to_gbnf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  fuzz::FuzzInput in(data, size);
  const int mode = in.Byte() % 3;
  const std::string_view rest = in.Rest();
  const size_t nul = rest.find('\0');
  const std::string_view source = rest.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
  std::string gbnf;
  if (mode == 0) {
    gbnf = std::string(source);
  } else if (mode == 1) {
    const auto schema = nlohmann::ordered_json::parse(source, nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) return 0;
    auto converted = grammar::JsonSchemaToGbnf(schema);
    if (!converted.ok()) {
      fuzz::Require(!converted.status().message().empty(), "a refused schema says why");
      return 0;
    }
    gbnf = *converted;
  } else {
    auto converted = grammar::RegexToGbnf(source, /*json_string=*/(size & 1) != 0);
    if (!converted.ok()) {
      fuzz::Require(!converted.status().message().empty(), "a refused regex says why");
      return 0;
    }
    gbnf = "root ::= " + *converted;
  }
  auto compiled = grammar::CompiledGrammar::FromGbnf(gbnf, "root", fuzz::kMaxCompiledSize);
  if (!compiled.ok()) {
    fuzz::Require(!compiled.status().message().empty(), "a refused grammar says why");
    return 0;
  }
  grammar::GrammarMatcher matcher(*compiled, fuzz::kMaxGrammarWork);
  bool took_any = false;
  for (size_t i = 0; i < text.size() && i < 256; ++i) {
    const bool could = matcher.CanContinue();
    const bool accepting = matcher.accepting();
    const std::vector<int32_t> tops = matcher.tops();
    const bool took = matcher.AcceptBytes(text.substr(i, 1));
    fuzz::Require(could || !took, "no byte is taken once nothing may follow");
    if (!took && matcher.over_budget()) {  // the work bound (grammar_matcher.h): refused for good
      fuzz::Require(matcher.tops() == tops && !matcher.CanContinue(), "over the bound, the state is kept");
      break;
    }
    took_any = took_any || took;
    if (!took) {
      fuzz::Require(
          matcher.accepting() == accepting && matcher.CanContinue() == could && matcher.tops() == tops,
          "a rejected byte leaves the state unchanged");
    }
  }
  fuzz::Require(!took_any || matcher.CanContinue() || matcher.accepting() || matcher.over_budget(),
                "a dead end is never reached by accepted bytes");
  return 0;
}
