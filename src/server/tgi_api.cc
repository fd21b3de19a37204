#include "server/tgi_api.h"

#include "server/request_fields.h"
#include "server/structured_fields.h"

namespace lockstep::server {
namespace {

constexpr int kMaxBestOf = 8;
constexpr int64_t kDefaultMaxNewTokens = 100;  // TGI's

// The `parameters` object of a TGI request.
void ReadParameters(FieldReader& p, TgiRequest& req, int64_t* max_new_tokens, int64_t* truncate) {
  SamplingParams& s = req.spec.base.sampling;
  const auto temperature = p.Number("temperature", 0, 100, /*lo_exclusive=*/true);
  const auto top_k = p.Int("top_k", 1, 1 << 30);
  const auto top_p = p.Number("top_p", 0, 1, true);
  const auto typical_p = p.Number("typical_p", 0, 1, true);  // locally typical sampling; 1 = off
  const bool do_sample = p.Bool("do_sample").value_or(false);
  // As TGI: any warper asks for sampling.
  const bool sampling = do_sample || temperature || top_k || top_p || (typical_p && *typical_p < 1);
  s.temperature = sampling ? static_cast<float>(temperature.value_or(1.0)) : 0.0f;
  s.top_k = static_cast<int32_t>(top_k.value_or(0));
  s.top_p = static_cast<float>(top_p.value_or(1.0));
  s.typical_p = static_cast<float>(typical_p.value_or(1.0));
  s.repetition_penalty = static_cast<float>(p.Number("repetition_penalty", 0, 10, true).value_or(1.0));
  s.frequency_penalty = static_cast<float>(p.Number("frequency_penalty", -2, 2).value_or(0.0));
  if (auto seed = p.Int("seed", 0, INT64_MAX)) {
    s.seed = static_cast<uint64_t>(*seed);
    req.spec.seed_given = true;
  }
  *max_new_tokens = p.Int("max_new_tokens", 1, INT32_MAX).value_or(0);
  auto stop = p.StringOrList("stop", 4);
  if (!stop) stop = p.StringOrList("stop_sequences", 4);
  if (stop) {
    for (auto& st : *stop) {
      if (!st.empty()) req.spec.base.stop.push_back(std::move(st));
    }
  }
  req.details = p.Bool("details").value_or(false);
  req.decoder_input_details = p.Bool("decoder_input_details").value_or(false);
  if (req.decoder_input_details) req.spec.base.prompt_logprobs = 0;
  req.return_full_text = p.Bool("return_full_text").value_or(false);
  *truncate = p.Int("truncate", 1, INT32_MAX).value_or(0);
  req.top_n_tokens = static_cast<int>(p.Int("top_n_tokens", 0, 5).value_or(0));
  // best_of: that many sampled sequences, forked from one prefill; the most likely one is returned.
  req.spec.n = static_cast<int>(p.Int("best_of", 1, kMaxBestOf).value_or(1));
  if (req.spec.n > 1 && !sampling && !p.failed()) {
    p.Fail("best_of", "parameters.best_of > 1 needs sampling (do_sample, temperature, top_k or top_p)");
  }
  p.Unsupported("watermark", "");
  p.Unsupported("adapter_id", "");
}

}  // namespace

Parsed<TgiRequest> ParseTgiRequest(const std::string& body, const ApiContext& ctx) {
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  TgiRequest req;
  FieldReader f(*json.value);
  const auto inputs = f.String("inputs");
  if (!f.failed() && !inputs) f.Fail("inputs", "inputs is required (a string)");
  req.stream = f.Bool("stream").value_or(false);
  int64_t max_new_tokens = 0;  // not given: TGI's default of 100, or the room left if less
  int64_t truncate = 0;
  if (const nlohmann::json* params = f.Object("parameters")) {
    FieldReader p(*params, "parameters");
    ReadParameters(p, req, &max_new_tokens, &truncate);
    f.Absorb(p);
  }
  if (f.failed()) return f.error();
  // parameters.grammar: JSON schema or regex (server/structured_fields.h).
  auto constraint = ReadTgiConstraint(f.Raw("parameters"), body);
  if (!constraint.ok()) return constraint.error;
  if (*constraint.value) {
    if (!ctx.grammars) {
      return ApiError{Unimplemented("grammars are not available on this server"), "parameters.grammar",
                      false};
    }
    auto applied = ApplyConstraint(*ctx.grammars, **constraint.value, &req.spec.base);
    if (!applied.ok()) return applied.error;
  }
  req.inputs = *inputs;
  auto ids = EncodePrompt(ctx, req.inputs, "inputs");
  if (!ids.ok()) return ids.error;
  std::vector<int32_t> prompt = std::move(*ids.value);
  if (truncate > 0 && static_cast<int64_t>(prompt.size()) > truncate) {
    prompt.erase(prompt.begin(), prompt.end() - truncate);
  }
  auto fit = FitToContext(ctx, prompt.size(), max_new_tokens, kDefaultMaxNewTokens, "inputs",
                          "parameters.max_new_tokens");
  if (!fit.ok()) return fit.error;
  req.spec.base.max_tokens = *fit.value;
  req.spec.base.sampling.logprobs = true;  // token logprobs are part of TGI's token objects
  req.spec.base.sampling.top_logprobs = req.top_n_tokens;
  req.spec.keep_events = true;
  req.spec.prompts.push_back(std::move(prompt));
  return req;
}

std::string TgiFinishReason(const ChoiceState& choice) {
  switch (choice.end) {
    case ChoiceEnd::kStop:
      // A complete grammar ends the text as EOS would.
      return choice.last.stop_kind == StopKind::kEos || choice.last.stop_kind == StopKind::kGrammar
                 ? "eos_token"
                 : "stop_sequence";
    case ChoiceEnd::kTimeout:
      return "timeout";
    case ChoiceEnd::kAbort:
      return "abort";
    default:
      return "length";
  }
}

namespace {

nlohmann::json TokenJson(const ApiContext& ctx, const TokenEvent& e) {
  return {{"id", e.token},
          {"text", ctx.tokenizer->IsSpecial(e.token) ? ctx.tokenizer->TokenPiece(e.token) : e.token_text},
          {"logprob", e.logprob},
          {"special", e.special || ctx.tokenizer->IsSpecial(e.token)}};
}

nlohmann::json TopTokens(const ApiContext& ctx, const TokenEvent& e) {
  nlohmann::json top = nlohmann::json::array();
  for (const auto& t : e.top_logprobs) {
    top.push_back({{"id", t.token},
                   {"text", ctx.tokenizer->TokenBytes(t.token)},
                   {"logprob", t.logprob},
                   {"special", ctx.tokenizer->IsSpecial(t.token)}});
  }
  return top;
}

// TGI's generated_text is the decode of every generated token, so a matched stop sequence stays in it.
std::string FullText(const TgiRequest& req, const ChoiceState& c) {
  const std::string generated = c.text + c.last.stop_tail;
  return req.return_full_text ? req.inputs + generated : generated;
}

double SumLogprob(const ChoiceState& c) {
  double sum = 0;
  for (const TokenEvent& e : c.events) sum += e.token != kNoToken ? e.logprob : 0.0;
  return sum;
}

// The seed a sequence was sampled with, as TGI reports it: the request's (plus the sequence's offset) or the
// random one drawn for it; null for greedy decoding, which uses none.
nlohmann::json SeedJson(const GenerationSpec& spec, const ChoiceState& c) {
  return spec.seed_given || spec.base.sampling.temperature > 0 ? nlohmann::json(c.seed)
                                                               : nlohmann::json(nullptr);
}

// decoder_input_details: every prompt token, its logprob given the tokens before it (null for the first, as
// TGI's NaN). Empty when not asked for or when the sequence ended before its prompt was scored.
nlohmann::json Prefill(const TgiRequest& req, const GenerationSpec& spec, const ChoiceState& c,
                       const ApiContext& ctx) {
  nlohmann::json out = nlohmann::json::array();
  const std::vector<PromptLogprob>* scores = req.decoder_input_details ? PromptScores(spec, c) : nullptr;
  if (scores == nullptr) return out;
  const std::vector<int32_t>& prompt = spec.prompts[static_cast<size_t>(c.prompt_index)];
  for (size_t i = 0; i < prompt.size(); ++i) {
    const int32_t id = prompt[i];
    const std::string text =
        ctx.tokenizer->IsSpecial(id) ? ctx.tokenizer->TokenPiece(id) : ctx.tokenizer->TokenBytes(id);
    out.push_back({{"id", id},
                   {"text", text},
                   {"logprob", i == 0 ? nlohmann::json(nullptr) : nlohmann::json((*scores)[i - 1].logprob)}});
  }
  return out;
}

// A sequence's details as TGI gives them for the answer and for each of best_of_sequences.
nlohmann::json SequenceDetails(const TgiRequest& req, const GenerationSpec& spec, const ChoiceState& c,
                               const ApiContext& ctx) {
  nlohmann::json tokens = nlohmann::json::array();
  nlohmann::json top_tokens = nlohmann::json::array();
  for (const TokenEvent& e : c.events) {
    if (e.token == kNoToken) continue;
    tokens.push_back(TokenJson(ctx, e));
    top_tokens.push_back(TopTokens(ctx, e));
  }
  nlohmann::json out = {{"finish_reason", TgiFinishReason(c)},
                        {"generated_tokens", c.generated},
                        {"seed", SeedJson(spec, c)},
                        {"prefill", Prefill(req, spec, c, ctx)},
                        {"tokens", std::move(tokens)}};
  if (req.top_n_tokens > 0) out["top_tokens"] = std::move(top_tokens);
  return out;
}

}  // namespace

const ChoiceState& TgiBestChoice(GenerationJob& job) {
  const std::vector<ChoiceState>& choices = job.choices();
  size_t best = 0;
  for (size_t i = 1; i < choices.size(); ++i) {
    if (SumLogprob(choices[i]) > SumLogprob(choices[best])) best = i;
  }
  return choices[best];
}

nlohmann::json TgiResponse(const TgiRequest& req, GenerationJob& job, const ApiContext& ctx) {
  const ChoiceState& c = TgiBestChoice(job);
  nlohmann::json out = {{"generated_text", FullText(req, c)}};
  if (!req.details) return out;
  out["details"] = SequenceDetails(req, job.spec(), c, ctx);
  if (job.choices().size() > 1) {
    nlohmann::json others = nlohmann::json::array();
    for (const ChoiceState& o : job.choices()) {
      if (&o == &c) continue;
      nlohmann::json other = SequenceDetails(req, job.spec(), o, ctx);
      other["generated_text"] = FullText(req, o);
      others.push_back(std::move(other));
    }
    out["details"]["best_of_sequences"] = std::move(others);
  }
  return out;
}

std::optional<nlohmann::json> TgiStreamEvent(const TgiRequest& req, const ChoiceState& choice,
                                             const TokenEvent& event, const ApiContext& ctx) {
  if (event.token == kNoToken && !event.last()) return std::nullopt;
  nlohmann::json out;
  if (event.token != kNoToken) {
    out["index"] = event.index;
    out["token"] = TokenJson(ctx, event);
  } else {
    // A last event without a token (a request cut short): the index the next token would have had, and an
    // empty special token, which keeps the shape TGI's clients parse and adds no text.
    out["index"] = choice.generated;
    out["token"] = {{"id", 0}, {"text", ""}, {"logprob", 0.0}, {"special", true}};
  }
  if (req.top_n_tokens > 0) out["top_tokens"] = TopTokens(ctx, event);
  out["generated_text"] = event.last() ? nlohmann::json(FullText(req, choice)) : nlohmann::json(nullptr);
  if (event.last() && req.details) {
    out["details"] = {{"finish_reason", TgiFinishReason(choice)},
                      {"generated_tokens", choice.generated},
                      {"seed", SeedJson(req.spec, choice)},
                      {"input_length", req.spec.prompts[0].size()}};
  } else {
    out["details"] = nullptr;
  }
  return out;
}

nlohmann::json TgiInfo(const ApiContext& ctx) {
  return {{"model_id", ctx.model_id},
          {"model_sha", nullptr},
          {"model_dtype", ctx.dtype},
          {"model_device_type", "cpu"},
          {"model_pipeline_tag", "text-generation"},
          {"max_concurrent_requests", ctx.max_queue + ctx.max_seqs},
          {"max_best_of", kMaxBestOf},
          {"max_stop_sequences", 4},
          {"max_input_tokens", ctx.max_context - 1},
          {"max_input_length", ctx.max_context - 1},
          {"max_total_tokens", ctx.max_context},
          {"validation_workers", 1},
          {"max_client_batch_size", 1},
          {"router", "lockstep"},
          {"prefix_caching", ctx.prefix_caching},
          {"version", "0.1.0"},
          {"sha", nullptr},
          {"docker_label", nullptr}};
}

}  // namespace lockstep::server
