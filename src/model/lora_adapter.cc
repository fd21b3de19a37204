#include "model/lora_adapter.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "tensor/dequantize.h"
#include "tensor/thread_pool.h"

namespace lockstep {
namespace {

constexpr const char* kLayerTargetNames[kLoraLayerTargets] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                                              "ffn_gate", "ffn_up", "ffn_down"};

// Multiply-adds below which a LoRA pair's products run on the calling thread.
constexpr int64_t kInlineLoraWork = 1 << 18;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Slot {
  int32_t layer = 0;
  LoraTarget target = LoraTarget::kQ;
};

// (layer, target) of an adaptable base tensor name; nullopt for any other name.
std::optional<Slot> ParseBaseName(const std::string& name, int64_t n_layer) {
  if (name == "output.weight") return Slot{0, LoraTarget::kOutput};
  if (name.rfind("blk.", 0) != 0 || !EndsWith(name, ".weight")) return std::nullopt;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return std::nullopt;
  int64_t layer = 0;
  for (size_t i = 4; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9' || layer > n_layer) return std::nullopt;
    layer = layer * 10 + (name[i] - '0');
  }
  if (layer >= n_layer) return std::nullopt;
  const std::string kind = name.substr(dot + 1, name.size() - dot - 1 - std::strlen(".weight"));
  for (int32_t t = 0; t < kLoraLayerTargets; ++t) {
    if (kind == kLayerTargetNames[t]) return Slot{int32_t(layer), LoraTarget(t)};
  }
  return std::nullopt;
}

// The (in, out) the forward pass uses for the target's matrix.
std::pair<int64_t, int64_t> ExpectedShape(const ModelConfig& c, LoraTarget target) {
  switch (target) {
    case LoraTarget::kQ:
      return {c.n_embd, c.q_dim()};
    case LoraTarget::kK:
    case LoraTarget::kV:
      return {c.n_embd, c.kv_dim()};
    case LoraTarget::kO:
      return {c.q_dim(), c.n_embd};
    case LoraTarget::kGate:
    case LoraTarget::kUp:
      return {c.n_embd, c.n_ff};
    case LoraTarget::kDown:
      return {c.n_ff, c.n_embd};
    case LoraTarget::kOutput:
      return {c.n_embd, c.n_vocab};
  }
  return {0, 0};
}

bool IsFloatType(TensorType type) {
  return type == TensorType::kF32 || type == TensorType::kF16 || type == TensorType::kBF16;
}

std::vector<float> ToFloats(const GgufTensorInfo& t) {
  const int64_t in = t.dims[0];
  std::vector<float> out(size_t(t.elements()));
  const size_t row_bytes = RowBytes(t.type, in);
  for (int64_t r = 0; r < t.rows(); ++r)
    DequantizeRow(t.type, t.data + size_t(r) * row_bytes, out.data() + r * in, in);
  return out;
}

std::string Dims(const GgufTensorInfo& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
  return s + "]";
}

}  // namespace

std::string LoraBaseTensorName(int32_t layer, LoraTarget target) {
  if (target == LoraTarget::kOutput) return "output.weight";
  return "blk." + std::to_string(layer) + "." + kLayerTargetNames[int32_t(target)] + ".weight";
}

Result<LoraAdapter> LoraAdapter::Load(const std::string& path, const GgufFile& model,
                                      const ModelConfig& config) {
  auto file = GgufFile::Open(path);
  if (!file.ok()) return file.status().WithContext("LoRA adapter " + path);
  return FromGguf(**file, model, config);
}

Result<LoraAdapter> LoraAdapter::FromGguf(const GgufFile& file, const GgufFile& model,
                                          const ModelConfig& config) {
  const std::string where = "LoRA adapter " + file.path() + ": ";
  auto text = [&](const char* key) -> Result<std::string> {
    auto value = file.GetStringOr(key, "");
    if (!value.ok()) return InvalidArgument(where + value.status().message());
    return *value;
  };
  LOCKSTEP_ASSIGN_OR_RETURN(const std::string general_type, text("general.type"));
  if (general_type.empty()) return InvalidArgument(where + "has no general.type (expected \"adapter\")");
  if (general_type != "adapter") {
    return InvalidArgument(where + "general.type is \"" + general_type + "\", expected \"adapter\"");
  }
  LOCKSTEP_ASSIGN_OR_RETURN(const std::string adapter_type, text("adapter.type"));
  if (adapter_type != "lora") {
    return InvalidArgument(where + "adapter.type is \"" + adapter_type + "\", expected \"lora\"");
  }
  LOCKSTEP_ASSIGN_OR_RETURN(const std::string arch, text("general.architecture"));
  if (arch != config.file_architecture) {
    return InvalidArgument(where + "general.architecture is \"" + arch + "\", the model's is \"" +
                           config.file_architecture + "\"");
  }
  if (config.kv_lora_rank > 0 || config.n_layer_dense_lead > 0) {
    return Unimplemented(where + "LoRA adapters for deepseek2 (latent attention) are not supported");
  }
  auto alpha = file.GetFloatOr("adapter.lora.alpha", 0.0);
  if (!alpha.ok()) return InvalidArgument(where + alpha.status().message());
  if (!std::isfinite(*alpha)) return InvalidArgument(where + "adapter.lora.alpha is not finite");

  LoraAdapter adapter;
  adapter.path_ = file.path();
  adapter.alpha_ = float(*alpha);
  adapter.n_layer_ = int32_t(config.n_layer);
  adapter.matrices_.resize(size_t(config.n_layer) * kLoraLayerTargets + 1);

  // Pair the halves by base name, in file order.
  struct Pair {
    std::string base;
    const GgufTensorInfo* a = nullptr;
    const GgufTensorInfo* b = nullptr;
  };
  std::vector<Pair> pairs;
  std::string problems;
  auto problem = [&](const std::string& tensor, const std::string& what) {
    problems += (problems.empty() ? "" : "; ") + ("tensor '" + tensor + "' " + what);
  };
  for (const GgufTensorInfo& t : file.tensors()) {
    const bool is_a = EndsWith(t.name, ".lora_a"), is_b = EndsWith(t.name, ".lora_b");
    if (!is_a && !is_b) {
      if (!EndsWith(t.name, "_norm.weight")) problem(t.name, "is neither a .lora_a nor a .lora_b tensor");
      continue;  // norm vectors: skipped, as llama.cpp does
    }
    const std::string base = t.name.substr(0, t.name.size() - 7);
    Pair* pair = nullptr;
    for (Pair& p : pairs) pair = p.base == base ? &p : pair;
    if (pair == nullptr) pair = &pairs.emplace_back(Pair{base});
    const GgufTensorInfo*& half = is_a ? pair->a : pair->b;
    if (half != nullptr) problem(t.name, "appears twice");
    half = &t;
  }
  for (const Pair& p : pairs) {
    if (p.a == nullptr || p.b == nullptr) {
      problem(p.base, std::string("has a .") + (p.a ? "lora_a" : "lora_b") + " but no ." +
                          (p.a ? "lora_b" : "lora_a"));
      continue;
    }
    const GgufTensorInfo* base = model.FindTensor(p.base);
    if (base == nullptr) {
      problem(p.base, "does not exist in the base model (an adapter for another model?)");
      continue;
    }
    const std::optional<Slot> slot = ParseBaseName(p.base, config.n_layer);
    if (!slot) {
      problem(p.base,
              "is not adaptable (lockstep adapts attn_q/k/v, attn_output, ffn_gate/up/down and output)");
      continue;
    }
    bool ok = true;
    for (const GgufTensorInfo* half : {p.a, p.b}) {
      if (!IsFloatType(half->type)) {
        problem(half->name,
                "has type " + std::string(TensorTypeName(half->type)) +
                    "; LoRA pairs must be F32, F16 or BF16 (quantized adapters are not supported)");
        ok = false;
      } else if (half->dims.size() != 2) {
        problem(half->name, "has shape " + Dims(*half) + ", expected 2 dimensions");
        ok = false;
      }
    }
    if (!ok) continue;
    const auto [in, out] = ExpectedShape(config, slot->target);
    const int64_t rank = p.b->dims[0];
    if (p.a->dims[1] != rank || rank < 1) {
      problem(p.base, "has rank " + std::to_string(p.a->dims[1]) + " in lora_a " + Dims(*p.a) + " but " +
                          std::to_string(rank) + " in lora_b " + Dims(*p.b));
      continue;
    }
    if (p.a->dims[0] != base->dims[0] || p.b->dims[1] != base->rows()) {
      problem(p.base, "lora_a " + Dims(*p.a) + " and lora_b " + Dims(*p.b) + " do not fit the base matrix " +
                          Dims(*base) + " (expected [" + std::to_string(base->dims[0]) +
                          ", rank] and [rank, " + std::to_string(base->rows()) + "])");
      continue;
    }
    if (p.a->dims[0] != in || p.b->dims[1] != out) {
      problem(p.base, "is a fused matrix " + Dims(*base) + "; lockstep adapts only separate matrices");
      continue;
    }
    const size_t index = slot->target == LoraTarget::kOutput
                             ? adapter.matrices_.size() - 1
                             : size_t(slot->layer) * kLoraLayerTargets + size_t(slot->target);
    LoraMatrices& m = adapter.matrices_[index];
    m.in = in;
    m.out = out;
    m.rank = rank;
    m.a = ToFloats(*p.a);
    m.b = ToFloats(*p.b);
    ++adapter.adapted_;
  }
  if (!problems.empty()) return InvalidArgument(where + problems);
  if (adapter.adapted_ == 0) return InvalidArgument(where + "holds no .lora_a/.lora_b pairs");
  return adapter;
}

const LoraMatrices* LoraAdapter::Find(int32_t layer, LoraTarget target) const {
  const size_t index = target == LoraTarget::kOutput ? matrices_.size() - 1
                                                     : size_t(layer) * kLoraLayerTargets + size_t(target);
  const LoraMatrices& m = matrices_[index];
  return m.rank > 0 ? &m : nullptr;
}

LoraApplier::LoraApplier() : inline_pool_(std::make_unique<ThreadPool>(1)) {}
LoraApplier::~LoraApplier() = default;

Status LoraApplier::Begin(std::span<const LoraAdapter> adapters, const Batch& batch) {
  adapters_ = adapters;
  active_ = false;
  batch_rows_ = int64_t(batch.rows.size());
  const size_t n = adapters.size();
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const std::span<const float> scales = batch.sequences[s].lora_scales;
    if (scales.size() > n) {
      return InvalidArgument("sequence " + std::to_string(s) + " has " + std::to_string(scales.size()) +
                             " LoRA scales; " + std::to_string(n) + " adapters are loaded");
    }
    for (float x : scales) {
      if (!std::isfinite(x))
        return InvalidArgument("sequence " + std::to_string(s) + ": LoRA scale not finite");
    }
  }
  if (n == 0) return Status::Ok();
  const size_t rows = batch.rows.size();
  scales_.assign(rows * n, 0.0f);
  logit_rows_.clear();
  for (size_t r = 0; r < rows; ++r) {
    const std::span<const float> scales = batch.sequences[size_t(batch.rows[r].sequence)].lora_scales;
    for (size_t k = 0; k < scales.size(); ++k) {
      scales_[r * n + k] = scales[k];
      active_ = active_ || scales[k] != 0;
    }
    if (batch.rows[r].wants_logits) logit_rows_.push_back(int64_t(r));
  }
  return Status::Ok();
}

void LoraApplier::Apply(int32_t layer, LoraTarget target, const float* x, int64_t rows,
                        const int64_t* row_map, float* y, const MatMulKernels& kernels, ThreadPool& pool) {
  if (!active_ || rows == 0) return;
  if (target == LoraTarget::kOutput) row_map = logit_rows_.data();
  const size_t n = adapters_.size();
  for (size_t k = 0; k < n; ++k) {
    const LoraMatrices* m = adapters_[k].Find(layer, target);
    if (m == nullptr) continue;
    selected_.clear();
    for (int64_t j = 0; j < rows; ++j) {
      const int64_t r = row_map != nullptr ? row_map[j] : j;
      if (scales_[size_t(r) * n + k] != 0) selected_.push_back(j);
    }
    const int64_t count = int64_t(selected_.size());
    if (count == 0) continue;
    // Only the selected rows, gathered (MatMul gives each row the same bits whatever rows share the call).
    const float* in = x;
    if (count < rows) {
      if (x_.size() < size_t(count * m->in)) x_.resize(size_t(count * m->in));
      for (int64_t i = 0; i < count; ++i) {
        std::memcpy(x_.data() + i * m->in, x + selected_[size_t(i)] * m->in, sizeof(float) * size_t(m->in));
      }
      in = x_.data();
    }
    if (t_.size() < size_t(count * m->rank)) t_.resize(size_t(count * m->rank));
    if (u_.size() < size_t(count * m->out)) u_.resize(size_t(count * m->out));
    ThreadPool& run = count * m->rank * (m->in + m->out) < kInlineLoraWork ? *inline_pool_ : pool;
    MatMul(kernels, m->A(), in, count, t_.data(), run);
    MatMul(kernels, m->B(), t_.data(), count, u_.data(), run);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t j = selected_[size_t(i)];
      const int64_t r = row_map != nullptr ? row_map[j] : j;
      const float s = adapters_[k].EffectiveScale(scales_[size_t(r) * n + k], *m);
      float* yj = y + j * m->out;
      const float* u = u_.data() + i * m->out;
      for (int64_t o = 0; o < m->out; ++o) yj[o] += s * u[o];
    }
  }
}

}  // namespace lockstep
