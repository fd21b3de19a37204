// Request parsing for llama.cpp's POST /completion (responses and /props are in llamacpp_format.cc).
#include "server/llamacpp_api.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "server/request_fields.h"
#include "server/sampler_fields.h"
#include "server/structured_fields.h"

namespace lockstep::server {
// Named, not anonymous: the server is a unity build and the other APIs' files have helpers of these names.
namespace llamacpp_parse {

constexpr size_t kMaxPrompts = 64;
constexpr int kMaxCompletions = 64;     // n_cmpl
constexpr size_t kMaxStops = 16;        // stop strings
constexpr size_t kMaxLogitBias = 1024;  // entries, as the OpenAI routes
constexpr size_t kMaxResponseFields = 64;
constexpr double kMaxBias = 1e6;
constexpr float kBanBias =
    -1e9f;  // llama.cpp's `false`: the token is never sampled (finite, as the sampler asks)

// llama.cpp's samplers that lockstep lacks, and the knobs that only matter beside them (never read: a value
// there changes nothing while the sampler is off).
void ReadAbsentSamplers(FieldReader& f) {
  if (f.Bool("post_sampling_probs").value_or(false)) {
    f.Fail("post_sampling_probs",
           "post_sampling_probs is not supported by this server (n_probs reports the "
           "probabilities of the raw logits)");
  }
  f.Unsupported("image_data", "this server has no multimodal model");
  f.Unsupported("multimodal_data", "this server has no multimodal model");
  // Accepted and ignored (docs/server.md says why each changes nothing here).
  f.Bool("cache_prompt");
  f.Bool("timings_per_token");
  f.Bool("return_progress");
  f.Int("n_keep", -1, INT32_MAX);
  f.Int("n_discard", 0, INT32_MAX);
  f.Int("n_cache_reuse", 0, INT32_MAX);
  f.Int("t_max_prompt_ms", INT64_MIN, INT64_MAX);  // llama.cpp reads it and does nothing with it either
  f.String("model");
  // samplers: lockstep's chain is fixed (generation_settings.samplers says which); type-checked only.
  if (const nlohmann::json* s = f.Raw("samplers"); s != nullptr && !s->is_string())
    f.StringOrList("samplers", 32);
}

void ReadSampling(FieldReader& f, LlamaCppRequest& req) {
  SamplingParams& s = req.spec.base.sampling;
  // temperature <= 0: greedy, as llama.cpp (its n_probs are then still those of the raw logits, as here).
  s.temperature =
      static_cast<float>(std::max(0.0, f.Number("temperature", -100, 100).value_or(s.temperature)));
  s.top_k = static_cast<int32_t>(std::max<int64_t>(0, f.Int("top_k", INT32_MIN, 1 << 30).value_or(s.top_k)));
  // top_p 0 keeps the most likely token only, as llama.cpp's (which keeps min_keep = 1).
  s.top_p = static_cast<float>(std::max(1e-6, f.Number("top_p", 0, 1).value_or(s.top_p)));
  s.min_p = static_cast<float>(f.Number("min_p", 0, 1).value_or(s.min_p));
  s.repetition_penalty = static_cast<float>(
      f.Number("repeat_penalty", 0, 10, /*lo_exclusive=*/true).value_or(s.repetition_penalty));
  s.penalty_last_n = static_cast<int32_t>(f.Int("repeat_last_n", -1, INT32_MAX).value_or(s.penalty_last_n));
  s.presence_penalty =
      static_cast<float>(f.Number("presence_penalty", -100, 100).value_or(s.presence_penalty));
  s.frequency_penalty =
      static_cast<float>(f.Number("frequency_penalty", -100, 100).value_or(s.frequency_penalty));
  // -1 (and llama.cpp's 0xFFFFFFFF, which it reports for -1): a random seed.
  if (auto seed = f.Int("seed", -1, INT64_MAX); seed && *seed != -1 && *seed != 0xFFFFFFFFLL) {
    s.seed = static_cast<uint64_t>(*seed);
    req.spec.seed_given = true;
  }
  req.spec.base.ignore_eos = f.Bool("ignore_eos").value_or(false);
  if (auto stop = f.StringOrList("stop", kMaxStops)) {
    for (auto& st : *stop) {
      if (!st.empty()) req.spec.base.stop.push_back(std::move(st));
    }
  }
  ReadSamplerFilters(f, s);
  req.n_probs = static_cast<int>(f.Int("n_probs", 0, kMaxTopLogprobs).value_or(0));
  req.spec.n = static_cast<int>(f.Int("n_cmpl", 1, kMaxCompletions).value_or(1));
}

// One logit_bias entry: a token id or a text (each of its tokens), and a bias or `false` (never sampled).
void AddBias(FieldReader& f, const ApiContext& ctx, const nlohmann::json& key, const nlohmann::json& value,
             std::map<int32_t, float>& out) {
  float bias = 0;
  if (value.is_boolean() && !value.get<bool>()) {
    bias = kBanBias;
  } else if (value.is_number() && std::isfinite(value.get<double>()) &&
             std::fabs(value.get<double>()) <= kMaxBias) {
    bias = static_cast<float>(value.get<double>());
  } else {
    return f.Fail("logit_bias", "logit_bias values must be numbers between -1e6 and 1e6 or false, got " +
                                    DescribeJson(value));
  }
  std::vector<int32_t> ids;
  if (key.is_number_integer() && key.get<int64_t>() >= 0 && key.get<int64_t>() < ctx.vocab_size) {
    ids.push_back(key.get<int32_t>());
  } else if (key.is_string() && !key.get_ref<const std::string&>().empty()) {
    auto encoded = ctx.tokenizer->Encode(key.get<std::string>(), /*add_bos=*/false, /*parse_special=*/false);
    if (!encoded.ok()) return f.Fail("logit_bias", "logit_bias: " + encoded.status().message());
    ids = std::move(*encoded);
  } else {
    return f.Fail("logit_bias", "logit_bias entries must name a token id from 0 to " +
                                    std::to_string(ctx.vocab_size - 1) + " or a non-empty text, got " +
                                    DescribeJson(key));
  }
  for (int32_t id : ids) out[id] = std::max(kBanBias, out[id] + bias);
}

// llama.cpp's logit_bias: [[id or text, bias or false], ...] or {"id or text": bias or false}.
void ReadLogitBias(FieldReader& f, const ApiContext& ctx, SamplingParams& s) {
  const nlohmann::json* bias = f.Raw("logit_bias");
  if (bias == nullptr || f.failed()) return;
  if (!bias->is_array() && !bias->is_object()) {
    return f.Fail("logit_bias", "logit_bias must be an array of [token, bias] pairs or an object, got " +
                                    DescribeJson(*bias));
  }
  if (bias->size() > kMaxLogitBias) {
    return f.Fail("logit_bias", "logit_bias may hold at most " + std::to_string(kMaxLogitBias) +
                                    " entries, got " + std::to_string(bias->size()));
  }
  std::map<int32_t, float> merged;
  if (bias->is_object()) {
    for (const auto& [key, value] : bias->items()) {
      const bool digits = !key.empty() && key.size() <= 9 &&
                          std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
      AddBias(f, ctx, digits ? nlohmann::json(std::stoll(key)) : nlohmann::json(key), value, merged);
      if (f.failed()) return;
    }
  } else {
    for (const nlohmann::json& pair : *bias) {
      if (!pair.is_array() || pair.size() != 2) {
        return f.Fail("logit_bias",
                      "logit_bias entries must be [token, bias] pairs, got " + DescribeJson(pair));
      }
      AddBias(f, ctx, pair[0], pair[1], merged);
      if (f.failed()) return;
    }
  }
  s.logit_bias.assign(merged.begin(), merged.end());
}

// True for an array of token ids and strings holding at least one id: one prompt (llama.cpp's mixed form).
bool IsOnePrompt(const nlohmann::json& v) {
  if (!v.is_array()) return true;
  bool id = false;
  for (const nlohmann::json& item : v) {
    if (item.is_number()) {
      id = true;
    } else if (!item.is_string()) {
      return false;
    }
  }
  return id;
}

// One prompt: "text", [ids], [ids and strings], or {"prompt_string", "multimodal_data"?}. BOS is added (as
// the vocabulary says) when the prompt is a string or begins with one, as llama.cpp does.
Parsed<std::vector<int32_t>> OnePrompt(const ApiContext& ctx, const nlohmann::json& v,
                                       const std::string& where) {
  if (v.is_object()) {
    FieldReader of(v, where);
    of.Unsupported("multimodal_data", "this server has no multimodal model");
    const auto text = of.String("prompt_string");
    if (!of.failed() && !text) of.Fail("prompt_string", where + ".prompt_string is required (a string)");
    if (of.failed()) return of.error();
    return EncodePrompt(ctx, *text, where);
  }
  if (v.is_array() && v.empty()) return ApiError::Field(where, where + " is empty (no tokens)");
  if (v.is_string()) return EncodePrompt(ctx, v.get<std::string>(), where);
  const bool bos = ctx.tokenizer->add_bos() && v.is_array() && v[0].is_string();
  auto ids = EncodeMixed(ctx, v, bos, where);
  if (!ids.ok()) return ids;
  std::vector<int32_t>& out = *ids.value;
  const int32_t bos_id = ctx.tokenizer->bos_id();
  if (bos && out.size() >= 2 && bos_id >= 0 && out[0] == bos_id && out[1] == bos_id) out.erase(out.begin());
  return ids;
}

Parsed<bool> ReadPrompts(FieldReader& f, const ApiContext& ctx, LlamaCppRequest& req) {
  const nlohmann::json* p = f.Raw("prompt");
  if (p == nullptr) return ApiError::Field("prompt", "prompt is required");
  if (!p->is_string() && !p->is_array() && !p->is_object()) {
    return ApiError::Field("prompt",
                           "prompt must be a string, an array of token ids and strings, an object "
                           "or an array of prompts, got " +
                               DescribeJson(*p));
  }
  const bool one = p->is_string() || p->is_object() || IsOnePrompt(*p);
  if (!one && p->empty()) return ApiError::Field("prompt", "prompt is an empty array");
  if (!one && p->size() > kMaxPrompts) {
    return ApiError::Field("prompt", "at most " + std::to_string(kMaxPrompts) + " prompts per request, got " +
                                         std::to_string(p->size()));
  }
  const size_t n = one ? 1 : p->size();
  for (size_t i = 0; i < n; ++i) {
    auto ids = OnePrompt(ctx, one ? *p : (*p)[i], one ? "prompt" : "prompt[" + std::to_string(i) + "]");
    if (!ids.ok()) return ids.error;
    req.spec.prompts.push_back(std::move(*ids.value));
  }
  return true;
}

// n_predict (llama.cpp also reads max_tokens): -1 = until EOS or the context is full; more than the context
// leaves stops there too (stop_type "limit"), as llama.cpp stops at a full context.
Parsed<bool> FitPrompts(const ApiContext& ctx, LlamaCppRequest& req) {
  int32_t resolved = INT32_MAX;
  for (const auto& prompt : req.spec.prompts) {
    const int64_t wanted = req.n_predict < 0 ? INT32_MAX : std::max<int64_t>(req.n_predict, 1);
    auto fit = FitToContext(ctx, prompt.size(), 0, wanted, "prompt", "n_predict");
    if (!fit.ok()) return fit.error;
    resolved = std::min(resolved, *fit.value);
  }
  req.spec.base.max_tokens = resolved;
  if (req.n_predict == 0) {  // the prompt is evaluated into the cache, nothing generated
    req.spec.base.max_tokens = 0;
    req.spec.base.prompt_logprobs = 0;  // (what the engine needs to run a prompt without generating)
  }
  if (req.spec.prompts.size() * static_cast<size_t>(req.spec.n) > 128) {
    return ApiError::Field("n_cmpl", "prompts × n_cmpl must be at most 128");
  }
  return true;
}

}  // namespace llamacpp_parse

LlamaCppRequest LlamaCppDefaults(const ApiContext& ctx) {
  LlamaCppRequest req;
  SamplingParams& s = req.spec.base.sampling;
  s.temperature = 0.8f;
  s.top_k = 40;
  s.top_p = 0.95f;
  s.min_p = 0.05f;
  s.repetition_penalty = 1.0f;
  s.penalty_last_n = 64;
  ctx.sampling_defaults.ApplyTo(s);
  req.dry_sequence_breakers = ctx.sampling_defaults.dry_breakers;
  return req;
}

Parsed<LlamaCppRequest> ParseLlamaCppCompletion(const std::string& body, const ApiContext& ctx) {
  return ParseLlamaCppRequest(body, ctx, [](FieldReader& f, const ApiContext& c, LlamaCppRequest& req) {
    return llamacpp_parse::ReadPrompts(f, c, req);
  });
}

Parsed<LlamaCppRequest> ParseLlamaCppRequest(const std::string& body, const ApiContext& ctx,
                                             const LlamaCppPromptReader& read_prompt) {
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  LlamaCppRequest req = LlamaCppDefaults(ctx);
  FieldReader f(*json.value);
  llamacpp_parse::ReadSampling(f, req);
  llamacpp_parse::ReadLogitBias(f, ctx, req.spec.base.sampling);
  llamacpp_parse::ReadAbsentSamplers(f);
  ReadLoraField(f, ctx.lora.get(), req.spec);
  req.spec.preferred_seat = static_cast<int>(f.Int("id_slot", -1, INT32_MAX).value_or(-1));
  const auto n_predict = f.Int("n_predict", -1, INT32_MAX);
  req.n_predict = n_predict ? *n_predict : f.Int("max_tokens", -1, INT32_MAX).value_or(-1);
  req.n_indent = static_cast<int>(std::max<int64_t>(0, f.Int("n_indent", INT32_MIN, INT32_MAX).value_or(0)));
  req.t_max_predict_ms = std::max<int64_t>(0, f.Int("t_max_predict_ms", INT64_MIN, INT64_MAX).value_or(0));
  req.stream = f.Bool("stream").value_or(false);
  req.return_tokens = f.Bool("return_tokens").value_or(false);
  if (auto fields = f.StringOrList("response_fields", llamacpp_parse::kMaxResponseFields))
    req.response_fields = *fields;
  // Last of the plain fields: with DRY on, its breakers are tokenized (a pass over the vocabulary).
  ReadDryFields(f, *ctx.tokenizer, ctx.sampling_defaults, req.spec.base.sampling, &req.dry_sequence_breakers);
  if (f.failed()) return f.error();
  if (auto prompts = read_prompt(f, ctx, req); !prompts.ok()) return prompts.error;
  auto constraint = ReadLlamaCppConstraint(*json.value, body);
  if (!constraint.ok()) return constraint.error;
  if (*constraint.value) {
    if (!ctx.grammars) {
      return ApiError{Unimplemented("grammars are not available on this server"), (*constraint.value)->param};
    }
    auto applied = ApplyConstraint(*ctx.grammars, **constraint.value, &req.spec.base);
    if (!applied.ok()) return applied.error;
    req.grammar = (*constraint.value)->gbnf;
  }
  if (auto fit = llamacpp_parse::FitPrompts(ctx, req); !fit.ok()) return fit.error;
  req.spec.base.sampling.logprobs = req.n_probs > 0;
  req.spec.base.sampling.top_logprobs = req.n_probs;
  req.spec.keep_events = !req.stream && (req.n_probs > 0 || req.return_tokens);
  req.several = req.spec.prompts.size() * static_cast<size_t>(req.spec.n) > 1;
  return req;
}

}  // namespace lockstep::server
