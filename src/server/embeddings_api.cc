#include "server/embeddings_api.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "server/request_fields.h"

namespace lockstep::server {
namespace {

// The inputs as embedding requests of the server's pooling. `keep_last` > 0: only each input's last that many
// tokens (vLLM's truncate_prompt_tokens, TEI's truncate from the left); `keep_first` > 0: its first that many
// (TEI's truncate from the right). An input that is empty, or longer than the context when not truncated, is
// refused naming it.
Parsed<EmbeddingRequest> MakeRequest(std::vector<PromptInput> inputs, const std::string& param,
                                     const ApiContext& ctx, int64_t keep_last, int64_t keep_first) {
  EmbeddingRequest req;
  req.spec.base.embedding = ctx.pooling;
  req.spec.base.max_tokens = 0;
  // As many inputs in the engine at once as it runs; the rest follow as those finish (so a batch of 1000,
  // what retrieval libraries send, neither fills the queue nor is refused for it).
  req.spec.max_in_flight = std::max(1, ctx.max_seqs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int32_t>& ids = inputs[i].ids;
    const std::string name = inputs.size() > 1 ? param + "[" + std::to_string(i) + "]" : param;
    if (keep_last > 0 && int64_t(ids.size()) > keep_last) ids.erase(ids.begin(), ids.end() - keep_last);
    if (keep_first > 0 && int64_t(ids.size()) > keep_first) ids.resize(size_t(keep_first));
    if (ids.empty()) return ApiError::Field(param, name + " is empty (no token to embed)");
    if (int64_t(ids.size()) > ctx.max_context) {
      return ApiError{
          OutOfRange(name + " is " + std::to_string(ids.size()) + " tokens, beyond the context of " +
                     std::to_string(ctx.max_context) + " tokens"),
          param};
    }
    req.spec.prompts.push_back(std::move(ids));
  }
  return req;
}

// The required inputs field `param` of a body read by `f` (its first failure, or `missing` when the field is
// absent) as embedding requests (MakeRequest).
Parsed<EmbeddingRequest> ReadInputs(FieldReader& f, const char* param, const std::string& missing,
                                    const ApiContext& ctx, int64_t keep_last, int64_t keep_first) {
  const nlohmann::json* input = f.Raw(param);
  if (input == nullptr && !f.failed()) f.Fail(param, missing);
  if (f.failed()) return f.error();
  auto inputs = ReadPromptInputs(*input, ctx, param, kMaxEmbeddingInputs);
  if (!inputs.ok()) return inputs.error;
  return MakeRequest(std::move(*inputs.value), param, ctx, keep_last, keep_first);
}

}  // namespace

Parsed<EmbeddingRequest> ParseOpenAiEmbeddingRequest(const std::string& body, const ApiContext& ctx) {
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  FieldReader f(*json.value);
  if (auto unknown = CheckModel(ctx, f.String("model"))) return *unknown;
  const bool base64 = f.Enum("encoding_format", {"float", "base64"}).value_or("float") == "base64";
  const int normalize = int(f.Int("embd_normalize", -1, 64).value_or(2));
  const int64_t keep_last = f.Int("truncate_prompt_tokens", 1, INT32_MAX).value_or(0);
  f.String("user");
  const int64_t dimensions = f.Int("dimensions", 1, ctx.embedding_length).value_or(0);
  auto req = ReadInputs(f, "input", "input is required", ctx, keep_last, 0);
  if (!req.ok()) return req;
  req.value->normalize = normalize;
  req.value->dimensions = dimensions;
  req.value->base64 = base64;
  return req;
}

Parsed<EmbeddingRequest> ParseTeiEmbedRequest(const std::string& body, const ApiContext& ctx) {
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  FieldReader f(*json.value);
  const bool normalize = f.Bool("normalize").value_or(true);
  const bool truncate = f.Bool("truncate").value_or(false);
  // TEI spells the direction "Right" / "Left" in its schema and accepts the lower case too.
  const std::string direction =
      f.Enum("truncation_direction", {"right", "left", "Right", "Left"}).value_or("right");
  f.Unsupported("prompt_name", "prompt names (sentence-transformers' configured prompts) are not supported");
  const int64_t dimensions = f.Int("dimensions", 1, ctx.embedding_length).value_or(0);
  const bool from_left = direction == "left" || direction == "Left";
  const int64_t keep = truncate ? ctx.max_context : 0;
  auto req = ReadInputs(f, "inputs", "inputs is required", ctx, from_left ? keep : 0, from_left ? 0 : keep);
  if (!req.ok()) return req;
  req.value->normalize = normalize ? 2 : -1;
  req.value->dimensions = dimensions;
  return req;
}

Parsed<EmbeddingRequest> ParseLlamaCppEmbeddingRequest(const std::string& body, const ApiContext& ctx) {
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  FieldReader f(*json.value);
  const int normalize = int(f.Int("embd_normalize", -1, 64).value_or(2));
  const char* param = f.Raw("input") != nullptr ? "input" : "content";  // llama.cpp reads input first
  auto req = ReadInputs(f, param, "\"input\" or \"content\" must be provided", ctx, 0, 0);
  if (req.ok()) req.value->normalize = normalize;
  return req;
}

std::vector<std::vector<float>> FinishedEmbeddings(const EmbeddingRequest& req, GenerationJob& job) {
  std::vector<std::vector<float>> out;
  for (const ChoiceState& choice : job.choices()) {
    std::vector<float> values = choice.last.embedding;
    if (req.dimensions > 0 && int64_t(values.size()) > req.dimensions) values.resize(size_t(req.dimensions));
    NormalizeEmbedding(values, req.normalize);
    out.push_back(std::move(values));
  }
  return out;
}

nlohmann::json OpenAiEmbeddingResponse(const EmbeddingRequest& req,
                                       const std::vector<std::vector<float>>& embeddings, int prompt_tokens,
                                       const ApiContext& ctx) {
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < embeddings.size(); ++i) {
    nlohmann::json values =
        req.base64 ? nlohmann::json(Base64Floats(embeddings[i])) : nlohmann::json(embeddings[i]);
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(values)}});
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", ctx.model_id},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

nlohmann::json TeiEmbedResponse(const std::vector<std::vector<float>>& embeddings) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::vector<float>& values : embeddings) out.push_back(values);
  return out;
}

nlohmann::json LlamaCppEmbeddingResponse(const std::vector<std::vector<float>>& embeddings) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < embeddings.size(); ++i) {
    out.push_back({{"index", i}, {"embedding", nlohmann::json::array({embeddings[i]})}});
  }
  return out;
}

void NormalizeEmbedding(std::span<float> values, int norm) {
  if (norm < 0) return;
  double sum = 0;
  if (norm == 0) {  // the largest magnitude scaled to 32760 (the int16 range)
    for (float v : values) sum = std::max(sum, double(std::abs(v)));
    sum /= 32760.0;
  } else if (norm == 2) {
    for (float v : values) sum += double(v) * double(v);
    sum = std::sqrt(sum);
  } else {  // p-norm (1: taxicab)
    for (float v : values) sum += std::pow(std::abs(double(v)), norm);
    sum = std::pow(sum, 1.0 / norm);
  }
  const double scale = sum > 0 ? 1.0 / sum : 0.0;
  for (float& v : values) v = float(double(v) * scale);
}

// Hand-written: base64 is a few lines, and the libraries that have it here (OpenSSL, Beast's detail
// namespace) are not dependencies of the server layer.
std::string Base64Floats(std::span<const float> values) {
  static_assert(std::endian::native == std::endian::little, "float32 bytes are sent little-endian");
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const size_t n = values.size() * sizeof(float);
  std::vector<unsigned char> bytes(n);
  if (n > 0) std::memcpy(bytes.data(), values.data(), n);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t b0 = bytes[i];
    const uint32_t b1 = i + 1 < n ? bytes[i + 1] : 0;
    const uint32_t b2 = i + 2 < n ? bytes[i + 2] : 0;
    const uint32_t group = b0 << 16 | b1 << 8 | b2;
    out += kAlphabet[(group >> 18) & 63];
    out += kAlphabet[(group >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(group >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[group & 63] : '=';
  }
  return out;
}

}  // namespace lockstep::server
