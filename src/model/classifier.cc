#include "model/classifier.h"

#include <algorithm>
#include <cmath>

#include "tensor/dequantize.h"

namespace lockstep {
namespace {

// Largest classifier accepted (llama.cpp's classifiers have a handful of labels).
constexpr int64_t kMaxClasses = 4096;

Status DequantizeRows(TensorType type, const std::byte* data, int64_t rows, int64_t n,
                      std::vector<float>& out, const std::string& name) {
  if (!CanDequantize(type) || n % GetTensorTypeTraits(type).block_elements != 0) {
    return InvalidArgument(name + " has type " + std::string(TensorTypeName(type)) +
                           ", which cannot be read as f32 rows of " + std::to_string(n));
  }
  out.resize(size_t(rows * n));
  const size_t row_bytes = RowBytes(type, n);
  for (int64_t r = 0; r < rows; ++r)
    DequantizeRow(type, data + size_t(r) * row_bytes, &out[size_t(r * n)], n);
  return Status::Ok();
}

}  // namespace

Result<Classifier> Classifier::FromGguf(const GgufFile& file, const ModelConfig& config) {
  Classifier c;
  const GgufTensorInfo* w = file.FindTensor("cls.output.weight");
  if (w == nullptr) return c;
  if (w->dims.size() != 2 || w->dims[0] != config.n_embd || w->dims[1] < 1 || w->dims[1] > kMaxClasses) {
    std::string dims;
    for (int64_t d : w->dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    return InvalidArgument(file.path() + ": cls.output.weight has shape [" + dims + "], expected [" +
                           std::to_string(config.n_embd) +
                           ", n_cls] with 1 <= n_cls <= " + std::to_string(kMaxClasses));
  }
  c.n_cls = w->dims[1];
  c.n_embd = config.n_embd;
  LOCKSTEP_RETURN_IF_ERROR(
      DequantizeRows(w->type, w->data, c.n_cls, c.n_embd, c.weight, file.path() + ": cls.output.weight"));
  if (const GgufTensorInfo* b = file.FindTensor("cls.output.bias")) {
    if (b->dims != std::vector<int64_t>{c.n_cls}) {
      return InvalidArgument(file.path() + ": cls.output.bias must hold " + std::to_string(c.n_cls) +
                             " values (one per row of cls.output.weight)");
    }
    LOCKSTEP_RETURN_IF_ERROR(
        DequantizeRows(b->type, b->data, 1, c.n_cls, c.bias, file.path() + ": cls.output.bias"));
  }
  if (const GgufTensorInfo* dense = file.FindTensor("cls.weight")) {
    const GgufTensorInfo* dense_bias = file.FindTensor("cls.bias");
    const std::vector<int64_t> square = {c.n_embd, c.n_embd}, row = {c.n_embd};
    if (dense->dims != square || dense_bias == nullptr || dense_bias->dims != row) {
      return InvalidArgument(file.path() + ": cls.weight must be [" + std::to_string(c.n_embd) + ", " +
                             std::to_string(c.n_embd) + "] with a cls.bias of " + std::to_string(c.n_embd) +
                             " values (BERT's dense layer before cls.output)");
    }
    LOCKSTEP_RETURN_IF_ERROR(
        DequantizeRows(dense->type, dense->data, c.n_embd, c.n_embd, c.dense, file.path() + ": cls.weight"));
    LOCKSTEP_RETURN_IF_ERROR(DequantizeRows(dense_bias->type, dense_bias->data, 1, c.n_embd, c.dense_bias,
                                            file.path() + ": cls.bias"));
  }
  auto labels = file.GetStringArray("classifier.output_labels");
  if (labels.ok()) c.labels = std::move(labels).value();
  return c;
}

Result<Classifier> Classifier::FromOutputRows(const WeightMatrix& output, std::span<const int32_t> tokens,
                                              const ModelConfig& config) {
  Classifier c;
  c.n_cls = int64_t(tokens.size());
  c.n_embd = config.n_embd;
  c.from_tokens = true;
  c.softcap = config.final_softcap;
  if (tokens.empty() || c.n_cls > kMaxClasses) {
    return InvalidArgument("a token classifier needs 1 to " + std::to_string(kMaxClasses) + " tokens");
  }
  if (output.data == nullptr || output.in != config.n_embd) {
    return InvalidArgument("the model has no output matrix to take classifier rows from");
  }
  c.weight.resize(size_t(c.n_cls * c.n_embd));
  for (int64_t i = 0; i < c.n_cls; ++i) {
    const int32_t t = tokens[size_t(i)];
    if (t < 0 || t >= output.out) {
      return InvalidArgument("classifier token " + std::to_string(t) + " is outside the vocabulary [0, " +
                             std::to_string(output.out) + ")");
    }
    std::vector<float> row;
    LOCKSTEP_RETURN_IF_ERROR(DequantizeRows(output.type,
                                            output.data + size_t(t) * RowBytes(output.type, output.in), 1,
                                            output.in, row, "the output matrix"));
    std::copy(row.begin(), row.end(), c.weight.begin() + i * c.n_embd);
  }
  return c;
}

void Classifier::Apply(std::span<const float> hidden, std::span<float> out) const {
  std::vector<float> dense_out;
  if (!dense.empty()) {
    dense_out.resize(size_t(n_embd));
    for (int64_t r = 0; r < n_embd; ++r) {
      double sum = double(dense_bias[size_t(r)]);
      for (int64_t k = 0; k < n_embd; ++k)
        sum += double(dense[size_t(r * n_embd + k)]) * double(hidden[size_t(k)]);
      dense_out[size_t(r)] = std::tanh(float(sum));
    }
    hidden = dense_out;
  }
  for (int64_t c = 0; c < n_cls; ++c) {
    const float* w = weight.data() + c * n_embd;
    double sum = bias.empty() ? 0.0 : double(bias[size_t(c)]);
    for (int64_t k = 0; k < n_embd; ++k) sum += double(w[k]) * double(hidden[size_t(k)]);
    float logit = float(sum);
    if (softcap > 0) logit = softcap * std::tanh(logit / softcap);
    out[size_t(c)] = logit;
  }
}

double RankScore(std::span<const float> logits) {
  if (logits.empty()) return 0;
  if (logits.size() == 1) return 1.0 / (1.0 + std::exp(-double(logits[0])));
  double max = logits[0];
  for (float l : logits) max = std::max(max, double(l));
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - max);
  return std::exp(double(logits[0]) - max) / sum;
}

}  // namespace lockstep
