// Test helpers for the tokenizer conformance suite (../shared/testdata/vocab): loading a vocabulary once per
// test process, and reading NAME.gguf.inp / NAME.gguf.out.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::testing {

struct SuiteCase {
  std::string text;
  std::vector<int32_t> expected;
};

// Vocabularies of the suite with .inp/.out files.
const std::vector<std::string>& SuiteVocabNames();
// Every vocabulary of the suite (also those without .inp/.out: gpt-neox, baichuan).
const std::vector<std::string>& AllVocabNames();
// Names parameterised tests after their vocabulary ("gpt-2" -> "gpt_2"; gtest names allow no '-').
std::string VocabTestName(const ::testing::TestParamInfo<std::string>& info);
// The path of ggml-vocab-NAME.gguf.
std::string VocabPath(const std::string& name);
// Loads (and caches for the process) the tokenizer of ggml-vocab-NAME.gguf.
const Result<std::unique_ptr<Tokenizer>>& LoadSuiteTokenizer(const std::string& name);
// Reads the test strings and expected ids; an error if the files are missing or malformed.
Result<std::vector<SuiteCase>> ReadSuiteCases(const std::string& name);

}  // namespace lockstep::testing
