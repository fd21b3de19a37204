#include "model/model.h"

#include "model/bert_encoder.h"
#include "model/transformer.h"

namespace lockstep {

Result<std::unique_ptr<Model>> Model::Load(std::shared_ptr<const GgufFile> file,
                                           const ModelLoadOptions& options) {
  if (file == nullptr) return InvalidArgument("Model::Load: no file");
  Kernels kernels;
  if (options.kernels != nullptr) {
    kernels = *options.kernels;
  } else {
    LOCKSTEP_ASSIGN_OR_RETURN(kernels, ChooseKernelsForThisCpu());
  }
  LOCKSTEP_ASSIGN_OR_RETURN(ModelConfig config, ModelConfig::FromGguf(*file));
  LOCKSTEP_ASSIGN_OR_RETURN(
      ModelWeights weights,
      ModelWeights::Bind(*file, config, options.pack_weights ? options.pack_threads : -1));
  Classifier classifier;
  LOCKSTEP_ASSIGN_OR_RETURN(classifier, Classifier::FromGguf(*file, config));
  if (!options.classifier_tokens.empty()) {
    if (!classifier.empty()) {
      return InvalidArgument(file->path() +
                             ": the file has its own classifier head (cls.output.weight); classifier tokens "
                             "are for models without one");
    }
    LOCKSTEP_ASSIGN_OR_RETURN(classifier,
                              Classifier::FromOutputRows(weights.output, options.classifier_tokens, config));
  }
  const bool encoder = config.architecture == "bert";
  if (encoder && !options.lora_paths.empty()) {
    return Unimplemented(file->path() + ": LoRA adapters are not supported for bert");
  }
  std::vector<LoraAdapter> adapters;
  for (const std::string& path : options.lora_paths) {
    LOCKSTEP_ASSIGN_OR_RETURN(LoraAdapter adapter, LoraAdapter::Load(path, *file, config));
    adapters.push_back(std::move(adapter));
  }
  std::unique_ptr<Model> model;
  if (encoder) {
    model = std::make_unique<BertEncoder>(std::move(file), std::move(config), std::move(weights), kernels);
  } else {
    model = std::make_unique<Transformer>(std::move(file), std::move(config), std::move(weights), kernels);
  }
  model->lora_adapters_ = std::move(adapters);
  model->classifier_ = std::move(classifier);
  return model;
}

KvLayout Model::MakeKvLayout(KvDtype dtype, int32_t block_tokens) const {
  KvLayout kv;
  kv.n_layer = static_cast<int32_t>(config().n_layer);
  kv.n_kv_head = static_cast<int32_t>(config().n_head_kv);
  kv.head_dim = static_cast<int32_t>(config().head_dim);
  kv.value_dim = static_cast<int32_t>(config().value_dim);
  kv.block_tokens = block_tokens;
  kv.dtype = dtype;
  return kv;
}

}  // namespace lockstep
