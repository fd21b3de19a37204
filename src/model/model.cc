#include "model/model.h"

#include <algorithm>

#include "model/architectures.h"
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
  if (options.decompressed_mla) config.mla_latent_cache = false;
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
  const bool encoder = IsBertEncoder(config.architecture);
  if (encoder && !options.lora_paths.empty()) {
    return Unimplemented(file->path() + ": LoRA adapters are not supported for " + config.architecture);
  }
  if (!config.layer_n_ff.empty() && !options.lora_paths.empty()) {  // gemma4, deci: per-layer widths
    return Unimplemented(file->path() + ": LoRA adapters are not supported for " + config.architecture +
                         " (its layers differ in width)");
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
  const ModelConfig& c = config();
  kv.n_layer = 0;
  // What attention stores (ModelConfig::Cache*: deepseek2's latent, one KV head, in its absorbed form).
  kv.n_kv_head = static_cast<int32_t>(c.CacheKvHeads(0));
  kv.head_dim = static_cast<int32_t>(c.CacheHeadDim(0));
  // Values as wide as keys unless the model says otherwise (deepseek2); per-layer shapes have their own.
  const int64_t value_dim = c.CacheValueDim(0);
  kv.value_dim = value_dim == kv.head_dim ? 0 : static_cast<int32_t>(value_dim);
  kv.block_tokens = block_tokens;
  kv.dtype = dtype;
  kv.recurrent_state_floats = c.RecurrentStateFloats();
  // Layers that store K/V, each with its own shape when they differ (Gemma 4).
  bool mixed = false;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    if (!c.StoresKv(l)) continue;
    ++kv.n_layer;
    const KvLayerShape shape{int32_t(c.CacheKvHeads(l)), int32_t(c.CacheHeadDim(l))};
    mixed = mixed || shape.n_kv_head != kv.n_kv_head || shape.head_dim != kv.head_dim;
    kv.layer_shapes.push_back(shape);
  }
  if (!mixed) {
    kv.layer_shapes.clear();
    return kv;
  }
  kv.value_dim = 0;
  for (const KvLayerShape& s : kv.layer_shapes) {
    kv.n_kv_head = std::max(kv.n_kv_head, s.n_kv_head);
    kv.head_dim = std::max(kv.head_dim, s.head_dim);
  }
  return kv;
}

}  // namespace lockstep
