#include "server/api_context.h"

#include "base/excerpt.h"

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
