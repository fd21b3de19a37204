// `lockstep make-model`: writes a random-weight model in a known model's real shape (model/model_builder.h).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "gguf/tensor_type.h"
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

void RunMakeModel(const MakeModelFlags& flags) {
  MakeModelOptions options;
  options.shape = ValueOrDie(FindModelShape(flags.shape));
  const TensorType type = ValueOrDie(ParseTensorType(flags.type));
  if (type != TensorType::kF32 && type != TensorType::kF16 && type != TensorType::kBF16 &&
      type != TensorType::kQ8_0 && type != TensorType::kQ4_0) {
    Fail("--type " + flags.type + " is not supported; use f32, f16, bf16, q8_0 or q4_0");
  }
  options.type = type;
  options.vocab_from = flags.vocab_from;
  options.seed = flags.seed;
  const Status status = WriteRandomModel(options, flags.output);
  if (!status.ok()) Fail(status);
  std::fprintf(stderr, "wrote %s (%s, %s)\n", flags.output.c_str(), flags.shape.c_str(), flags.type.c_str());
}

}  // namespace

void RegisterMakeModelCommand(CLI::App& app) {
  auto flags = std::make_shared<MakeModelFlags>();
  CLI::App* cmd =
      app.add_subcommand("make-model", "Write a random-weight GGUF model in a known model's shape");
  std::string shapes;
  for (const std::string& n : ModelShapeNames()) shapes += (shapes.empty() ? "" : "|") + n;
  cmd->add_option("--shape", flags->shape, "Model shape: " + shapes)->required();
  cmd->add_option("--type", flags->type, "Weight type: f32|f16|bf16|q8_0|q4_0")->capture_default_str();
  cmd->add_option("--vocab-from", flags->vocab_from, "Copy the tokenizer from this GGUF file")
      ->check(CLI::ExistingFile);
  cmd->add_option("--seed", flags->seed, "Random seed")->capture_default_str();
  cmd->add_option("-o,--output", flags->output, "Output .gguf path")->required();
  cmd->callback([flags] { RunMakeModel(*flags); });
}

}  // namespace lockstep::cli
