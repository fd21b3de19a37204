// Helpers for the model tests: random tiny models written once per test process into a temp dir, loading,
// and running token sequences through Model::Forward with LocalKv blocks.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/tensor_type.h"
#include "model/local_kv.h"
#include "model/model.h"
#include "model/model_builder.h"
#include "tensor/thread_pool.h"

namespace lockstep::testing {

// A fresh directory under one per-process scratch root that is deleted when the test process exits.
std::string ScratchDir(const std::string& prefix);

// Path of a random model of `shape` ("tiny", "tiny-qwen2", "tiny-256") and weight types (make-model's --type
// names: "q8_0", "q4_k_m", ...), created on first use; the second form names one tensor type.
std::string TinyModelPath(const std::string& shape, const std::string& weight_types, uint64_t seed = 7);
std::string TinyModelPath(const std::string& shape, TensorType type, uint64_t seed = 7);

// Edits of a model file, for the error and architecture tests: metadata set or dropped, tensors dropped or
// given transposed dims.
struct FileEdit {  // {}: designated initializers may leave any out (GCC 12's -Wmissing-field-initializers)
  std::set<std::string> drop_keys{};
  std::vector<std::pair<std::string, GgufValue>> set_keys{};
  std::set<std::string> drop_tensors{};
  std::string reshape_tensor{};  // its first two dims swapped
  // (existing tensor, new name): a copy of the first added under the second (a tensor the shape lacks).
  std::vector<std::pair<std::string, std::string>> copy_tensors{};
};
// `name` as a gtest parameter name: every character but letters and digits becomes '_'.
std::string TestParamName(std::string name);

// The GGUF file at `path` rebuilt in memory with the edits (named "edited.gguf").
Result<std::shared_ptr<const GgufFile>> EditedFile(const std::string& path, const FileEdit& edit);

struct LoadedModel {
  std::shared_ptr<const GgufFile> file;
  std::unique_ptr<Model> model;
};
LoadedModel LoadModelOrDie(const std::string& path);

// Runs `tokens` of one sequence in steps of `chunk` rows (all rows want logits); returns [tokens][n_vocab].
// `lora_scales`: the sequence's LoRA adapter scales (SequenceKv::lora_scales).
std::vector<std::vector<float>> RunSequence(Model& model, const std::vector<int32_t>& tokens, int chunk,
                                            KvDtype dtype, ThreadPool& pool,
                                            std::span<const float> lora_scales = {});

}  // namespace lockstep::testing
