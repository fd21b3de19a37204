// `lockstep info -m MODEL`: what a GGUF model file holds — architecture, hyper-parameters, tensor types and
// counts, parameter count, tokenizer, chat template (family, origin, first lines, warnings), file size. Exit
// code 1 for an unreadable or unsupported file (after printing what could be read).
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "chat/template_selection.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::cli {
namespace {

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f %s", bytes, units[u]);
  return buf;
}

void PrintTensorSummary(const GgufFile& file) {
  std::map<std::string, std::pair<int64_t, int64_t>> by_type;  // type -> (count, elements)
  int64_t params = 0;
  for (const GgufTensorInfo& t : file.tensors()) {
    auto& entry = by_type[std::string(TensorTypeName(t.type))];
    ++entry.first;
    entry.second += t.elements();
    params += t.elements();
  }
  std::printf("tensors:          %zu\n", file.tensors().size());
  for (const auto& [type, entry] : by_type) {
    std::printf("  %-8s        %lld tensors, %lld elements\n", type.c_str(), (long long)entry.first,
                (long long)entry.second);
  }
  std::printf("parameters:       %lld (%.1f M)\n", (long long)params, double(params) / 1e6);
}

// The template `serve` would use (with the same --chat-template), its family and first lines.
void PrintChatTemplate(const GgufFile& file, const Tokenizer& tokenizer, const std::string& override_spec) {
  auto selected = chat::SelectChatTemplate(file, tokenizer, override_spec);
  if (!selected.ok()) Fail(selected.status());
  const chat::ChatTemplate& tmpl = *selected->chat_template;
  const std::string& source = tmpl.source();
  std::vector<std::string> lines;
  for (size_t start = 0; start <= source.size();) {
    const size_t end = std::min(source.find('\n', start), source.size());
    lines.push_back(source.substr(start, end - start));
    start = end + 1;
  }
  std::printf("chat template:    %s (%s), %zu lines, %zu bytes\n", tmpl.family().c_str(),
              selected->origin.c_str(), lines.size(), source.size());
  constexpr size_t kShown = 6, kWidth = 100;
  for (size_t i = 0; i < std::min(lines.size(), kShown); ++i) {
    const std::string& line = lines[i];
    std::printf("  | %s%s\n", line.substr(0, kWidth).c_str(), line.size() > kWidth ? " ..." : "");
  }
  if (lines.size() > kShown) std::printf("  | ... (%zu more lines)\n", lines.size() - kShown);
  for (const std::string& warning : selected->warnings)
    std::printf("warning:          %s\n", warning.c_str());
}

void RunInfo(const std::string& path, const std::string& chat_template) {
  auto opened = GgufFile::Open(path);
  if (!opened.ok()) Fail(opened.status());
  std::shared_ptr<const GgufFile> file = std::move(opened).value();
  std::printf("file:             %s\n", path.c_str());
  std::printf("file size:        %zu bytes (%s)\n", file->file_size(),
              HumanBytes(double(file->file_size())).c_str());
  std::printf("gguf version:     %u, %zu metadata keys\n", file->version(), file->metadata().size());
  PrintTensorSummary(*file);

  auto tokenizer = Tokenizer::FromGguf(*file);
  if (tokenizer.ok()) {
    const Tokenizer& t = **tokenizer;
    std::printf("tokenizer:        %s%s%s, vocab %d, bos %d, eos %d\n", t.model_name().c_str(),
                t.pre_name().empty() ? "" : " pre=", t.pre_name().c_str(), t.vocab_size(), t.bos_id(),
                t.eos_id());
    const FimTokens& fim = t.fim();
    if (fim.pre >= 0 || fim.suf >= 0 || fim.mid >= 0) {
      std::printf("fim tokens:       pre %d, suf %d, mid %d, pad %d, rep %d, sep %d%s\n", fim.pre, fim.suf,
                  fim.mid, fim.pad, fim.rep, fim.sep,
                  fim.CanInfill() ? "" : " (no /infill: needs pre, suf and mid)");
    }
    PrintChatTemplate(*file, t, chat_template);
  } else {
    std::printf("tokenizer:        unavailable (%s)\n", tokenizer.status().message().c_str());
  }

  auto config = ModelConfig::FromGguf(*file);
  if (!config.ok()) Fail(config.status());
  const ModelConfig& c = *config;
  std::printf("architecture:     %s%s%s\n", c.ArchitectureLabel().c_str(),
              c.name.empty() ? "" : "  name: ", c.name.c_str());
  std::printf("n_vocab:          %lld\n", (long long)c.n_vocab);
  std::printf("context_length:   %lld\n", (long long)c.n_ctx_train);
  std::printf("embedding_length: %lld\n", (long long)c.n_embd);
  std::printf("block_count:      %lld\n", (long long)c.n_layer);
  std::printf("feed_forward:     %lld\n", (long long)c.n_ff);
  if (c.n_expert > 0) {
    std::printf("experts:          %lld used of %lld, width %lld\n", (long long)c.n_expert_used,
                (long long)c.n_expert, (long long)c.n_ff_expert);
  }
  std::printf("heads:            %lld (kv %lld, head_dim %lld)\n", (long long)c.n_head,
              (long long)c.n_head_kv, (long long)c.head_dim);
  std::printf("%-17s %g\n", (std::string(c.NormEpsilonName()) + ":").c_str(), c.rms_eps);
  std::printf("rope:             %s, base %g, dims %lld%s%s\n",
              c.rope_mode == RopeMode::kNeox ? "neox" : "normal", c.rope_freq_base, (long long)c.rope_dim,
              c.rope_scaling == RopeScaling::kLinear ? ", linear scaling" : "",
              c.rope_freq_factors.empty() ? "" : ", llama3 frequency factors");
  std::printf("qkv bias:         %s\n", c.qkv_bias ? "yes" : "no");
  auto model = Model::Load(file, {.pack_weights = false});  // validation only: no need to repack
  if (!model.ok()) Fail(model.status());
  // The paged cache's own layout (per-layer shapes, the deepseek2 latent, no K/V for recurrent layers).
  const KvLayout layout = (*model)->MakeKvLayout(KvDtype::kF16);
  std::printf("kv per token:     %lld bytes (f16)\n",
              (long long)(layout.BlockBytes() / size_t(layout.block_tokens)));
  if (layout.recurrent_state_floats > 0) {
    std::printf("recurrent state:  %s per sequence\n",
                HumanBytes(double(layout.recurrent_state_floats) * sizeof(float)).c_str());
  }
  std::printf("output:           %s\n",
              file->FindTensor("output.weight") ? "separate" : "tied to token_embd");
}

}  // namespace

void RegisterInfoCommand(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto chat_template = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("info", "Show what a GGUF model holds");
  AddModelFileFlag(*cmd, *path);
  AddChatTemplateFlag(*cmd, *chat_template);
  cmd->callback([path, chat_template] { RunInfo(*path, *chat_template); });
}

}  // namespace lockstep::cli
