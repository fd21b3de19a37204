#include "vocab_suite.h"

#include <fstream>
#include <sstream>

#include "testing/testdata.h"
#include "testing/vocab/test_vocab.h"

namespace lockstep::testing {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

const std::vector<std::string>& SuiteVocabNames() {
  static const std::vector<std::string> names = {"llama-spm",      "phi-3",   "gpt-2",  "mpt",
                                                 "starcoder",      "refact",  "falcon", "deepseek-llm",
                                                 "deepseek-coder", "bert-bge"};
  return names;
}

const std::vector<std::string>& AllVocabNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = SuiteVocabNames();
    all.push_back("gpt-neox");
    all.push_back("baichuan");
    return all;
  }();
  return names;
}

std::string VocabPath(const std::string& name) { return TestVocabPath(name); }

const Result<std::unique_ptr<Tokenizer>>& LoadSuiteTokenizer(const std::string& name) {
  static std::map<std::string, Result<std::unique_ptr<Tokenizer>>> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    auto file = GgufFile::Open(VocabPath(name));
    Result<std::unique_ptr<Tokenizer>> tokenizer =
        file.ok() ? Tokenizer::FromGguf(**file) : Result<std::unique_ptr<Tokenizer>>(file.status());
    it = cache.emplace(name, std::move(tokenizer)).first;
  }
  return it->second;
}

Result<std::vector<SuiteCase>> ReadSuiteCases(const std::string& name) {
  const std::string base = VocabPath(name);
  LOCKSTEP_ASSIGN_OR_RETURN(std::string inp, ReadFile(base + ".inp"));
  LOCKSTEP_ASSIGN_OR_RETURN(std::string out, ReadFile(base + ".out"));
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<SuiteCase> cases;
  size_t pos = 0;
  while (pos < inp.size()) {
    const size_t end = inp.find(separator, pos);
    if (end == std::string::npos) return InvalidArgument(base + ".inp: text after the last separator");
    cases.push_back(SuiteCase{inp.substr(pos, end - pos), {}});
    pos = end + separator.size();
  }
  std::istringstream lines(out);
  std::string line;
  size_t index = 0;
  while (std::getline(lines, line)) {
    if (index >= cases.size()) return InvalidArgument(base + ".out: more lines than .inp has strings");
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id) cases[index].expected.push_back(id);
    ++index;
  }
  if (index != cases.size()) return InvalidArgument(base + ".out: fewer lines than .inp has strings");
  return cases;
}

std::string VocabTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name;
}

}  // namespace lockstep::testing
