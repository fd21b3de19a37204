// Request parsing for the OpenAI routes (responses are in openai_format.cc).
#include "server/openai_api.h"

#include <algorithm>

#include "base/excerpt.h"
#include "server/fan_out.h"
#include "server/llamacpp_infill.h"
#include "server/request_fields.h"
#include "server/sampler_fields.h"
#include "server/shared_prefix_hint.h"
#include "server/structured_fields.h"
#include "server/tool_grammar.h"

namespace lockstep::server {
namespace {

constexpr int kMaxN = 64;

constexpr size_t kMaxLogitBias = 1024;  // entries (OpenAI documents no bound; this one keeps a step cheap)

// OpenAI's logit_bias: {"token id": bias from -100 to 100}, added to those logits before sampling.
void ReadLogitBias(FieldReader& f, const ApiContext& ctx, SamplingParams& s) {
  const nlohmann::json* bias = f.Object("logit_bias");
  if (bias == nullptr || !bias->is_object()) return;  // (an array: f.Object has failed)
  if (bias->size() > kMaxLogitBias) {
    f.Fail("logit_bias", "logit_bias may name at most " + std::to_string(kMaxLogitBias) + " tokens, got " +
                             std::to_string(bias->size()));
    return;
  }
  FieldReader values(*bias, "logit_bias");
  for (const auto& [key, value] : bias->items()) {
    // A decimal token id, without sign or leading zeros ("01" and "1" would name one token twice).
    const bool digits = !key.empty() && key.size() <= 9 && (key == "0" || key[0] != '0') &&
                        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int64_t id = digits ? std::stoll(key) : -1;
    if (id < 0 || id >= ctx.vocab_size) {
      f.Fail("logit_bias", "logit_bias keys must be token ids from 0 to " +
                               std::to_string(ctx.vocab_size - 1) + ", got \"" + Excerpt(key) + "\"");
      return;
    }
    const auto b = values.Number(key.c_str(), -100, 100);
    if (!b) break;
    s.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(*b));
  }
  f.Absorb(values);
  std::sort(s.logit_bias.begin(), s.logit_bias.end());
}

constexpr size_t kMaxStopTokenIds = 64;
// Stop strings: OpenAI's API takes 4; clients of local servers send more (editor plugins list every
// end-of-turn marker), which vLLM and llama.cpp accept.
constexpr size_t kMaxStopStrings = 16;

// vLLM's stop_token_ids: tokens that end generation as EOS does.
void ReadStopTokenIds(FieldReader& f, const ApiContext& ctx, std::vector<int32_t>& out) {
  const nlohmann::json* ids = f.Array("stop_token_ids");
  if (ids == nullptr || !ids->is_array()) return;
  if (ids->size() > kMaxStopTokenIds) {
    f.Fail("stop_token_ids", "stop_token_ids may hold at most " + std::to_string(kMaxStopTokenIds) +
                                 " token ids, got " + std::to_string(ids->size()));
    return;
  }
  for (const nlohmann::json& id : *ids) {
    if (!(id.is_number_integer() || id.is_number_unsigned()) || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= ctx.vocab_size) {
      f.Fail("stop_token_ids", "stop_token_ids must hold token ids from 0 to " +
                                   std::to_string(ctx.vocab_size - 1) + ", got " + DescribeJson(id));
      return;
    }
    out.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
}

// Sampling fields shared by completions and chat.
void ReadSampling(FieldReader& f, const ApiContext& ctx, OpenAiRequest& req) {
  SamplingParams& s = req.spec.base.sampling;
  // OpenAI's defaults (temperature 1, top_p 1, no top_k / min_p / penalties), under the server's (--temp
  // ...).
  s.temperature = 1.0f;
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  s.presence_penalty = 0.0f;
  s.frequency_penalty = 0.0f;
  s.repetition_penalty = 1.0f;
  ctx.sampling_defaults.ApplyTo(s);
  s.temperature = static_cast<float>(f.Number("temperature", 0, 2).value_or(s.temperature));
  s.top_p = static_cast<float>(f.Number("top_p", 0, 1, /*lo_exclusive=*/true).value_or(s.top_p));
  if (auto top_k = f.Int("top_k", -1, 1 << 30)) s.top_k = static_cast<int32_t>(*top_k < 0 ? 0 : *top_k);
  s.min_p = static_cast<float>(f.Number("min_p", 0, 1).value_or(s.min_p));
  ReadSamplerFilters(f, s);  // llama.cpp's typical_p, top_n_sigma, xtc_*, min_keep
  ReadDryFields(f, *ctx.tokenizer, ctx.sampling_defaults, s);
  s.presence_penalty = static_cast<float>(f.Number("presence_penalty", -2, 2).value_or(s.presence_penalty));
  s.frequency_penalty =
      static_cast<float>(f.Number("frequency_penalty", -2, 2).value_or(s.frequency_penalty));
  s.repetition_penalty =
      static_cast<float>(f.Number("repetition_penalty", 0, 10, true).value_or(s.repetition_penalty));
  if (auto seed = f.Int("seed", INT64_MIN, INT64_MAX)) {
    s.seed = static_cast<uint64_t>(*seed);
    req.spec.seed_given = true;
  }
  // llama.cpp's id_slot, which its OpenAI routes read too: the seat its sequences prefer (slot files).
  req.spec.preferred_seat = static_cast<int>(f.Int("id_slot", -1, INT32_MAX).value_or(-1));
  req.spec.n = static_cast<int>(f.Int("n", 1, kMaxN).value_or(1));
  if (auto best_of = f.Int("best_of", 1, kMaxN); best_of && *best_of != req.spec.n) {
    f.Fail("best_of", "best_of different from n is not supported");
  }
  req.spec.base.ignore_eos = f.Bool("ignore_eos").value_or(false);
  if (auto stop = f.StringOrList("stop", kMaxStopStrings)) {
    for (auto& st : *stop) {
      if (!st.empty()) req.spec.base.stop.push_back(std::move(st));
    }
  }
  req.stream = f.Bool("stream").value_or(false);
  ReadFanOut(f, &req.fan_out);  // server/fan_out.h
  if (const nlohmann::json* so = f.Object("stream_options")) {
    // As OpenAI and vLLM: options of a stream that is not asked for are a client's mistake.
    if (!req.stream) {
      f.Fail("stream_options", std::string("stream_options is only allowed when stream is true, got ") +
                                   (f.Has("stream") ? "stream false" : "no stream"));
    }
    FieldReader sf(*so, "stream_options");
    req.include_usage = sf.Bool("include_usage").value_or(false);
    f.Absorb(sf);
  }
  f.String("user");
  ReadLogitBias(f, ctx, req.spec.base.sampling);
  ReadStopTokenIds(f, ctx, req.spec.base.stop_token_ids);
  ReadLoraField(f, ctx.lora.get(), req.spec);  // llama.cpp's per-request adapter scales
  // vLLM's: end-of-generation and stop tokens are not sampled before this many tokens.
  req.spec.base.min_tokens = static_cast<int32_t>(f.Int("min_tokens", 0, INT32_MAX).value_or(0));
  if (req.chat) f.Unsupported("suffix", "suffix (fill in the middle) is on /v1/completions");
  // vLLM's prompt_logprobs: every prompt token's logprob and its N most likely alternatives.
  if (auto n = f.Int("prompt_logprobs", 0, kMaxTopLogprobs)) {
    req.prompt_logprobs = static_cast<int>(*n);
    if (req.stream) f.Fail("prompt_logprobs", "prompt_logprobs are not available when stream is true");
  }
  req.spec.base.prompt_logprobs = req.prompt_logprobs;
}

// Structured outputs (server/structured_fields.h) and, on chat, the grammar of a forced tool choice.
void ReadConstraint(const nlohmann::json& body, const std::string& raw, const ApiContext& ctx,
                    OpenAiRequest& req, ApiError* error) {
  if (!error->status.ok()) return;
  auto read = ReadOpenAiConstraint(body, raw);
  if (!read.ok()) {
    *error = read.error;
    return;
  }
  std::optional<OutputConstraint> constraint = *read.value;
  if (req.tools.forced()) {
    if (constraint) {
      *error = ApiError::Field(constraint->param,
                               "tool_choice \"required\" or a named function cannot be combined "
                               "with " +
                                   constraint->param);
      return;
    }
    // A reasoning block may come first where the template writes one (and replies are split).
    // Not where the prompt has closed it already (thinking turned off: Qwen3's and Gemma 4's templates
    // write an empty block). Harmony's is an analysis message (no tags; the prompt never opens one).
    std::optional<chat::ReasoningTags> reasoning;
    const std::string_view prompt = req.prompt_texts.empty() ? std::string_view() : req.prompt_texts.front();
    std::string_view trimmed = prompt;
    while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\n')) trimmed.remove_suffix(1);
    if (req.tools.syntax == ToolSyntax::kHarmony) {
      if (req.harmony) reasoning = chat::ReasoningTags{};
    } else if (req.reasoning && req.tools.syntax != ToolSyntax::kJson &&
               !trimmed.ends_with(req.reasoning_tags.close)) {
      reasoning = req.reasoning_tags;
    }
    const bool opened = reasoning && req.tools.syntax != ToolSyntax::kHarmony &&
                        chat::PromptOpensReasoning(prompt, *reasoning);
    auto gbnf = ForcedToolGbnf(req.tools, reasoning, opened);
    if (!gbnf.ok()) {
      *error = gbnf.error;
      return;
    }
    constraint = OutputConstraint{*gbnf.value, "tool_choice", req.tools.syntax != ToolSyntax::kJson};
  }
  if (!constraint) return;
  if (!ctx.grammars) {
    *error = {Unimplemented("structured outputs are not available on this server"), constraint->param, false};
    return;
  }
  auto applied = ApplyConstraint(*ctx.grammars, *constraint, &req.spec.base);
  if (!applied.ok()) *error = applied.error;
  const std::string& p = constraint->param;
  // A forced call in the model's syntax keeps its reasoning block (the grammar allows it); other
  // constraints leave no room for one.
  if (p != "grammar" && p != "guided_grammar" && p != "structured_outputs.grammar" && !constraint->markers) {
    req.reasoning = false;
    req.harmony = false;
  }
}

// chat_template_kwargs (vLLM's and llama.cpp's): more variables for the template, over the server's
// --chat-template-kwargs, and reasoning_effort; reasoning_format (llama.cpp's): whether <think> blocks become
// reasoning_content.
void ReadTemplateFields(FieldReader& f, const std::string& raw_body, const ApiContext& ctx,
                        OpenAiRequest& req) {
  req.template_kwargs = ctx.chat_template_kwargs;
  // reasoning_effort (OpenAI's): the template variable of that name (gpt-oss-style templates read it), unless
  // the request's chat_template_kwargs set it.
  if (auto effort = f.String("reasoning_effort")) req.template_kwargs["reasoning_effort"] = *effort;
  if (f.Object("chat_template_kwargs") != nullptr) {
    const auto ordered = nlohmann::ordered_json::parse(raw_body, nullptr, /*allow_exceptions=*/false);
    for (const auto& [key, value] : ordered["chat_template_kwargs"].items()) {
      for (const char* reserved : {"messages", "tools", "add_generation_prompt", "bos_token", "eos_token"}) {
        if (key == reserved) {
          return f.Fail(
              "chat_template_kwargs",
              "chat_template_kwargs." + key + " cannot be set this way (the request's own fields give it)");
        }
      }
      req.template_kwargs[key] = value;
    }
  }
  chat::ReasoningFormat format = ctx.reasoning_format;
  if (auto name = f.Enum("reasoning_format", {"none", "deepseek", "auto"})) {
    format = *chat::ParseReasoningFormat(*name);
  }
  req.harmony = format != chat::ReasoningFormat::kNone && ctx.chat_template->harmony();
  const auto tags = chat::ReplyReasoningTags(format, ctx.chat_template->reasoning_tags());
  req.reasoning = !req.harmony && tags.has_value();
  if (tags) req.reasoning_tags = *tags;
}

// Prompt forms: "text", ["a", "b"], [1, 2, 3], [[1, 2], [3]].
void ReadPrompts(FieldReader& f, const ApiContext& ctx, OpenAiRequest& req, ApiError* error) {
  const nlohmann::json* p = f.Raw("prompt");
  if (p == nullptr) return f.Fail("prompt", "prompt is required");
  auto prompts = ReadPromptInputs(*p, ctx, "prompt", 64);
  if (!prompts.ok()) {
    *error = prompts.error;
    return;
  }
  for (PromptInput& prompt : *prompts.value) {
    req.prompt_texts.push_back(std::move(prompt.text));
    req.prompt_is_ids.push_back(prompt.is_ids);
    req.spec.prompts.push_back(std::move(prompt.ids));
  }
}

// suffix (OpenAI's insertion, Ollama's and DeepSeek's fill in the middle): each prompt, text, is the code
// before the cursor and the suffix the code after it, laid out with the model's FIM tokens as /infill lays
// out input_prefix and input_suffix (server/llamacpp_infill.h). An empty suffix is no suffix.
void ReadSuffix(FieldReader& f, const ApiContext& ctx, int64_t max_tokens, OpenAiRequest& req,
                ApiError* error) {
  const auto suffix = f.String("suffix");
  if (!suffix || suffix->empty() || f.failed()) return;
  if (req.echo) return f.Fail("suffix", "suffix cannot be combined with echo");
  if (req.fan_out.active()) return f.Fail("suffix", "suffix cannot be combined with fan_out");
  for (size_t i = 0; i < req.spec.prompts.size(); ++i) {
    if (req.prompt_is_ids[i]) return f.Fail("suffix", "suffix needs text prompts, got token ids");
    auto ids =
        InfillPrompt(ctx, req.prompt_texts[i], *suffix, max_tokens < 0 ? 16 : max_tokens, "prompt", "suffix");
    if (!ids.ok()) {
      *error = ids.error;
      if (error->param.empty()) {  // a model without FIM tokens
        // /infill answers llama.cpp's 501; here it is OpenAI's invalid request, a 400: OpenAI's SDKs retry
        // every 5xx, and the same request to the same model cannot succeed.
        error->param = "suffix";
        error->http_status = 0;
      }
      return;
    }
    req.spec.prompts[i] = std::move(*ids.value);
  }
}

Parsed<OpenAiRequest> Finish(FieldReader& f, const ApiError& error, OpenAiRequest req, const ApiContext& ctx,
                             int64_t max_tokens, int64_t default_max, const char* prompt_param,
                             const char* max_param) {
  if (f.failed()) return f.error();
  if (!error.status.ok()) return error;
  int32_t resolved = INT32_MAX;
  for (const auto& prompt : req.spec.prompts) {
    auto fit = FitToContext(ctx, prompt.size(), max_tokens, default_max, prompt_param, max_param);
    if (!fit.ok()) return fit.error;
    resolved = std::min(resolved, *fit.value);
  }
  req.spec.base.max_tokens = resolved;
  if (req.spec.prompts.size() * static_cast<size_t>(req.spec.n) > 128) {
    return ApiError::Field("n", "prompts × n must be at most 128");
  }
  return req;
}

}  // namespace

Parsed<OpenAiRequest> ParseCompletionRequest(const std::string& body, const ApiContext& ctx) {
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  OpenAiRequest req;
  FieldReader f(*json.value);
  if (auto unknown = CheckModel(ctx, f.String("model"))) return *unknown;
  ApiError error;
  ReadSampling(f, ctx, req);
  if (auto lp = f.Int("logprobs", 0, 5)) req.logprobs = static_cast<int>(*lp);
  req.echo = f.Bool("echo").value_or(false);
  // max_tokens 0 with echo (or prompt_logprobs): the prompt alone, scored, as vLLM and OpenAI's legacy
  // completions allow (lm-evaluation-harness scores continuations this way).
  const int64_t max_tokens = f.Int("max_tokens", 0, INT32_MAX).value_or(-1);
  const bool prompt_only = max_tokens == 0;
  if (prompt_only && !req.echo && req.prompt_logprobs < 0) {
    f.Fail("max_tokens", "max_tokens 0 (no new token) needs echo or prompt_logprobs");
  }
  if (req.echo && req.logprobs >= 0) {
    req.spec.base.prompt_logprobs = std::max(req.prompt_logprobs, req.logprobs);
  } else if (prompt_only) {
    req.spec.base.prompt_logprobs = std::max(req.prompt_logprobs, 0);
  }
  f.Unsupported("tools", "tool calling is on /v1/chat/completions");
  f.Unsupported("functions", "tool calling is on /v1/chat/completions");
  if (!f.failed()) ReadPrompts(f, ctx, req, &error);
  if (!f.failed() && error.status.ok() && (*json.value)["prompt"].is_string()) {
    auto fanned = ExpandCompletionFanOut(ctx, &req);
    if (!fanned.ok()) error = fanned.error;
  }
  if (!f.failed() && error.status.ok()) ReadSuffix(f, ctx, max_tokens, req, &error);
  if (!f.failed()) ReadConstraint(*json.value, body, ctx, req, &error);
  req.spec.base.sampling.logprobs = req.logprobs >= 0;
  req.spec.base.sampling.top_logprobs = std::max(0, req.logprobs);
  req.spec.keep_events = req.logprobs >= 0 || req.spec.base.prompt_logprobs >= 0;
  auto parsed =
      Finish(f, error, std::move(req), ctx, std::max<int64_t>(max_tokens, 0), 16, "prompt", "max_tokens");
  if (parsed.ok() && prompt_only) parsed.value->spec.base.max_tokens = 0;
  return parsed;
}

Parsed<OpenAiRequest> ParseChatRequest(const std::string& body, const ApiContext& ctx, ChatParse mode) {
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  OpenAiRequest req;
  req.chat = true;
  FieldReader f(*json.value);
  if (auto unknown = CheckModel(ctx, f.String("model"))) return *unknown;
  ApiError error;
  ReadSampling(f, ctx, req);
  int64_t max_tokens = f.Int("max_completion_tokens", 1, INT32_MAX).value_or(0);
  if (max_tokens == 0) max_tokens = f.Int("max_tokens", 1, INT32_MAX).value_or(0);
  req.chat_logprobs = f.Bool("logprobs").value_or(false);
  req.top_logprobs = static_cast<int>(f.Int("top_logprobs", 0, kMaxTopLogprobs).value_or(0));
  if (req.top_logprobs > 0 && !req.chat_logprobs)
    f.Fail("top_logprobs", "top_logprobs requires logprobs: true");
  const bool add_generation_prompt = f.Bool("add_generation_prompt").value_or(true);  // vLLM's extra field
  ReadTemplateFields(f, body, ctx, req);
  if (!f.failed()) {
    auto tools = ReadToolFields(*json.value, body);
    if (tools.ok()) {
      req.tools = std::move(*tools.value);
      req.tools.syntax = ctx.tool_syntax;
    } else {
      error = tools.error;
    }
  }
  const nlohmann::json* messages = f.Raw("messages");
  const bool harmony_template = ctx.chat_template->harmony();
  nlohmann::ordered_json normalized = nlohmann::ordered_json::array();
  if (!f.failed()) {
    if (messages == nullptr || !messages->is_array() || messages->empty()) {
      f.Fail("messages", "messages must be a non-empty array of {role, content} objects, got " +
                             (messages == nullptr ? std::string("nothing") : DescribeJson(*messages)));
    } else {
      for (size_t i = 0; i < messages->size() && !f.failed(); ++i) {
        const auto& m = (*messages)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) {
          f.Fail(where, where + " must be a {role, content} object, got " + DescribeJson(m));
          break;
        }
        FieldReader mf(m, where);
        const auto role_read = mf.Enum("role", {"system", "developer", "user", "assistant", "tool"});
        if (!mf.failed() && !role_read) mf.Fail("role", where + ".role is required");
        const std::string role = role_read.value_or("");
        std::string content;
        const nlohmann::json* c = mf.Raw("content");
        if (c == nullptr) {
          if (role != "assistant" && !mf.failed()) mf.Fail("content", where + ".content is required");
        } else if (c->is_string()) {
          content = c->get<std::string>();
        } else if (c->is_array()) {
          for (size_t k = 0; k < c->size() && !mf.failed(); ++k) {
            const nlohmann::json& part = (*c)[k];
            const std::string part_name = "content[" + std::to_string(k) + "]";
            if (!part.is_object()) {
              mf.Fail(part_name, mf.Param(part_name) + " must be a {\"type\": \"text\", \"text\": string} " +
                                     "object, got " + DescribeJson(part));
              break;
            }
            FieldReader pf(part, mf.Param(part_name));
            const auto type = pf.String("type");
            if (!pf.failed() && type != "text") {
              pf.Fail("type", pf.Param("type") +
                                  " must be \"text\" (other content types are not supported), got " +
                                  (type ? DescribeJson(nlohmann::json(*type)) : std::string("nothing")));
            }
            const auto text = pf.String("text");
            if (!pf.failed() && !text) pf.Fail("text", pf.Param("text") + " is required (a string)");
            mf.Absorb(pf);
            if (text) content += *text;
          }
        } else if (!mf.failed()) {
          mf.Fail("content",
                  where + ".content must be a string or an array of text parts, got " + DescribeJson(*c));
        }
        const auto name = mf.String("name");
        const auto tool_call_id = role == "tool" ? mf.String("tool_call_id") : std::nullopt;
        // An earlier reply's reasoning, as this API returns it (Qwen3's template shows it or leaves it out),
        // or as Ollama and gpt-oss's template name it.
        auto reasoning = role == "assistant" ? mf.String("reasoning_content") : std::nullopt;
        if (role == "assistant" && !reasoning) reasoning = mf.String("thinking");
        const nlohmann::json* tool_calls = role == "assistant" ? mf.Raw("tool_calls") : nullptr;
        if (tool_calls != nullptr && !tool_calls->is_array() && !mf.failed()) {
          mf.Fail("tool_calls", where + ".tool_calls must be an array of tool calls");
        }
        if (mf.failed()) {
          f.Absorb(mf);
          break;
        }
        nlohmann::ordered_json out = {{"role", role == "developer" ? "system" : role}, {"content", content}};
        if (name) out["name"] = *name;
        if (tool_call_id) out["tool_call_id"] = *tool_call_id;
        if (reasoning) out["reasoning_content"] = *reasoning;
        if (tool_calls != nullptr && !tool_calls->empty()) {
          auto calls =
              TemplateToolCalls(nlohmann::ordered_json::parse(tool_calls->dump()), where + ".tool_calls");
          if (!calls.ok()) {
            if (error.status.ok()) error = calls.error;
            break;
          }
          out["tool_calls"] = std::move(*calls.value);
        }
        if (harmony_template && reasoning) {
          // gpt-oss's template reads the reasoning as `thinking`, and refuses a call's message with both
          // content and thinking (llama.cpp drops the content likewise).
          out["thinking"] = *reasoning;
          if (out.contains("tool_calls")) out.erase("content");
        }
        normalized.push_back(std::move(out));
      }
    }
  }
  bool fanned_out = false;
  if (!f.failed() && error.status.ok() && req.fan_out.mode != FanOutMode::kOff &&
      req.tools.calls_possible()) {
    error = ApiError::Field("fan_out", "fan_out cannot be combined with tools");
  }
  if (!f.failed() && error.status.ok()) {
    auto fanned = ExpandChatFanOut(nlohmann::json::parse(normalized.dump()), ctx, &req);
    if (!fanned.ok()) error = fanned.error;
    fanned_out = !fanned.ok() || *fanned.value;
  }
  if (!f.failed() && error.status.ok() && !fanned_out) {
    chat::ChatTemplateInput input;
    input.messages = std::move(normalized);
    if (req.tools.calls_possible()) input.tools = req.tools.tools;
    input.add_generation_prompt = add_generation_prompt;
    input.extra = req.template_kwargs;
    auto prompt = ctx.chat_template->Apply(input);
    if (!prompt.ok()) {
      error = ApiError{prompt.status(), "messages", false};
    } else if (mode == ChatParse::kTemplateOnly) {
      req.prompt_texts.push_back(*prompt);
    } else {
      auto ids = EncodePrompt(ctx, *prompt, "messages");
      if (!ids.ok()) {
        error = ids.error;
      } else {
        if (ctx.prefix_hints) req.spec.base.shared_prefix_hint = SharedPrefixHint(ctx, input, *ids.value);
        req.prompt_texts.push_back(*prompt);
        req.spec.prompts.push_back(std::move(*ids.value));
      }
    }
  }
  if (!f.failed()) ReadConstraint(*json.value, body, ctx, req, &error);
  req.reasoning_opened = req.reasoning && !req.prompt_texts.empty() &&
                         chat::PromptOpensReasoning(req.prompt_texts.front(), req.reasoning_tags);
  req.spec.split_reasoning = req.reasoning;
  req.spec.reasoning_tags = req.reasoning_tags;
  req.spec.reasoning_opened = req.reasoning_opened;
  req.mistral_ids = ctx.chat_template->family() == "mistral";
  // Auto mode parses the output: its markers must stay in the text even where they are control tokens;
  // so must the template's reasoning tags where they are (Ministral 3's [THINK]), split or not
  // (--reasoning-format none keeps them in the content).
  std::vector<int32_t>& preserved = req.spec.base.preserved_tokens;
  if (req.tools.calls_possible() && (!req.tools.forced() || req.tools.syntax != ToolSyntax::kJson)) {
    preserved = ctx.tool_marker_tokens;
  }
  if (ctx.chat_template->reasoning_tags() && !ctx.reasoning_tag_tokens.empty()) {
    preserved.insert(preserved.end(), ctx.reasoning_tag_tokens.begin(), ctx.reasoning_tag_tokens.end());
    std::sort(preserved.begin(), preserved.end());
    preserved.erase(std::unique(preserved.begin(), preserved.end()), preserved.end());
  }
  // Harmony's replies are parsed by their special tokens (which name no tool-call markers); under
  // reasoning_format none they stay in the raw reply all the same, tools or not, as llama.cpp keeps them.
  if (ctx.chat_template->harmony()) req.spec.base.preserved_tokens = ctx.harmony_tokens;
  req.spec.harmony = req.harmony;
  if (req.harmony) req.spec.split_reasoning = true;
  req.spec.base.sampling.logprobs = req.chat_logprobs;
  req.spec.base.sampling.top_logprobs = req.top_logprobs;
  req.spec.keep_events = req.chat_logprobs || req.prompt_logprobs >= 0;
  return Finish(f, error, std::move(req), ctx, max_tokens, ctx.max_context, "messages",
                max_tokens > 0 && json.value->contains("max_completion_tokens") ? "max_completion_tokens"
                                                                                : "max_tokens");
}

}  // namespace lockstep::server
