#include "cli/engine_setup.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli/cli_util.h"
#include "cli/common_flags.h"
#include "cli/flag_checks.h"
#include "tensor/thread_pool.h"

namespace lockstep::cli {

LoadedModel LoadModelOrDie(const std::string& path, const std::vector<std::string>& lora) {
  LoadedModel loaded;
  std::shared_ptr<const GgufFile> file = ValueOrDie(GgufFile::Open(path));
  loaded.file = file;
  loaded.model = ValueOrDie(Model::Load(file, {.lora_paths = lora}));
  auto tokenizer = Tokenizer::FromGguf(*file);
  if (tokenizer.ok()) {
    loaded.tokenizer = std::move(tokenizer).value();
  } else {
    std::fprintf(stderr, "lockstep: warning: %s: no usable tokenizer (%s); text output is disabled\n",
                 path.c_str(), tokenizer.status().ToString().c_str());
  }
  return loaded;
}

void AddLoraFlags(CLI::App& cmd, std::vector<LoraFlag>& adapters) {
  // Callbacks on each occurrence as it is parsed: the two flags' adapters keep their command-line order.
  cmd.add_option_function<std::string>(
         "--lora",
         [&adapters](const std::string& path) {
           adapters.push_back({path, 1.0f});
         },
         "LoRA adapter (GGUF) applied with scale 1; repeatable")
      ->type_name("FILE")
      ->check(CLI::ExistingFile)
      ->trigger_on_parse();
  cmd.add_option(
         "--lora-scaled",
         [&adapters](const CLI::results_t& r) {
           for (size_t i = 0; i + 1 < r.size(); i += 2) {
             float scale = 0;
             if (!CLI::detail::lexical_cast(r[i + 1], scale) || !std::isfinite(scale)) return false;
             adapters.push_back({r[i], scale});
           }
           return true;
         },
         "LoRA adapter (GGUF) with a scale; repeatable")
      ->type_name("FILE SCALE")
      ->type_size(2)
      ->trigger_on_parse();
}

std::vector<std::string> LoraPaths(const std::vector<LoraFlag>& adapters) {
  std::vector<std::string> paths;
  for (const LoraFlag& a : adapters) paths.push_back(a.path);
  return paths;
}

void AddEngineFlags(CLI::App& cmd, EngineFlags& flags) {
  AddThreadsFlag(cmd, flags.threads);
  cmd.add_option("--max-seqs", flags.max_seqs, "Running sequences at most")
      ->check(IntegerIn(1, kMaxInt))
      ->capture_default_str();
  cmd.add_option("--max-batch-tokens", flags.max_batch_tokens, "Rows per forward pass at most")
      ->check(IntegerIn(1, kMaxInt))
      ->capture_default_str();
  cmd.add_option("--kv-memory", flags.kv_memory,
                 "KV cache size in bytes (suffix K, M or G; default: automatic)")
      ->check(NotEmpty());
  cmd.add_option("--kv-tokens", flags.kv_tokens, "KV cache size in tokens (overrides --kv-memory)")
      ->check(IntegerIn(0, kMaxKvTokens));
  AddKvTypeFlag(cmd, flags.kv_type);
  cmd.add_flag("--no-prefix-cache", flags.no_prefix_cache,
               "Do not reuse the KV of shared prompt prefixes across requests (on by default)");
  cmd.add_option("--recurrent-slots", flags.recurrent_slots,
                 "Models with recurrent layers (qwen35): per-sequence states kept at once, each held by one "
                 "running request, at most --max-seqs (0: --max-seqs); fewer bound their memory")
      ->check(IntegerIn(0, kMaxInt))
      ->capture_default_str();
  cmd.add_option("--recurrent-cache-slots", flags.recurrent_cache_slots,
                 "Models with recurrent layers (qwen35): prefix-cache snapshots of states at KV block "
                 "boundaries kept at once, each as big as a state slot (0: no prefix caching for them; "
                 "auto: as many as fit in the KV cache's memory, at least 8, at most one per KV block)")
      ->transform(AutoOrIntegerIn(0, kMaxInt, EngineOptions::kAutomaticCacheSlots))
      ->default_str("auto");
}

void CheckRecurrentSlotsOrDie(const EngineFlags& flags) {
  if (flags.recurrent_slots > flags.max_seqs) {
    Fail("--recurrent-slots " + std::to_string(flags.recurrent_slots) + " exceeds --max-seqs " +
         std::to_string(flags.max_seqs) + ": each running request holds one state slot, so at most " +
         std::to_string(flags.max_seqs) + " are ever used");
  }
}

void AddDraftFlags(CLI::App& cmd, int& draft_max, int* draft_max_seqs) {
  cmd.add_option(
         "--draft-max", draft_max,
         "Speculative decoding: tokens drafted per step by n-gram lookup in the request's own text, "
         "checked by the model in the same pass (same output, fewer steps on repetitive text; 0: off)")
      ->check(IntegerIn(0, 64))
      ->capture_default_str();
  if (draft_max_seqs == nullptr) return;
  cmd.add_option("--draft-max-seqs", *draft_max_seqs,
                 "Draft only while at most this many requests run (bigger batches gain little from drafts)")
      ->check(IntegerIn(1, kMaxInt))
      ->capture_default_str();
}

Result<int64_t> ParseByteSize(const std::string& text, const std::string& flag) {
  auto bad = [&] {
    return InvalidArgument(flag + ": '" + text +
                           "' is not a size (bytes, optionally with a K, M or G suffix)");
  };
  if (text.empty()) return bad();
  int64_t multiplier = 1;
  std::string digits = text;
  const char suffix = char(std::toupper(static_cast<unsigned char>(text.back())));
  if (suffix == 'K' || suffix == 'M' || suffix == 'G') {
    multiplier = suffix == 'K' ? (int64_t(1) << 10) : suffix == 'M' ? (int64_t(1) << 20) : (int64_t(1) << 30);
    digits.pop_back();
  }
  if (digits.empty() || digits.size() > 15 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad();
  }
  const int64_t value = std::stoll(digits);
  if (value <= 0) return InvalidArgument(flag + ": the size must be positive, got '" + text + "'");
  if (value > (int64_t(1) << 50) / multiplier) return InvalidArgument(flag + ": '" + text + "' is too large");
  return value * multiplier;
}

EngineOptions EngineOptionsOrDie(const EngineFlags& flags) {
  EngineOptions options;
  options.threads = ThreadsOrHardware(flags.threads);
  options.max_seqs = flags.max_seqs;
  options.max_batch_tokens = flags.max_batch_tokens;
  if (flags.max_seqs < 1) Fail("--max-seqs must be >= 1, got " + std::to_string(flags.max_seqs));
  if (flags.max_batch_tokens < 1) {
    Fail("--max-batch-tokens must be >= 1, got " + std::to_string(flags.max_batch_tokens));
  }
  if (flags.kv_tokens < 0) Fail("--kv-tokens must be >= 0, got " + std::to_string(flags.kv_tokens));
  options.kv_tokens = flags.kv_tokens;
  options.prefix_caching = !flags.no_prefix_cache;
  if (!flags.kv_memory.empty())
    options.kv_memory_bytes = ValueOrDie(ParseByteSize(flags.kv_memory, "--kv-memory"));
  options.kv_dtype = ParseKvTypeOrDie(flags.kv_type);
  options.draft_tokens = flags.draft_max;
  options.draft_max_seqs = flags.draft_max_seqs;
  CheckRecurrentSlotsOrDie(flags);
  options.recurrent_slots = flags.recurrent_slots;
  options.recurrent_cache_slots = flags.recurrent_cache_slots;
  return options;
}

namespace {

std::vector<std::string> ReadLinesOrDie(const std::string& path, const std::string& flag) {
  std::vector<std::string> lines = SplitLines(ReadFlagFileOrDie(path, flag));
  if (lines.empty()) Fail(flag + ": '" + path + "' has no prompts");
  return lines;
}

}  // namespace

std::vector<std::vector<int32_t>> ReadTextPromptsOrDie(const std::string& path, const Tokenizer* tokenizer) {
  if (tokenizer == nullptr) Fail("--prompts needs a model with a tokenizer (use --prompt-ids-file)");
  std::vector<std::vector<int32_t>> prompts;
  const std::vector<std::string> lines = ReadLinesOrDie(path, "--prompts");
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = "--prompts " + path + " line " + std::to_string(i + 1);
    // Checked on the text: the BOS the tokenizer adds would make an empty line a BOS-only request.
    if (lines[i].empty()) Fail(where + ": the prompt is empty");
    auto ids = tokenizer->Encode(lines[i], /*add_bos=*/true, /*parse_special=*/true);
    if (!ids.ok()) Fail(ids.status().WithContext(where));
    if (ids->empty()) Fail(where + ": the prompt has no tokens");
    prompts.push_back(std::move(ids).value());
  }
  return prompts;
}

std::vector<std::vector<int32_t>> ReadIdPromptsOrDie(const std::string& path, int64_t n_vocab) {
  std::vector<std::vector<int32_t>> prompts;
  const std::vector<std::string> lines = ReadLinesOrDie(path, "--prompt-ids-file");
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = "--prompt-ids-file " + path + " line " + std::to_string(i + 1);
    std::string cleaned = lines[i];
    std::replace(cleaned.begin(), cleaned.end(), ',', ' ');
    std::istringstream words(cleaned);
    std::vector<int32_t> ids;
    std::string word;
    while (words >> word) {
      size_t used = 0;
      long long value = -1;
      try {
        value = std::stoll(word, &used);
      } catch (...) {
        used = 0;
      }
      if (used != word.size()) Fail(where + ": '" + word + "' is not an integer token id");
      if (value < 0 || value >= n_vocab) {
        Fail(where + ": token id " + word + " is outside the vocabulary (0.." + std::to_string(n_vocab - 1) +
             ")");
      }
      ids.push_back(int32_t(value));
    }
    if (ids.empty()) Fail(where + ": no token ids");
    prompts.push_back(std::move(ids));
  }
  return prompts;
}

}  // namespace lockstep::cli
