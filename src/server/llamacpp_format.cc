// Response shapes of llama.cpp's native routes: /completion results and stream events, /props; the
// code-completion stops (n_indent, t_max_predict_ms).
#include <algorithm>

#include "server/llamacpp_api.h"
#include "server/slot_view.h"

namespace lockstep::server {
// Named, not anonymous: the server is a unity build and the other APIs' files have helpers of these names.
namespace llamacpp_format {

// The sampling chain lockstep applies (engine/sampler.h), in llama.cpp's names: it is fixed, so a request's
// `samplers` cannot reorder it. Unlike llama.cpp's default chain, temperature comes before top_k / top_p /
// min_p (top_k is unaffected; top_p and min_p then see the tempered distribution). With mirostat 1 or 2 its
// truncation replaces top_k and the filters (llama.cpp's sampler names: "mirostat", "mirostat_v2").
const nlohmann::json& SamplerChain(int mirostat) {
  static const nlohmann::json chain = {"penalties", "dry",   "temperature", "top_k", "top_n_sigma",
                                       "typ_p",     "top_p", "min_p",       "xtc"};
  static const nlohmann::json mirostat_chain = {"penalties", "dry", "temperature", "mirostat"};
  static const nlohmann::json mirostat_v2_chain = {"penalties", "dry", "temperature", "mirostat_v2"};
  return mirostat == 1 ? mirostat_chain : mirostat == 2 ? mirostat_v2_chain : chain;
}

nlohmann::json Bytes(const std::string& s) {
  nlohmann::json out = nlohmann::json::array();
  for (unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}

nlohmann::json ProbEntry(const ApiContext& ctx, int32_t token, float logprob) {
  const std::string text = ctx.tokenizer->TokenBytes(token);
  return {{"id", token}, {"token", text}, {"logprob", logprob}, {"bytes", Bytes(text)}};
}

// One completion_probabilities entry, in current llama.cpp's shape (logprobs; the older `probs` shape had
// probabilities): the sampled token and its n_probs most likely alternatives, from the raw logits.
nlohmann::json ProbsJson(const ApiContext& ctx, const TokenEvent& e) {
  nlohmann::json out = ProbEntry(ctx, e.token, e.logprob);
  nlohmann::json top = nlohmann::json::array();
  for (const TokenLogprob& t : e.top_logprobs) top.push_back(ProbEntry(ctx, t.token, t.logprob));
  out["top_logprobs"] = std::move(top);
  return out;
}

// What a request ran with, in llama.cpp's generation_settings names. Samplers lockstep lacks are reported at
// the values that turn them off (which is what they are here); seed is the one the choice used (null: /props,
// where each request draws one unless given).
// The request's adapter scales, as llama.cpp lists them: [{"id": 0, "scale": 1.0}, ...].
nlohmann::json LoraList(const std::vector<float>& scales) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < scales.size(); ++i) list.push_back({{"id", i}, {"scale", scales[i]}});
  return list;
}

nlohmann::json Settings(const LlamaCppRequest& req, const nlohmann::json& seed) {
  const SamplingParams& s = req.spec.base.sampling;
  return {{"n_predict", req.n_predict},
          {"max_tokens", req.n_predict},
          {"seed", seed},
          {"temperature", s.temperature},
          {"dynatemp_range", s.dynatemp_range},
          {"dynatemp_exponent", s.dynatemp_exponent},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"top_n_sigma", s.top_n_sigma > 0 ? s.top_n_sigma : -1.0f},
          {"xtc_probability", s.xtc_probability},
          {"xtc_threshold", s.xtc_threshold},
          {"typical_p", s.typical_p},
          {"min_keep", s.min_keep},
          {"repeat_last_n", s.penalty_last_n},
          {"repeat_penalty", s.repetition_penalty},
          {"presence_penalty", s.presence_penalty},
          {"frequency_penalty", s.frequency_penalty},
          {"dry_multiplier", s.dry.multiplier},
          {"dry_base", s.dry.base},
          {"dry_allowed_length", s.dry.allowed_length},
          {"dry_penalty_last_n", s.dry.penalty_last_n},
          {"dry_sequence_breakers", req.dry_sequence_breakers},
          {"mirostat", s.mirostat},
          {"mirostat_tau", s.mirostat_tau},
          {"mirostat_eta", s.mirostat_eta},
          {"stop", req.spec.base.stop},
          {"ignore_eos", req.spec.base.ignore_eos},
          {"stream", req.stream},
          {"n_probs", req.n_probs},
          {"grammar", req.grammar},
          {"samplers", SamplerChain(s.mirostat)},
          {"post_sampling_probs", false},
          {"lora", LoraList(req.spec.base.lora_scales)}};
}

// stop_type / stopping_word, and lockstep's `cut_short` for a choice the server ended ("timeout": --timeout,
// "abort": a shutdown's drain ran out), which llama.cpp's four stop types cannot say.
void AddStop(const ChoiceState& c, nlohmann::json& out) {
  std::string type = "none";
  std::string word;
  if (c.end == ChoiceEnd::kStop) {
    const bool by_word = c.last.stop_kind == StopKind::kStopString;
    type = by_word ? "word" : "eos";  // EOS, a stop token, a complete grammar
    if (by_word) word = c.last.stop_string;
  } else if (c.end == ChoiceEnd::kLength) {
    type = "limit";
  } else if (c.end == ChoiceEnd::kTimeout || c.end == ChoiceEnd::kAbort) {
    out["cut_short"] = c.end == ChoiceEnd::kTimeout ? "timeout" : "abort";
  }
  out["stop_type"] = type;
  out["stopping_word"] = word;
}

// llama.cpp's timings: prompt_n counts the prompt tokens computed (the cached ones are cache_n), prompt_ms
// the time from scheduling to the first token, predicted_ms the time from the first token to the last.
nlohmann::json Timings(const ChoiceState& c) {
  const RequestTiming& t = c.last.timing;
  const int prompt_n = std::max(0, t.prompt_tokens - t.cached_tokens);
  const double prompt_ms = std::max(0.0, t.ttft_s - t.queue_s) * 1e3;
  const double predicted_ms = t.ttft_s > 0 ? std::max(0.0, t.e2e_s - t.ttft_s) * 1e3 : 0.0;
  const auto per_token = [](double ms, int n) { return n > 0 ? ms / n : 0.0; };
  const auto per_second = [](double ms, int n) { return ms > 0 ? 1e3 * n / ms : 0.0; };
  return {{"cache_n", t.cached_tokens},
          {"prompt_n", prompt_n},
          {"prompt_ms", prompt_ms},
          {"prompt_per_token_ms", per_token(prompt_ms, prompt_n)},
          {"prompt_per_second", per_second(prompt_ms, prompt_n)},
          {"predicted_n", c.generated},
          {"predicted_ms", predicted_ms},
          {"predicted_per_token_ms", per_token(predicted_ms, c.generated)},
          {"predicted_per_second", per_second(predicted_ms, c.generated)}};
}

// response_fields: only the fields named; "a/b" takes b out of a, keyed by the path (as llama.cpp).
nlohmann::json Select(const std::vector<std::string>& fields, const nlohmann::json& result) {
  if (fields.empty()) return result;
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& path : fields) {
    const nlohmann::json* node = &result;
    size_t start = 0;
    while (node != nullptr) {
      const size_t slash = path.find('/', start);
      const std::string key =
          path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      node = node->is_object() && node->contains(key) ? &(*node)[key] : nullptr;
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    if (node != nullptr) out[path] = *node;
  }
  return out;
}

// The summary every result carries; `stream_end`: the last event of a stream (content and tokens were sent).
nlohmann::json Summary(const LlamaCppRequest& req, GenerationJob& job, const ChoiceState& c,
                       const ApiContext& ctx, bool stream_end) {
  const std::vector<int32_t>& prompt = job.spec().prompts[static_cast<size_t>(c.prompt_index)];
  nlohmann::json tokens = nlohmann::json::array();
  if (!stream_end && req.return_tokens) {
    for (const TokenEvent& e : c.events) {
      if (e.token != kNoToken) tokens.push_back(e.token);
    }
  }
  nlohmann::json out = {{"index", c.index},
                        {"content", stream_end ? std::string() : c.text},
                        {"tokens", std::move(tokens)},
                        {"id_slot", job.SeatOf(c)},
                        {"stop", true},
                        {"model", ctx.model_id},
                        {"tokens_predicted", c.generated},
                        {"tokens_evaluated", prompt.size()},
                        {"generation_settings", Settings(req, c.seed)},
                        {"prompt", ctx.tokenizer->Decode(prompt)},
                        {"has_new_line", c.text.find('\n') != std::string::npos},
                        {"truncated", false},
                        {"tokens_cached", c.last.timing.cached_tokens},
                        {"timings", Timings(c)}};
  AddStop(c, out);
  if (!stream_end && req.n_probs > 0) {
    nlohmann::json probs = nlohmann::json::array();
    for (const TokenEvent& e : c.events) {
      if (e.token != kNoToken) probs.push_back(ProbsJson(ctx, e));
    }
    out["completion_probabilities"] = std::move(probs);
  }
  return Select(req.response_fields, out);
}

}  // namespace llamacpp_format

nlohmann::json LlamaCppResult(const LlamaCppRequest& req, GenerationJob& job, const ChoiceState& choice,
                              const ApiContext& ctx) {
  return llamacpp_format::Summary(req, job, choice, ctx, /*stream_end=*/false);
}

std::vector<nlohmann::json> LlamaCppStreamEvents(const LlamaCppRequest& req, GenerationJob& job,
                                                 const ChoiceState& choice, const TokenEvent& event,
                                                 const ApiContext& ctx) {
  std::vector<nlohmann::json> out;
  if (event.token != kNoToken || !event.text_delta.empty()) {
    nlohmann::json chunk = {
        {"index", choice.index},
        {"content", event.text_delta},
        {"tokens", event.token != kNoToken ? nlohmann::json::array({event.token}) : nlohmann::json::array()},
        {"stop", false},
        {"id_slot", job.SeatOf(choice)},
        {"tokens_predicted", choice.generated},
        {"tokens_evaluated", job.spec().prompts[static_cast<size_t>(choice.prompt_index)].size()}};
    if (req.n_probs > 0 && event.token != kNoToken) {
      chunk["completion_probabilities"] = nlohmann::json::array({llamacpp_format::ProbsJson(ctx, event)});
    }
    out.push_back(std::move(chunk));
  }
  if (event.last()) out.push_back(llamacpp_format::Summary(req, job, choice, ctx, /*stream_end=*/true));
  return out;
}

nlohmann::json LlamaCppProps(const ApiContext& ctx) {
  const LlamaCppRequest defaults = LlamaCppDefaults(ctx);
  const auto token_text = [&](int32_t id) { return id >= 0 ? ctx.tokenizer->TokenPiece(id) : std::string(); };
  return {{"default_generation_settings",
           {{"n_ctx", ctx.max_context}, {"params", llamacpp_format::Settings(defaults, nullptr)}}},
          {"total_slots", ctx.max_seqs},
          {"model_alias", ctx.model_id},
          {"model_path", ctx.model_path},
          {"chat_template", ctx.chat_template->source()},
          {"modalities", {{"vision", false}, {"audio", false}}},
          {"bos_token", token_text(ctx.tokenizer->bos_id())},
          {"eos_token", token_text(ctx.tokenizer->eos_id())},
          {"build_info", "lockstep 0.1.0"}};
}

nlohmann::json LlamaCppSlots(const ApiContext& ctx, const SlotView& slots) {
  return slots.Json(ctx.max_context, ctx.draft_tokens > 0, [&ctx](const Request* base) {
    LlamaCppRequest req = LlamaCppDefaults(ctx);
    if (base != nullptr) {
      req.spec.base = *base;
      req.n_predict = base->max_tokens;
      req.n_probs = base->sampling.top_logprobs;
    }
    return llamacpp_format::Settings(req, nullptr);
  });
}

size_t LlamaCppIndentCut(std::string_view text, int n_indent) {
  const size_t newline = text.rfind('\n');
  if (n_indent <= 0 || newline == std::string_view::npos) return std::string_view::npos;
  size_t pos = newline + 1;
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
  const bool shallow = pos < text.size() && static_cast<int64_t>(pos - newline - 1) < n_indent;
  return shallow ? pos : std::string_view::npos;
}

bool LlamaCppPredictTimeUp(std::string_view text, double ms_since_first_token, int64_t t_max_predict_ms) {
  return t_max_predict_ms > 0 && ms_since_first_token > static_cast<double>(t_max_predict_ms) &&
         text.find('\n') != std::string_view::npos;
}

}  // namespace lockstep::server
