// Test helper: the tokenizers of the shared test data's vocabularies
// (../shared/testdata/vocab/ggml-vocab-NAME.gguf), loaded once per test process. Thread-safe. A vocabulary
// that cannot be loaded records a non-fatal gtest failure naming the file and why, and yields nullptr;
// callers skip on missing test data first (LOCKSTEP_REQUIRE_TESTDATA, testing/testdata.h).
#pragma once

#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace lockstep::testing {

// TestDataPath("vocab/ggml-vocab-" + name + ".gguf").
std::string TestVocabPath(const std::string& name);
// The tokenizer of ggml-vocab-NAME.gguf ("gpt-2", "starcoder", "llama-spm" ...), or nullptr after a failure.
std::shared_ptr<const Tokenizer> TestVocabTokenizer(const std::string& name);

}  // namespace lockstep::testing
