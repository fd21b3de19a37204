#include "testing/vocab/test_vocab.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "gguf/gguf_file.h"
#include "testing/testdata.h"
#include "tokenizer/byte_level.h"

namespace lockstep::testing {

std::string TestVocabPath(const std::string& name) {
  return TestDataPath("vocab/ggml-vocab-" + name + ".gguf");
}

std::shared_ptr<const Tokenizer> TestVocabTokenizer(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Tokenizer>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(name); it != loaded.end()) return it->second;
  const std::string path = TestVocabPath(name);
  auto file = GgufFile::Open(path);
  if (!file.ok()) {
    ADD_FAILURE() << path << ": " << file.status().ToString();
    return nullptr;
  }
  auto tokenizer = Tokenizer::FromGguf(**file);
  if (!tokenizer.ok()) {
    ADD_FAILURE() << path << ": " << tokenizer.status().ToString();
    return nullptr;
  }
  std::shared_ptr<const Tokenizer> shared(std::move(*tokenizer));
  loaded.emplace(name, shared);
  return shared;
}

GgufWriter ByteLevelToyVocabulary(const std::vector<std::pair<std::string, int32_t>>& pieces) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    byte_level::EncodeBytes(std::string(1, static_cast<char>(b)), &s);
    tokens.push_back(s);
  }
  std::vector<int32_t> types(tokens.size(), 1);
  for (const auto& [piece, type] : pieces) {
    tokens.push_back(piece);
    types.push_back(type);
  }
  GgufWriter w;
  w.Set("tokenizer.ggml.model", GgufValue::String("gpt2"));
  w.Set("tokenizer.ggml.pre", GgufValue::String("gpt-2"));
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  w.Set("tokenizer.ggml.token_type", GgufValue::Int32Array(types));
  w.Set("tokenizer.ggml.merges", GgufValue::StringArray({}));
  return w;
}

std::shared_ptr<const Tokenizer> ToyTokenizer(const GgufWriter& vocabulary) {
  const std::vector<std::byte> bytes = vocabulary.ToBytes();
  auto file = GgufFile::FromBytes(bytes, "toy.gguf");
  if (!file.ok()) {
    ADD_FAILURE() << "toy vocabulary: " << file.status().ToString();
    return nullptr;
  }
  auto tokenizer = Tokenizer::FromGguf(**file);
  if (!tokenizer.ok()) {
    ADD_FAILURE() << "toy vocabulary: " << tokenizer.status().ToString();
    return nullptr;
  }
  return std::shared_ptr<const Tokenizer>(std::move(*tokenizer));
}

}  // namespace lockstep::testing
