// Shared setup for the engine-driven subcommands (`batch`, `bench batched`): loading a model file with its
// tokenizer, the engine flags they share, and reading prompt files. Errors go through Fail() (exit 1) with a
// message naming the flag, file and line.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::cli {

struct LoadedModel {
  std::shared_ptr<const GgufFile> file;
  std::shared_ptr<Model> model;
  std::shared_ptr<const Tokenizer>
      tokenizer;  // null when the file has no usable vocabulary (a warning is printed)
};
// `lora`: adapter files loaded with the model (ModelLoadOptions::lora_paths), in order.
LoadedModel LoadModelOrDie(const std::string& path, const std::vector<std::string>& lora = {});

// A LoRA adapter of --lora FILE (scale 1) or --lora-scaled FILE SCALE, in command-line order.
struct LoraFlag {
  std::string path;
  float scale = 1;
};
// Adds --lora and --lora-scaled (repeatable, as llama.cpp's): adapter i is the i-th given of either.
void AddLoraFlags(CLI::App& cmd, std::vector<LoraFlag>& adapters);
std::vector<std::string> LoraPaths(const std::vector<LoraFlag>& adapters);

struct EngineFlags {
  int threads = 0;  // 0 = hardware concurrency
  int max_seqs = 64;
  int max_batch_tokens = 512;
  std::string kv_memory;  // "" = engine default; bytes with an optional K/M/G suffix
  int64_t kv_tokens = 0;
  std::string kv_type = "f16";
  bool no_prefix_cache = false;
  int draft_max = 0;  // --draft-max (EngineOptions::draft_tokens)
  int draft_max_seqs = 4;
  int recurrent_slots = 0;  // --recurrent-slots (EngineOptions::recurrent_slots); 0 = max_seqs
  // --recurrent-cache-slots (EngineOptions::recurrent_cache_slots); 0 = no prefix cache for such models,
  // EngineOptions::kAutomaticCacheSlots (flag value "auto") = sized by the KV cache's memory
  int recurrent_cache_slots = EngineOptions::kAutomaticCacheSlots;
};
// Adds -t/--threads, --max-seqs, --max-batch-tokens, --kv-memory, --kv-tokens, --kv-type,
// --no-prefix-cache, --recurrent-slots, --recurrent-cache-slots.
void AddEngineFlags(CLI::App& cmd, EngineFlags& flags);
// Adds --draft-max (speculative decoding by n-gram lookup), and --draft-max-seqs unless `draft_max_seqs` is
// null (commands that run one request).
void AddDraftFlags(CLI::App& cmd, int& draft_max, int* draft_max_seqs);
EngineOptions EngineOptionsOrDie(const EngineFlags& flags);
// Fails (exit 1) when --recurrent-slots exceeds --max-seqs.
void CheckRecurrentSlotsOrDie(const EngineFlags& flags);

// "123", "64K", "512M", "2G" (powers of 1024) → bytes; InvalidArgument naming `flag` otherwise.
Result<int64_t> ParseByteSize(const std::string& text, const std::string& flag);

// One prompt per line. Text prompts are tokenized (BOS as the vocabulary says); id prompts are space
// separated token ids. A final empty line (the file's trailing newline) is not a prompt.
std::vector<std::vector<int32_t>> ReadTextPromptsOrDie(const std::string& path, const Tokenizer* tokenizer);
std::vector<std::vector<int32_t>> ReadIdPromptsOrDie(const std::string& path, int64_t n_vocab);

}  // namespace lockstep::cli
