// The one vocabulary of flags every subcommand uses (so `-m` means the same everywhere):
//   -m,--model FILE       the GGUF model file (in bench compare/serve: start a lockstep server in-process)
//   --model-name NAME     the model id sent to a server (ask, bench compare, bench serve)
//   -t,--threads N        compute threads for the forward pass (default: all cores)
//   --kv-type f16|f32|q8_0   the KV cache's element type (default f16)
//   --temperature T       sampling temperature (alias --temp); local commands default to 0 (greedy),
//                         client commands send none unless given, so the server's default applies;
//                         bench compare sends 0 unless given (greedy, so runs compare)
//   --chat-template FILE|NAME   the chat template instead of the model's own (serve, info, chat)
//   --top-k, --top-p, --min-p, --seed, --repeat-penalty, ... (AddSamplingFlags)
// Old spellings that scripts may have (--model-path, --kv-f32, ask/bench `--model NAME`) keep working and
// print a deprecation note on stderr (DeprecationNote). Registration only; parsing errors are CLI11's.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "tensor/kv_storage.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::cli {

// Prints "lockstep: note: OLD is deprecated and will be removed; use NEW" on stderr.
void DeprecationNote(const std::string& old_spelling, const std::string& new_spelling);

// -m,--model FILE (the GGUF file), marked REQUIRED unless `required` is false.
CLI::Option* AddModelFileFlag(CLI::App& cmd, std::string& path, const std::string& what = "GGUF model file",
                              bool required = true);
// --model-name NAME: the id sent to the server (default: the first model the server lists).
CLI::Option* AddModelNameFlag(CLI::App& cmd, std::string& name);
// The client commands with -m FILE or --url (bench compare, bench serve): the hidden, deprecated
// --model-path FILE.
void AddDeprecatedModelPathFlag(CLI::App& cmd, std::string& path);
// Before -m,--model meant the file there, `--model NAME` was the server's model name; with --url (which
// excludes -m) a given --model is read that old way, with a deprecation note: moves *model_path to
// *model_name when the latter is empty.
void ClientModelFlags(const std::string& url, std::string* model_path, std::string* model_name);
// -t,--threads N, worded the same everywhere; 0 (the default) = all cores.
CLI::Option* AddThreadsFlag(CLI::App& cmd, int& threads);
// --kv-type f16|f32|q8_0, checked by CLI11; ParseKvTypeOrDie turns the name into the type (Fail naming the
// flag otherwise).
CLI::Option* AddKvTypeFlag(CLI::App& cmd, std::string& kv_type);
KvDtype ParseKvTypeOrDie(const std::string& kv_type);

// --chat-template FILE|NAME: a built-in template's name or a Jinja / tokenizer_config.json file (default: the
// model's own; chat/template_selection.h).
CLI::Option* AddChatTemplateFlag(CLI::App& cmd, std::string& spec);

// Sampling flags of the local commands (generate, batch, chat), one set of names and defaults.
struct SamplingFlags {
  float temperature = 0.0f;  // 0 = greedy
  int top_k = 40;            // used when temperature > 0
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int repeat_last_n = 64;
  int64_t seed = -1;  // -1 = random (printed)
  // DRY (engine/dry_penalty.h), llama.cpp's defaults: off unless --dry-multiplier is above 0.
  float dry_multiplier = 0.0f;
  float dry_base = 1.75f;
  int dry_allowed_length = 2;
  int dry_penalty_last_n = -1;
  std::vector<std::string> dry_sequence_breakers;  // empty: llama.cpp's four; {"none"}: none
};
// --temperature/--temp, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n, --frequency-penalty,
// --presence-penalty, --seed, --dry-multiplier, --dry-base, --dry-allowed-length, --dry-penalty-last-n,
// --dry-sequence-breaker.
void AddSamplingFlags(CLI::App& cmd, SamplingFlags& flags);
// The engine's parameters for these flags (a random seed when --seed is -1; DRY's breakers spelled in
// `tokenizer`'s tokens, none without a tokenizer); Fail()s on invalid values, naming the flag.
SamplingParams SamplingParamsOrDie(const SamplingFlags& flags, const Tokenizer* tokenizer);

}  // namespace lockstep::cli
