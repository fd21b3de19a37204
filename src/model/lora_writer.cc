#include "model/lora_writer.h"

#include <cmath>

#include "gguf/gguf_writer.h"
#include "model/lora_adapter.h"
#include "model/model_config.h"
#include "tensor/dequantize.h"

namespace lockstep {
namespace {

// Uniform values in [-sqrt(3) std, sqrt(3) std] from a splitmix64 stream seeded per tensor.
class UniformStream {
 public:
  explicit UniformStream(uint64_t seed) : state_(seed) {}
  float Next(float stddev) {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const double u = double(z >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    return float((2 * u - 1) * std::sqrt(3.0) * stddev);
  }

 private:
  uint64_t state_;
};

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

Status AddRandomTensor(GgufWriter& writer, const std::string& name, int64_t in, int64_t rows,
                       const MakeLoraOptions& o) {
  UniformStream stream(o.seed ^ Fnv1a(name));
  std::vector<float> row(static_cast<size_t>(in));
  const size_t row_bytes = RowBytes(o.type, in);
  std::vector<std::byte> data(row_bytes * size_t(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& x : row) x = stream.Next(o.weight_std);
    QuantizeRow(o.type, row.data(), data.data() + size_t(r) * row_bytes, in);
  }
  return writer.AddTensor(name, o.type, {in, rows}, data);
}

}  // namespace

Status WriteRandomLora(const GgufFile& model, const MakeLoraOptions& o, const std::string& path) {
  if (o.rank < 1) return InvalidArgument("LoRA rank must be >= 1, not " + std::to_string(o.rank));
  if (o.type != TensorType::kF32 && o.type != TensorType::kF16 && o.type != TensorType::kBF16) {
    return InvalidArgument("LoRA tensors are f32, f16 or bf16, not " + std::string(TensorTypeName(o.type)));
  }
  LOCKSTEP_ASSIGN_OR_RETURN(const ModelConfig config, ModelConfig::FromGguf(model));
  GgufWriter writer;
  writer.Set("general.architecture", GgufValue::String(config.file_architecture));
  writer.Set("general.type", GgufValue::String("adapter"));
  writer.Set("general.name", GgufValue::String("lockstep random LoRA"));
  writer.Set("adapter.type", GgufValue::String("lora"));
  writer.Set("adapter.lora.alpha", GgufValue::Float32(o.alpha));
  std::vector<std::string> bases;
  for (const std::string& target : o.targets) {
    if (target == "output") {
      bases.push_back(LoraBaseTensorName(0, LoraTarget::kOutput));
      continue;
    }
    int32_t t = 0;
    while (t < kLoraLayerTargets && LoraBaseTensorName(0, LoraTarget(t)) != "blk.0." + target + ".weight")
      ++t;
    if (t == kLoraLayerTargets) {
      return InvalidArgument("unknown LoRA target '" + target +
                             "' (attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down, output)");
    }
    for (int32_t layer = 0; layer < config.n_layer; ++layer)
      bases.push_back(LoraBaseTensorName(layer, LoraTarget(t)));
  }
  for (const std::string& base : bases) {
    const GgufTensorInfo* w = model.FindTensor(base);
    if (w == nullptr || w->dims.size() != 2) {
      return InvalidArgument("the model has no separate matrix " + base + " to adapt");
    }
    LOCKSTEP_RETURN_IF_ERROR(AddRandomTensor(writer, base + ".lora_a", w->dims[0], o.rank, o));
    LOCKSTEP_RETURN_IF_ERROR(AddRandomTensor(writer, base + ".lora_b", o.rank, w->dims[1], o));
  }
  return writer.WriteFile(path);
}

}  // namespace lockstep
