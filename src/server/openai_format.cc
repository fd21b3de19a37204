// Response shapes of the OpenAI routes: whole responses, stream chunks, usage, logprobs, models.
#include <algorithm>
#include <string_view>

#include "chat/reasoning.h"
#include "server/harmony_reply.h"
#include "server/openai_api.h"

namespace lockstep::server {
namespace {

std::string TokenText(const ApiContext& ctx, int32_t token) { return ctx.tokenizer->TokenBytes(token); }

// Characters (code points) in UTF-8 text: its bytes that do not continue a character. text_offset counts
// these, as OpenAI and vLLM do (offsets into the returned string, not into its bytes).
size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

nlohmann::json Bytes(const std::string& s) {
  nlohmann::json out = nlohmann::json::array();
  for (unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}

// Completions format: parallel arrays tokens / token_logprobs / top_logprobs / text_offset.
struct CompletionLogprobs {
  nlohmann::json tokens = nlohmann::json::array();
  nlohmann::json token_logprobs = nlohmann::json::array();
  nlohmann::json top_logprobs = nlohmann::json::array();
  nlohmann::json text_offset = nlohmann::json::array();
  // offset: the token's first character in the choice's text; advanced past the token.
  void Add(const ApiContext& ctx, const TokenEvent& e, int top_n, size_t* offset) {
    const std::string text = TokenText(ctx, e.token);
    tokens.push_back(text);
    token_logprobs.push_back(e.logprob);
    nlohmann::json top = nlohmann::json::object();
    for (size_t i = 0; i < e.top_logprobs.size() && static_cast<int>(i) < top_n; ++i) {
      top[TokenText(ctx, e.top_logprobs[i].token)] = e.top_logprobs[i].logprob;
    }
    top_logprobs.push_back(top);
    text_offset.push_back(*offset);
    *offset += CodePoints(text);
  }
  // Echo: prompt `index`'s tokens, the first without a logprob (nothing precedes it). Offsets index the
  // echoed text: each token's place in the prompt's decoding (control tokens take no room in a text prompt; a
  // token-id prompt's text is its decoding with them). Nothing when the choice ended before its prompt was
  // scored (cancelled, an error: scores null).
  void AddPrompt(const ApiContext& ctx, const OpenAiRequest& req, int index,
                 const std::vector<PromptLogprob>* scores, int top_n) {
    if (scores == nullptr) return;
    const std::vector<int32_t>& prompt = req.spec.prompts[static_cast<size_t>(index)];
    const bool from_ids = req.prompt_is_ids[static_cast<size_t>(index)];
    const size_t end = CodePoints(req.prompt_texts[static_cast<size_t>(index)]);
    IncrementalDetokenizer decoded(*ctx.tokenizer, /*skip_special=*/!from_ids);
    size_t offset = 0;
    for (size_t i = 0; i < prompt.size(); ++i) {
      const std::string text = TokenText(ctx, prompt[i]);
      tokens.push_back(text);
      text_offset.push_back(std::min(offset, end));
      offset += CodePoints(decoded.Push(prompt[i]));
      if (i == 0) {
        token_logprobs.push_back(nullptr);
        top_logprobs.push_back(nullptr);
        continue;
      }
      const PromptLogprob& score = (*scores)[i - 1];
      token_logprobs.push_back(score.logprob);
      nlohmann::json top = nlohmann::json::object();
      for (size_t k = 0; k < score.top.size() && static_cast<int>(k) < top_n; ++k) {
        top[TokenText(ctx, score.top[k].token)] = score.top[k].logprob;
      }
      top_logprobs.push_back(top);
    }
  }
  nlohmann::json Json() const {
    return {{"tokens", tokens},
            {"token_logprobs", token_logprobs},
            {"top_logprobs", top_logprobs},
            {"text_offset", text_offset}};
  }
};

// vLLM's prompt_logprobs: null for the first token, then for each token {"id": {logprob, rank,
// decoded_token}} holding the token itself and its top_n most likely alternatives (the engine may have
// listed more, for echo's logprobs). null when the prompt was not scored (scores null).
nlohmann::json VllmPromptLogprobs(const ApiContext& ctx, const std::vector<PromptLogprob>* scores,
                                  int top_n) {
  if (scores == nullptr) return nullptr;
  nlohmann::json out = nlohmann::json::array({nullptr});
  for (const PromptLogprob& score : *scores) {
    const auto entry = [&](int32_t token, float logprob, int32_t rank) {
      return nlohmann::json{{"logprob", logprob}, {"rank", rank}, {"decoded_token", TokenText(ctx, token)}};
    };
    nlohmann::json position = nlohmann::json::object();
    position[std::to_string(score.token)] = entry(score.token, score.logprob, score.rank);
    for (size_t k = 0; k < score.top.size() && static_cast<int>(k) < top_n; ++k) {
      const std::string key = std::to_string(score.top[k].token);
      if (!position.contains(key))
        position[key] = entry(score.top[k].token, score.top[k].logprob, static_cast<int32_t>(k) + 1);
    }
    out.push_back(std::move(position));
  }
  return out;
}

nlohmann::json Usage(GenerationJob& job) {
  const int prompt = job.prompt_tokens();
  const int completion = job.completion_tokens();
  nlohmann::json usage = {{"prompt_tokens", prompt},
                          {"completion_tokens", completion},
                          {"total_tokens", prompt + completion},
                          {"prompt_tokens_details", {{"cached_tokens", job.cached_tokens()}}}};
  if (job.spec().split_reasoning)
    usage["completion_tokens_details"] = {{"reasoning_tokens", job.reasoning_tokens()}};
  return usage;
}

nlohmann::json Envelope(const OpenAiRequest& req, const ApiContext& ctx, const std::string& id,
                        int64_t created, bool chunk) {
  return {{"id", id},
          {"object", req.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", created},
          {"model", ctx.model_id},
          {"system_fingerprint", "lockstep"}};
}

// What seeds a choice's tool call ids: the same for its stream and its whole response.
std::string ToolIdSeed(const std::string& id, const ChoiceState& c) {
  return id + "#" + std::to_string(c.index);
}

// A whole chat choice's message: its reasoning, content and tool calls (from <think> splitting and the
// tool-call formats, or from Harmony's messages). `*called`: the reply made calls.
nlohmann::json ChatMessage(const OpenAiRequest& req, const ChoiceState& c, const std::string& seed,
                           bool* called) {
  std::optional<std::string> reasoning;
  ToolOutput tools;
  if (req.harmony) {
    HarmonyReply reply = HarmonyWhole(req.tools, c.text, seed, req.mistral_ids);
    reasoning = std::move(reply.reasoning);
    tools = std::move(reply.output);
  } else {
    chat::ReasoningSplit split =
        req.reasoning ? chat::SplitReasoning(c.text, req.reasoning_tags, req.reasoning_opened, true)
                      : chat::ReasoningSplit{std::nullopt, c.text};
    reasoning = std::move(split.reasoning);
    tools = req.tools.calls_possible() ? ParseToolOutput(req.tools, split.content, seed, req.mistral_ids)
                                       : ToolOutput{std::move(split.content), {}};
  }
  nlohmann::json message = {
      {"role", "assistant"},
      {"content", tools.content ? nlohmann::json(*tools.content) : nlohmann::json(nullptr)}};
  if (reasoning) message["reasoning_content"] = *reasoning;
  if (!tools.calls.empty()) {
    nlohmann::json calls = nlohmann::json::array();
    for (const ToolCall& call : tools.calls) {
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  *called = !tools.calls.empty();
  return message;
}

}  // namespace

nlohmann::json ChatLogprobEntry(const ApiContext& ctx, const TokenEvent& e) {
  const std::string text = TokenText(ctx, e.token);
  nlohmann::json top = nlohmann::json::array();
  for (const auto& t : e.top_logprobs) {
    const std::string tt = TokenText(ctx, t.token);
    top.push_back({{"token", tt}, {"logprob", t.logprob}, {"bytes", Bytes(tt)}});
  }
  return {{"token", text}, {"logprob", e.logprob}, {"bytes", Bytes(text)}, {"top_logprobs", top}};
}

nlohmann::json OpenAiFinishReason(ChoiceEnd end) {
  switch (end) {
    case ChoiceEnd::kStop:
      return "stop";
    case ChoiceEnd::kLength:
      return "length";
    case ChoiceEnd::kTimeout:
      return "timeout";
    case ChoiceEnd::kAbort:
      return "abort";
    default:
      return nullptr;
  }
}

nlohmann::json OpenAiResponse(const OpenAiRequest& req, GenerationJob& job, const ApiContext& ctx,
                              const std::string& id, int64_t created) {
  nlohmann::json out = Envelope(req, ctx, id, created, false);
  nlohmann::json choices = nlohmann::json::array();
  for (const ChoiceState& c : job.choices()) {
    nlohmann::json choice = {{"index", c.index}, {"finish_reason", OpenAiFinishReason(c.end)}};
    if (req.chat) {
      bool called = false;
      choice["message"] = ChatMessage(req, c, ToolIdSeed(id, c), &called);
      // A choice cut short keeps its reason ("length", ...): its last call may be incomplete.
      if (called && c.end == ChoiceEnd::kStop) choice["finish_reason"] = "tool_calls";
      if (req.chat_logprobs) {
        nlohmann::json content = nlohmann::json::array();
        for (const TokenEvent& e : c.events) {
          if (e.token != kNoToken) content.push_back(ChatLogprobEntry(ctx, e));
        }
        choice["logprobs"] = {{"content", content}};
      } else {
        choice["logprobs"] = nullptr;
      }
    } else {
      const std::string& prefix = req.echo ? req.prompt_texts[static_cast<size_t>(c.prompt_index)] : "";
      choice["text"] = prefix + c.text;
      if (req.prompt_logprobs >= 0)
        choice["prompt_logprobs"] = VllmPromptLogprobs(ctx, PromptScores(job.spec(), c), req.prompt_logprobs);
      if (req.logprobs >= 0) {
        CompletionLogprobs lp;
        if (req.echo) lp.AddPrompt(ctx, req, c.prompt_index, PromptScores(job.spec(), c), req.logprobs);
        size_t offset = CodePoints(prefix);
        for (const TokenEvent& e : c.events) {
          if (e.token != kNoToken) lp.Add(ctx, e, req.logprobs, &offset);
        }
        choice["logprobs"] = lp.Json();
      } else {
        choice["logprobs"] = nullptr;
      }
    }
    choices.push_back(std::move(choice));
  }
  out["choices"] = std::move(choices);
  if (req.chat && req.prompt_logprobs >= 0 && !job.choices().empty()) {  // vLLM: one list, beside choices
    out["prompt_logprobs"] =
        VllmPromptLogprobs(ctx, PromptScores(job.spec(), job.choices()[0]), req.prompt_logprobs);
  }
  out["usage"] = Usage(job);
  return out;
}

std::optional<nlohmann::json> OpenAiChunk(const OpenAiRequest& req, const ChoiceState& choice,
                                          const TokenEvent& event, bool first_for_choice,
                                          const ApiContext& ctx, const std::string& id, int64_t created) {
  const bool has_token = event.token != kNoToken;
  const bool wants_logprobs = req.chat ? req.chat_logprobs : req.logprobs >= 0;
  // Harmony replies go the tool-call way whether tools were given or not (their content is parsed).
  const bool tools = req.chat && (req.tools.calls_possible() || req.harmony);
  // The reply's text before and after this event: its content part when reasoning is split out.
  std::string_view after = choice.text;
  std::string_view before = after.substr(0, after.size() - event.text_delta.size());
  std::string content_delta = event.text_delta;
  std::string reasoning_delta;
  chat::ReasoningSplit split_before, split_after;
  if (req.chat && req.reasoning) {
    split_before = chat::SplitReasoning(before, req.reasoning_tags, req.reasoning_opened, /*final=*/false);
    split_after = chat::SplitReasoning(after, req.reasoning_tags, req.reasoning_opened, event.last());
    reasoning_delta = split_after.reasoning.value_or("").substr(split_before.reasoning.value_or("").size());
    content_delta = split_after.content.substr(split_before.content.size());
    before = split_before.content;
    after = split_after.content;
  }
  std::optional<ToolStreamDelta> tool_delta;
  if (req.chat && req.harmony) {
    HarmonyDelta d =
        HarmonyStreamStep(req.tools, before, after, event.last(), ToolIdSeed(id, choice), req.mistral_ids);
    reasoning_delta = std::move(d.reasoning);
    tool_delta = std::move(d.tool);
  } else if (tools) {
    tool_delta = ToolStreamStep(req.tools, before, after, first_for_choice, event.last(),
                                ToolIdSeed(id, choice), req.mistral_ids);
  }
  const bool has_text =
      !reasoning_delta.empty() ||
      (tools ? !tool_delta->content.empty() || tool_delta->tool_calls.is_array() : !content_delta.empty());
  if (!has_text && !event.last() && !first_for_choice && !(wants_logprobs && has_token)) {
    return std::nullopt;
  }
  nlohmann::json out = Envelope(req, ctx, id, created, true);
  nlohmann::json c = {
      {"index", choice.index},
      {"finish_reason", event.last() ? OpenAiFinishReason(choice.end) : nlohmann::json(nullptr)}};
  if (req.chat) {
    nlohmann::json delta = nlohmann::json::object();
    if (first_for_choice) delta["role"] = "assistant";
    if (!reasoning_delta.empty()) delta["reasoning_content"] = reasoning_delta;
    if (tools) {
      if (!tool_delta->content.empty()) {
        delta["content"] = tool_delta->content;
      } else if (first_for_choice) {
        delta["content"] = req.tools.forced() ? nlohmann::json(nullptr) : nlohmann::json("");
      }
      if (tool_delta->tool_calls.is_array()) delta["tool_calls"] = std::move(tool_delta->tool_calls);
      if (event.last() && tool_delta->called && choice.end == ChoiceEnd::kStop)
        c["finish_reason"] = "tool_calls";
    } else if (!content_delta.empty() || first_for_choice) {
      delta["content"] = content_delta;
    }
    c["delta"] = std::move(delta);
    if (wants_logprobs && has_token) {
      c["logprobs"] = {{"content", nlohmann::json::array({ChatLogprobEntry(ctx, event)})}};
    } else {
      c["logprobs"] = nullptr;
    }
  } else {
    std::string text = event.text_delta;
    if (first_for_choice && req.echo)
      text = req.prompt_texts[static_cast<size_t>(choice.prompt_index)] + text;
    c["text"] = text;
    const bool prompt_scores = first_for_choice && req.echo && wants_logprobs;
    if (wants_logprobs && (has_token || prompt_scores)) {
      CompletionLogprobs lp;
      // Offsets as in the whole response: the echoed prompt, then the texts of the tokens before this one
      // (the choice keeps its events when logprobs are asked for; the last one is this event).
      size_t offset = req.echo ? CodePoints(req.prompt_texts[static_cast<size_t>(choice.prompt_index)]) : 0;
      for (size_t i = 0; i + 1 < choice.events.size(); ++i) {
        if (choice.events[i].token != kNoToken) offset += CodePoints(TokenText(ctx, choice.events[i].token));
      }
      if (prompt_scores) {
        lp.AddPrompt(ctx, req, choice.prompt_index, PromptScores(req.spec, choice), req.logprobs);
      }
      if (has_token) lp.Add(ctx, event, req.logprobs, &offset);
      c["logprobs"] = lp.Json();
    } else {
      c["logprobs"] = nullptr;
    }
  }
  out["choices"] = nlohmann::json::array({std::move(c)});
  if (req.include_usage) out["usage"] = nullptr;
  return out;
}

std::vector<nlohmann::json> SplitToolChunk(const OpenAiRequest& req, nlohmann::json chunk) {
  if (!req.chat || !req.tools.calls_possible()) return {std::move(chunk)};
  nlohmann::json choice = chunk["choices"][0];
  nlohmann::json delta = choice["delta"];
  nlohmann::json calls = delta.contains("tool_calls") ? delta["tool_calls"] : nlohmann::json::array();
  delta.erase("tool_calls");
  const nlohmann::json finish = choice["finish_reason"];
  const bool lead = !delta.empty() || (choice.contains("logprobs") && !choice["logprobs"].is_null());
  if (calls.empty() && (finish.is_null() || !lead)) return {std::move(chunk)};
  std::vector<nlohmann::json> out;
  const auto piece = [&](nlohmann::json d, const nlohmann::json& finish_reason, bool logprobs) {
    nlohmann::json c = chunk;
    nlohmann::json ch = choice;
    ch["delta"] = std::move(d);
    ch["finish_reason"] = finish_reason;
    if (!logprobs && ch.contains("logprobs")) ch["logprobs"] = nullptr;
    c["choices"] = nlohmann::json::array({std::move(ch)});
    out.push_back(std::move(c));
  };
  if (lead) piece(delta, nullptr, true);
  for (const nlohmann::json& call : calls) {
    piece({{"tool_calls", nlohmann::json::array({call})}}, nullptr, false);
  }
  if (!finish.is_null()) piece(nlohmann::json::object(), finish, false);
  return out;
}

nlohmann::json OpenAiUsageChunk(const OpenAiRequest& req, GenerationJob& job, const ApiContext& ctx,
                                const std::string& id, int64_t created) {
  nlohmann::json out = Envelope(req, ctx, id, created, true);
  out["choices"] = nlohmann::json::array();
  out["usage"] = Usage(job);
  return out;
}

nlohmann::json OpenAiModels(const ApiContext& ctx) {
  nlohmann::json data = nlohmann::json::array();
  for (const std::string& id : ctx.model_ids) {
    data.push_back({{"id", id},
                    {"object", "model"},
                    {"created", ctx.created},
                    {"owned_by", "lockstep"},
                    {"max_model_len", ctx.max_context}});
  }
  return {{"object", "list"}, {"data", std::move(data)}};
}

}  // namespace lockstep::server
