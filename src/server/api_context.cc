#include "server/api_context.h"

#include <optional>

#include "base/excerpt.h"
#include "server/request_fields.h"

namespace lockstep::server {

Parsed<std::vector<int32_t>> EncodePrompt(const ApiContext& ctx, const std::string& text,
                                          const std::string& param) {
  auto ids = ctx.tokenizer->Encode(text, ctx.tokenizer->add_bos(), /*parse_special=*/true);
  if (!ids.ok()) return ApiError{ids.status(), param, false};
  std::vector<int32_t> out = std::move(*ids);
  const int32_t bos = ctx.tokenizer->bos_id();
  if (out.size() >= 2 && bos >= 0 && out[0] == bos && out[1] == bos) out.erase(out.begin());
  return out;
}

Parsed<std::vector<int32_t>> EncodeMixed(const ApiContext& ctx, const nlohmann::json& value, bool bos_first,
                                         const std::string& param, bool parse_special) {
  if (!value.is_string() && !value.is_array()) {
    return ApiError::Field(
        param, param + " must be a string or an array of strings and token ids, got " + DescribeJson(value));
  }
  std::vector<int32_t> ids;
  const size_t n = value.is_array() ? value.size() : 1;
  for (size_t i = 0; i < n; ++i) {
    const nlohmann::json& part = value.is_array() ? value[i] : value;
    const std::string where = value.is_array() ? param + "[" + std::to_string(i) + "]" : param;
    if (part.is_string()) {
      auto encoded = ctx.tokenizer->Encode(part.get<std::string>(), bos_first && i == 0, parse_special);
      if (!encoded.ok()) return ApiError{encoded.status(), where, false};
      ids.insert(ids.end(), encoded->begin(), encoded->end());
      continue;
    }
    if (!part.is_number_integer() || part.get<int64_t>() < 0 || part.get<int64_t>() >= ctx.vocab_size) {
      return ApiError::Field(where, where + " must be a string or a token id between 0 and " +
                                        std::to_string(ctx.vocab_size - 1) + ", got " + DescribeJson(part));
    }
    ids.push_back(part.get<int32_t>());
  }
  return ids;
}

Parsed<std::vector<PromptInput>> ReadPromptInputs(const nlohmann::json& value, const ApiContext& ctx,
                                                  const std::string& param, size_t max_prompts) {
  std::vector<PromptInput> prompts;
  const auto add_ids = [&](const nlohmann::json& arr, const std::string& where) -> std::optional<ApiError> {
    PromptInput prompt;
    for (const auto& t : arr) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= ctx.vocab_size) {
        return ApiError::Field(param, where + " must hold token ids between 0 and " +
                                          std::to_string(ctx.vocab_size - 1) + ", got " + DescribeJson(t));
      }
      prompt.ids.push_back(t.get<int32_t>());
    }
    prompt.text = ctx.tokenizer->Decode(prompt.ids);
    prompt.is_ids = true;
    prompts.push_back(std::move(prompt));
    return std::nullopt;
  };
  const auto add_text = [&](const std::string& text) -> std::optional<ApiError> {
    auto ids = EncodePrompt(ctx, text, param);
    if (!ids.ok()) return ids.error;
    prompts.push_back(PromptInput{std::move(*ids.value), text, false});
    return std::nullopt;
  };
  std::optional<ApiError> error;
  if (value.is_string()) {
    error = add_text(value.get<std::string>());
  } else if (!value.is_array() || value.empty()) {
    return ApiError::Field(param, param +
                                      " must be a string, an array of strings, an array of token ids or an "
                                      "array of arrays of token ids (non-empty)");
  } else if (value[0].is_number()) {
    error = add_ids(value, param);
  } else {
    if (value.size() > max_prompts) {
      return ApiError::Field(param, "at most " + std::to_string(max_prompts) + " prompts per request, got " +
                                        std::to_string(value.size()));
    }
    for (size_t i = 0; i < value.size() && !error; ++i) {
      const auto& item = value[i];
      const std::string where = param + "[" + std::to_string(i) + "]";
      if (item.is_string()) {
        error = add_text(item.get<std::string>());
      } else if (item.is_array()) {
        error = add_ids(item, where);
      } else {
        error = ApiError::Field(param, where + " must be a string or an array of token ids");
      }
    }
  }
  if (error) return *error;
  return prompts;
}

ApiError ModelNotFound(const ApiContext& ctx, const std::string& model) {
  std::string served;
  for (const std::string& id : ctx.model_ids) served += (served.empty() ? "'" : ", '") + id + "'";
  ApiError error{
      NotFound("the model '" + Excerpt(model) + "' does not exist (this server serves " + served + ")"),
      "model"};
  error.code = "model_not_found";
  return error;
}

std::optional<ApiError> CheckModel(const ApiContext& ctx, const std::optional<std::string>& model) {
  if (!model || model->empty()) return std::nullopt;
  // Hugging Face's JavaScript client, given an endpoint, sends that endpoint's URL as the model: a URL names
  // the server, not a model, and is served by the loaded one (as TGI, which ignores `model`, does).
  if (model->rfind("http://", 0) == 0 || model->rfind("https://", 0) == 0) return std::nullopt;
  for (const std::string& id : ctx.model_ids) {
    if (*model == id) return std::nullopt;
  }
  return ModelNotFound(ctx, *model);
}

Parsed<int32_t> FitToContext(const ApiContext& ctx, size_t prompt_len, int64_t max_tokens,
                             int64_t default_max, const std::string& param, const std::string& max_param) {
  if (prompt_len == 0) return ApiError::Field(param, param + " is empty (no tokens)");
  const int64_t context = ctx.max_context;
  // What bounds a request: the model's context, or the server's KV cache when that is smaller.
  const std::string limit = ctx.kv_limited ? "this server's KV cache holds " : "this model's context is ";
  if (static_cast<int64_t>(prompt_len) >= context) {
    return ApiError{OutOfRange("the prompt is " + std::to_string(prompt_len) + " tokens long and " + limit +
                               std::to_string(context) + " tokens (prompt + generated tokens must fit)"),
                    param, false};
  }
  const int64_t room = context - static_cast<int64_t>(prompt_len);
  if (max_tokens > 0) {
    if (max_tokens > room) {
      return ApiError{
          OutOfRange(limit + std::to_string(context) + " tokens; the prompt has " +
                     std::to_string(prompt_len) + " and " + max_param + " asks for " +
                     std::to_string(max_tokens) + " more (at most " + std::to_string(room) + " fit)"),
          max_param, false};
    }
    return static_cast<int32_t>(max_tokens);
  }
  return static_cast<int32_t>(std::min(default_max, room));
}

}  // namespace lockstep::server
