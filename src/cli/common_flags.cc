#include "cli/common_flags.h"

#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "chat/builtin_templates.h"
#include "cli/cli_util.h"
#include "cli/flag_checks.h"
#include "engine/dry_breakers.h"

namespace lockstep::cli {

void DeprecationNote(const std::string& old_spelling, const std::string& new_spelling) {
  std::fprintf(stderr, "lockstep: note: %s is deprecated and will be removed; use %s\n", old_spelling.c_str(),
               new_spelling.c_str());
}

CLI::Option* AddModelFileFlag(CLI::App& cmd, std::string& path, const std::string& what, bool required) {
  CLI::Option* option = cmd.add_option("-m,--model", path, what)->type_name("FILE");
  if (required) option->required();
  return option;
}

CLI::Option* AddModelNameFlag(CLI::App& cmd, std::string& name) {
  return cmd.add_option("--model-name", name, "Model id sent to the server (default: the first it lists)")
      ->type_name("NAME")
      ->check(NotEmpty());
}

void AddDeprecatedModelPathFlag(CLI::App& cmd, std::string& path) {
  cmd.add_option_function<std::string>(
         "--model-path",
         [&path](const std::string& value) {
           DeprecationNote("--model-path FILE", "-m/--model FILE");
           path = value;
         },
         "Deprecated: -m/--model")
      ->group("");
}

void ClientModelFlags(const std::string& url, std::string* model_path, std::string* model_name) {
  if (url.empty() || model_path->empty() || !model_name->empty()) return;
  std::error_code error;
  if (std::filesystem::exists(*model_path, error)) return;  // a file: -m with --url, refused by the caller
  DeprecationNote("--model NAME with --url", "--model-name NAME");
  *model_name = std::move(*model_path);
  model_path->clear();
}

CLI::Option* AddThreadsFlag(CLI::App& cmd, int& threads) {
  return cmd.add_option("-t,--threads", threads, "Compute threads for the forward pass (default: all cores)")
      ->type_name("N")
      ->check(IntegerIn(0, 1024));  // the engine's limit (engine/engine.cc)
}

CLI::Option* AddKvTypeFlag(CLI::App& cmd, std::string& kv_type) {
  std::vector<std::string> names;
  for (KvDtype dtype : kKvDtypes) names.emplace_back(KvDtypeName(dtype));
  return cmd
      .add_option("--kv-type", kv_type,
                  "KV cache element type: f16|f32|q8_0 (q8_0: int8 with an f16 scale per 32 values, "
                  "about half of f16's bytes)")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
}

KvDtype ParseKvTypeOrDie(const std::string& kv_type) {
  const std::optional<KvDtype> dtype = ParseKvDtype(kv_type);
  if (!dtype) Fail("--kv-type must be f16, f32 or q8_0, got '" + kv_type + "'");
  return *dtype;
}

CLI::Option* AddChatTemplateFlag(CLI::App& cmd, std::string& spec) {
  return cmd
      .add_option("--chat-template", spec,
                  "Chat template instead of the model's own: a built-in name (" +
                      chat::BuiltinTemplateNames() + ") or a Jinja or tokenizer_config.json file")
      ->type_name("FILE|NAME")
      ->check(NotEmpty());
}

void AddSamplingFlags(CLI::App& cmd, SamplingFlags& f) {
  cmd.add_option("--temperature,--temp", f.temperature, "Sampling temperature (0 = greedy)")
      ->capture_default_str();
  cmd.add_option("--top-k", f.top_k, "Top-k (0 = off)")->capture_default_str();
  cmd.add_option("--top-p", f.top_p, "Top-p (1 = off)")->capture_default_str();
  cmd.add_option("--min-p", f.min_p, "Min-p (0 = off)")->capture_default_str();
  cmd.add_option("--repeat-penalty", f.repeat_penalty, "Repetition penalty (1 = off)")->capture_default_str();
  cmd.add_option("--repeat-last-n", f.repeat_last_n, "Tokens the penalties look back (-1 = all)")
      ->capture_default_str();
  cmd.add_option("--frequency-penalty", f.frequency_penalty, "Frequency penalty")->capture_default_str();
  cmd.add_option("--presence-penalty", f.presence_penalty, "Presence penalty")->capture_default_str();
  cmd.add_option("--seed", f.seed, "Sampling seed (default: -1, random, printed on stderr)")
      ->check(IntegerIn(-1, std::numeric_limits<int64_t>::max()));
  cmd.add_option("--dry-multiplier", f.dry_multiplier, "DRY repetition penalty multiplier (0 = off)")
      ->capture_default_str();
  cmd.add_option("--dry-base", f.dry_base, "DRY base")->capture_default_str();
  cmd.add_option("--dry-allowed-length", f.dry_allowed_length, "DRY: repeats this long are free")
      ->capture_default_str();
  cmd.add_option("--dry-penalty-last-n", f.dry_penalty_last_n, "DRY: tokens scanned (-1 = all, 0 = off)")
      ->capture_default_str();
  cmd.add_option(
      "--dry-sequence-breaker", f.dry_sequence_breakers,
      "DRY sequence breaker, repeated for several; replaces the defaults (\\n : \" *); 'none' for none");
}

SamplingParams SamplingParamsOrDie(const SamplingFlags& f, const Tokenizer* tokenizer) {
  SamplingParams params;
  params.temperature = f.temperature;
  params.top_k = f.top_k;
  params.top_p = f.top_p;
  params.min_p = f.min_p;
  params.repetition_penalty = f.repeat_penalty;
  params.frequency_penalty = f.frequency_penalty;
  params.presence_penalty = f.presence_penalty;
  params.penalty_last_n = f.repeat_last_n;
  if (f.seed < -1) Fail("--seed must be >= 0 (or -1 for a random seed), got " + std::to_string(f.seed));
  params.seed = f.seed >= 0 ? uint64_t(f.seed) : std::random_device{}();
  // DRY's flags are checked and its breakers turned into token sequences as the server's defaults are.
  params.dry.multiplier = f.dry_multiplier;
  params.dry.base = f.dry_base;
  params.dry.allowed_length = f.dry_allowed_length;
  params.dry.penalty_last_n = f.dry_penalty_last_n;
  if (Status s = CheckDryFlags(params.dry); !s.ok()) Fail(s);
  const std::vector<std::string> breakers = ValueOrDie(DryBreakersFromFlags(f.dry_sequence_breakers));
  if (params.dry.enabled() && tokenizer != nullptr)
    params.dry.breakers = DryRestartSequences(*tokenizer, breakers);
  if (Status s = params.Validate(); !s.ok()) Fail(s);
  return params;
}

}  // namespace lockstep::cli
