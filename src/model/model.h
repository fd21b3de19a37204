// Model: a Llama-family transformer (architectures `llama` and `qwen2`) loaded from a GGUF file, and its
// forward pass over a ragged Batch (model/batch.h). Weights are borrowed from the GgufFile's mapping, which
// the Model keeps alive. Forward is engine-thread only (it reuses internal scratch buffers); the config is
// immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/batch.h"
#include "model/classifier.h"
#include "model/lora_adapter.h"
#include "model/model_config.h"
#include "tensor/kernels.h"

namespace lockstep {

class ThreadPool;

struct ModelLoadOptions {
  // Repack the quantized matrices for the fast int8 kernels (ModelWeights). Costs load time and memory
  // (about the size of the quantized weights); turn off only to validate a file without running it.
  bool pack_weights = true;
  // Threads that repack (0: one per hardware thread, at most 8).
  int pack_threads = 0;
  // The kernel table the model runs with (copied); null: ChooseKernelsForThisCpu() (the best level this CPU
  // runs, or $LOCKSTEP_CPU's; an unavailable one fails the load).
  const Kernels* kernels = nullptr;
  // deepseek2: run multi-head latent attention in its decompressed form (per-head keys and values in the KV
  // cache, n_head x (head_dim + value_dim) floats a position and layer) instead of the absorbed one (the
  // latent, rope_dim + 2 kv_lora_rank; model/mla.h). For comparisons and tests.
  bool decompressed_mla = false;
  // LoRA adapter files (model/lora_adapter.h), checked against the model; index i is adapter i of
  // Model::lora_adapters() and of SequenceKv::lora_scales.
  std::vector<std::string> lora_paths{};
  // A classifier head of these tokens' rows of the output matrix (model/classifier.h; e.g. the ids of "yes"
  // and "no" for a plain causal LM used as a reranker). Empty: the file's cls.output head, if any. A file
  // with its own head refuses them (InvalidArgument).
  std::vector<int32_t> classifier_tokens{};  // {}: designated initializers may leave it out (GCC 12)
};

// Where Model::Forward writes its outputs, each in the order of the rows that want it.
struct ForwardOutputs {
  std::span<float> logits;      // Batch::LogitRows() x n_vocab floats
  std::span<float> embeddings;  // Batch::EmbeddingRows() x n_embd floats (BatchRow::wants_embedding)
};

class Model {
 public:
  // Validates architecture, hyper-parameters and every tensor (name, shape, type); the error lists all that
  // is missing or wrong.
  static Result<std::unique_ptr<Model>> Load(std::shared_ptr<const GgufFile> file,
                                             const ModelLoadOptions& options = {});
  virtual ~Model() = default;

  virtual const ModelConfig& config() const = 0;
  // The kernels its forward pass runs (tensor/kernels.h).
  virtual const Kernels& kernels() const = 0;
  const GgufFile& file() const { return *file_; }
  // The KV layout of the layers that store K/V (ModelConfig::StoresKv), with per-layer shapes when they
  // differ (Gemma 4).
  KvLayout MakeKvLayout(KvDtype dtype, int32_t block_tokens = 16) const;
  // The LoRA adapters loaded with the model (ModelLoadOptions::lora_paths), in order.
  std::span<const LoraAdapter> lora_adapters() const { return lora_adapters_; }
  // The sequence-classification head (the file's cls.output, or ModelLoadOptions::classifier_tokens' rows);
  // null when the model has none (it cannot rank).
  const Classifier* classifier() const { return classifier_.empty() ? nullptr : &classifier_; }

  // One forward pass over `batch` (see the contract in model/batch.h), writing the logits and embeddings
  // its rows ask for. Rows are independent: a row's outputs are bit-identical whatever other rows share the
  // batch.
  virtual Status Forward(const Batch& batch, const KvLayout& kv, const ForwardOutputs& outputs,
                         ThreadPool& pool) = 0;
  // The same for a batch that wants logits only: LogitRows() x n_vocab floats.
  Status Forward(const Batch& batch, const KvLayout& kv, std::span<float> logits, ThreadPool& pool) {
    return Forward(batch, kv, ForwardOutputs{logits, {}}, pool);
  }

 protected:
  explicit Model(std::shared_ptr<const GgufFile> file) : file_(std::move(file)) {}
  std::shared_ptr<const GgufFile> file_;
  std::vector<LoraAdapter> lora_adapters_;
  Classifier classifier_;
};

}  // namespace lockstep
