#include "fuzz/tiny_model.h"

#include <cstdlib>
#include <filesystem>
#include <random>

#include "chat/chat_template.h"
#include "fuzz/fuzz_support.h"
#include "model/model_builder.h"
#include "server/grammar_cache.h"

namespace lockstep::fuzz {
namespace {

std::filesystem::path& TempDir() {
  static std::filesystem::path dir;
  return dir;
}

void RemoveTempDir() {
  std::error_code ec;
  if (!TempDir().empty()) std::filesystem::remove_all(TempDir(), ec);
}

std::string VocabDir() {
  if (const char* env = std::getenv("LOCKSTEP_TESTDATA")) return std::string(env) + "/vocab";
  return std::string(LOCKSTEP_SOURCE_DIR) + "/../shared/testdata/vocab";
}

}  // namespace

const std::string& TinyModelPath() {
  static const std::string path = [] {
    TempDir() =
        std::filesystem::temp_directory_path() / ("lockstep-fuzz-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(TempDir());
    std::atexit(RemoveTempDir);
    const std::string file = (TempDir() / "tiny.gguf").string();
    MakeModelOptions options;
    auto shape = FindModelShape("tiny");
    Require(shape.ok(), "the tiny model shape");
    options.shape = *shape;
    Require(WriteRandomModel(options, file).ok(), "writing the tiny model");
    return file;
  }();
  return path;
}

const std::shared_ptr<const GgufFile>& TinyModelFile() {
  static const std::shared_ptr<const GgufFile> file = [] {
    auto opened = GgufFile::Open(TinyModelPath());
    Require(opened.ok(), "opening the tiny model");
    return std::shared_ptr<const GgufFile>(std::move(opened).value());
  }();
  return file;
}

const std::shared_ptr<const Tokenizer>& TinyTokenizer() {
  static const std::shared_ptr<const Tokenizer> tokenizer = [] {
    auto t = Tokenizer::FromGguf(*TinyModelFile());
    Require(t.ok(), "the tiny model's tokenizer");
    return std::shared_ptr<const Tokenizer>(std::move(t).value());
  }();
  return tokenizer;
}

const server::ApiContext& TinyApiContext() {
  static const server::ApiContext ctx = [] {
    server::ApiContext c;
    c.tokenizer = TinyTokenizer();
    c.chat_template = std::make_shared<chat::ChatTemplate>(chat::ChatTemplate::Create("", "", ""));
    c.model_ids = {"tiny", "alias"};
    c.model_id = "tiny";
    c.model_path = TinyModelPath();
    c.architecture = "llama";
    c.dtype = "f32";
    c.max_context = 256;
    c.vocab_size = c.tokenizer->vocab_size();
    c.embedding_length = 64;  // bounds embeddings' `dimensions`
    c.max_queue = 4;
    c.max_seqs = 4;
    // The fuzz grammar bounds (fuzz/fuzz_support.h) and one warming walk of 16 tokens instead of 8 of 64.
    c.grammars = std::make_shared<server::GrammarCache>(
        c.tokenizer, server::GrammarCacheOptions{.capacity = 4,
                                                 .max_mask_work = kMaxGrammarWork,
                                                 .max_request_work = kMaxRequestGrammarWork,
                                                 .max_compiled_size = kMaxCompiledSize,
                                                 .warm_walks = 1,
                                                 .warm_steps = 16});
    return c;
  }();
  return ctx;
}

const server::ApiContext& FimApiContext() {
  static const server::ApiContext ctx = [] {
    server::ApiContext c = TinyApiContext();
    for (const NamedTokenizer& t : FuzzTokenizers()) {
      if (t.name != "starcoder") continue;
      c.tokenizer = t.tokenizer;
      c.vocab_size = t.tokenizer->vocab_size();
      c.grammars = nullptr;
    }
    return c;
  }();
  return ctx;
}

const std::vector<NamedTokenizer>& FuzzTokenizers() {
  static const std::vector<NamedTokenizer> all = [] {
    std::vector<NamedTokenizer> out = {{"tiny", TinyTokenizer()}};
    for (const char* name : {"llama-spm", "gpt-2", "phi-3", "starcoder"}) {
      const std::string path = VocabDir() + "/ggml-vocab-" + name + ".gguf";
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) continue;
      auto file = GgufFile::Open(path);
      Require(file.ok(), "opening a test vocabulary");
      auto tokenizer = Tokenizer::FromGguf(**file);
      Require(tokenizer.ok(), "loading a test vocabulary");
      out.push_back({name, std::shared_ptr<const Tokenizer>(std::move(tokenizer).value())});
    }
    if (out.size() == 1)
      std::fprintf(stderr, "fuzz: no test vocabularies in %s; the tiny one only\n", VocabDir().c_str());
    return out;
  }();
  return all;
}

}  // namespace lockstep::fuzz
