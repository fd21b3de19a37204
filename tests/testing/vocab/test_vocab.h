// Test helper: the tokenizers of the shared test data's vocabularies
// (../shared/testdata/vocab/ggml-vocab-NAME.gguf), loaded once per test process, and toy byte-level
// vocabularies built in memory. Thread-safe. A vocabulary that cannot be loaded records a non-fatal gtest
// failure naming the file and why, and yields nullptr; callers skip on missing test data first
// (LOCKSTEP_REQUIRE_TESTDATA, testing/testdata.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::testing {

// TestDataPath("vocab/ggml-vocab-" + name + ".gguf").
std::string TestVocabPath(const std::string& name);
// The tokenizer of ggml-vocab-NAME.gguf ("gpt-2", "starcoder", "llama-spm" ...), or nullptr after a failure.
std::shared_ptr<const Tokenizer> TestVocabTokenizer(const std::string& name);

// A toy GPT-2-style vocabulary without merges (one token per byte): the 256 byte characters (ids 0-255),
// then `pieces` in order (ids 256...) with their token types (1 normal, 3 control, 4 user-defined). Only the
// tokenizer.ggml.* keys a byte-level vocabulary needs; callers add others (eos_token_id, FIM ids ...).
GgufWriter ByteLevelToyVocabulary(const std::vector<std::pair<std::string, int32_t>>& pieces);
// The tokenizer of such a vocabulary, or nullptr after a gtest failure.
std::shared_ptr<const Tokenizer> ToyTokenizer(const GgufWriter& vocabulary);

}  // namespace lockstep::testing
