// Fixtures of the fuzz targets that need a model or a vocabulary: a tiny random model written once per
// process (make-model's "tiny" shape with its built-in byte-level BPE vocabulary), its tokenizer, an
// ApiContext over it (as the server builds one), and the real vocabularies of ../shared/testdata when they
// are there. Everything is made on first use, aborts if that fails, and lives until the process exits.
// Not thread-safe (libFuzzer runs one input at a time).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "server/api_context.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::fuzz {

// The tiny model's GGUF path (in a temporary directory removed at exit).
const std::string& TinyModelPath();
const std::shared_ptr<const GgufFile>& TinyModelFile();
const std::shared_ptr<const Tokenizer>& TinyTokenizer();
// An ApiContext like the server's for the tiny model: ChatML template, ids "tiny" and "alias", 256 tokens of
// context.
const server::ApiContext& TinyApiContext();
// TinyApiContext() with StarCoder's vocabulary (FIM tokens, for /infill) when the test vocabularies are
// found, and no grammar cache (grammar fields are refused; TinyApiContext() fuzzes them); else
// TinyApiContext().
const server::ApiContext& FimApiContext();

struct NamedTokenizer {
  std::string name;  // "tiny", "llama-spm", "gpt-2", ...
  std::shared_ptr<const Tokenizer> tokenizer;
};
// Tokenizers to fuzz: the tiny model's, plus llama-spm, gpt-2, phi-3 and starcoder from the shared test data
// when it is found ($LOCKSTEP_TESTDATA/vocab, else LOCKSTEP_SOURCE_DIR/../shared/testdata/vocab).
const std::vector<NamedTokenizer>& FuzzTokenizers();

}  // namespace lockstep::fuzz
