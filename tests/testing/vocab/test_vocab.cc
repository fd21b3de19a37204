#include "testing/vocab/test_vocab.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "gguf/gguf_file.h"
#include "testing/testdata.h"

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

}  // namespace lockstep::testing
