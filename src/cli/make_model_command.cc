// `lockstep make-model`: writes a random-weight model in a known model's real shape (model/model_builder.h);
// `lockstep make-lora`: a random LoRA adapter for a model file (model/lora_writer.h).
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/flag_checks.h"
#include "gguf/gguf_file.h"
#include "gguf/tensor_type.h"
#include "model/lora_writer.h"
#include "model/model_builder.h"

namespace lockstep::cli {
namespace {

struct MakeModelFlags {
  std::string shape;
  std::string type = "f32";
  std::string vocab_from;
  uint64_t seed = 1;
  std::string output;
};

// "q4_K: 97, q6_K: 17, f32: 34": how many tensors of each type the file holds, most common first.
std::string TypeCounts(const std::string& path) {
  const std::unique_ptr<GgufFile> file = ValueOrDie(GgufFile::Open(path));
  std::map<std::string, int> counts;
  for (const GgufTensorInfo& t : file->tensors()) ++counts[std::string(TensorTypeName(t.type))];
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [name, n] : sorted) out += (out.empty() ? "" : ", ") + name + ": " + std::to_string(n);
  return out;
}

void RunMakeModel(const MakeModelFlags& flags) {
  // Before the work: a directory, a missing folder or a read-only one used to fail only at the final rename.
  if (Status s = CheckOutputFile(flags.output, "-o/--output"); !s.ok()) Fail(s);
  MakeModelOptions options;
  options.shape = ValueOrDie(FindModelShape(flags.shape));
  if (Status s = SetWeightTypes(flags.type, options); !s.ok()) Fail(s.WithContext("--type"));
  options.vocab_from = flags.vocab_from;
  options.seed = flags.seed;
  const Status status = WriteRandomModel(options, flags.output);
  if (!status.ok()) Fail(status);
  std::fprintf(stderr, "wrote %s (%s, %s; tensors %s)\n", flags.output.c_str(), flags.shape.c_str(),
               flags.type.c_str(), TypeCounts(flags.output).c_str());
}

struct MakeLoraFlags {
  std::string model;
  MakeLoraOptions options;
  std::string targets = "attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up,ffn_down";
  std::string type = "f32";
  std::string output;
};

void RunMakeLora(MakeLoraFlags flags) {
  if (Status s = CheckOutputFile(flags.output, "-o/--output"); !s.ok()) Fail(s);
  const std::unique_ptr<GgufFile> model = ValueOrDie(GgufFile::Open(flags.model), "--model");
  flags.options.targets.clear();
  for (size_t start = 0; start <= flags.targets.size();) {
    const size_t comma = std::min(flags.targets.find(',', start), flags.targets.size());
    if (comma > start) flags.options.targets.push_back(flags.targets.substr(start, comma - start));
    start = comma + 1;
  }
  if (flags.type == "f32") {
    flags.options.type = TensorType::kF32;
  } else if (flags.type == "f16") {
    flags.options.type = TensorType::kF16;
  } else if (flags.type == "bf16") {
    flags.options.type = TensorType::kBF16;
  } else {
    Fail("--type: '" + flags.type + "' is not one of f32|f16|bf16");
  }
  const Status status = WriteRandomLora(*model, flags.options, flags.output);
  if (!status.ok()) Fail(status.WithContext(flags.model));
  std::fprintf(stderr, "wrote %s (LoRA rank %lld, alpha %g, %s: %s)\n", flags.output.c_str(),
               static_cast<long long>(flags.options.rank), double(flags.options.alpha), flags.type.c_str(),
               flags.targets.c_str());
}

}  // namespace

void RegisterMakeLoraCommand(CLI::App& app) {
  auto flags = std::make_shared<MakeLoraFlags>();
  CLI::App* cmd = app.add_subcommand("make-lora", "Write a random LoRA adapter (GGUF) for a model file");
  AddModelFileFlag(*cmd, flags->model);
  cmd->add_option("--rank", flags->options.rank, "LoRA rank")
      ->check(IntegerIn(1, 4096))
      ->capture_default_str();
  cmd->add_option("--alpha", flags->options.alpha, "adapter.lora.alpha (scale = user scale x alpha / rank)")
      ->capture_default_str();
  cmd->add_option("--targets", flags->targets,
                  "Comma-separated matrices to adapt: attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, "
                  "ffn_down, output")
      ->capture_default_str();
  cmd->add_option("--type", flags->type, "Tensor type of lora_a/lora_b: f32|f16|bf16")->capture_default_str();
  cmd->add_option("--std", flags->options.weight_std, "Standard deviation of the random values")
      ->capture_default_str();
  cmd->add_option("--seed", flags->options.seed, "Random seed")
      ->check(IntegerIn(0, std::numeric_limits<uint64_t>::max()))
      ->capture_default_str();
  cmd->add_option("-o,--output", flags->output, "Output .gguf path")->required();
  cmd->callback([flags] { RunMakeLora(*flags); });
}

void RegisterMakeModelCommand(CLI::App& app) {
  auto flags = std::make_shared<MakeModelFlags>();
  CLI::App* cmd =
      app.add_subcommand("make-model", "Write a random-weight GGUF model in a known model's shape");
  std::string shapes;
  for (const std::string& n : ModelShapeNames()) shapes += (shapes.empty() ? "" : "|") + n;
  cmd->add_option("--shape", flags->shape, "Model shape: " + shapes)->required();
  cmd->add_option("--type", flags->type,
                  "Weight type: " + WeightTypeNames() +
                      " (K-quant rows that are not a multiple of 256 fall back to q5_0 / q5_1 / q8_0 / "
                      "iq4_nl for q4_k / q5_k / q6_k / q2_k, q3_k and iq4_xs, as llama.cpp's)")
      ->capture_default_str();
  cmd->add_option("--vocab-from", flags->vocab_from, "Copy the tokenizer from this GGUF file")
      ->check(CLI::ExistingFile);
  cmd->add_option("--seed", flags->seed, "Random seed")
      ->check(IntegerIn(0, std::numeric_limits<uint64_t>::max()))
      ->capture_default_str();
  cmd->add_option("-o,--output", flags->output, "Output .gguf path")->required();
  cmd->callback([flags] { RunMakeModel(*flags); });
}

}  // namespace lockstep::cli
