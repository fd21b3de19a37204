#include "server/tokenize_api.h"

#include <vector>

#include "server/openai_api.h"
#include "server/request_fields.h"
#include "tokenizer/utf8.h"

namespace lockstep::server {
namespace {

// A token id field: an integer in the vocabulary.
bool ReadTokenId(const nlohmann::json& value, const ApiContext& ctx, const std::string& where, int32_t* id,
                 ApiError* error) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() >= ctx.vocab_size) {
    *error = ApiError::Field(where, where + " must be a token id between 0 and " +
                                        std::to_string(ctx.vocab_size - 1) + ", got " + DescribeJson(value));
    return false;
  }
  *id = value.get<int32_t>();
  return true;
}

// llama.cpp's /tokenize: content is a string or a mix of strings and token ids; add_special applies to the
// first element only when it is a string.
Parsed<nlohmann::json> LlamaCppTokenize(const nlohmann::json& body, FieldReader& f, const ApiContext& ctx) {
  const bool add_special = f.Bool("add_special").value_or(false);
  const bool with_pieces = f.Bool("with_pieces").value_or(false);
  if (f.failed()) return f.error();
  auto encoded = EncodeMixed(ctx, body["content"], add_special, "content");
  if (!encoded.ok()) return encoded.error;
  const std::vector<int32_t>& ids = *encoded.value;
  nlohmann::json tokens = nlohmann::json::array();
  for (int32_t id : ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    const std::string piece = ctx.tokenizer->TokenBytes(id);
    nlohmann::json piece_json = piece;
    if (utf8::FindInvalid(piece) != std::string::npos) {
      piece_json = nlohmann::json::array();
      for (unsigned char c : piece) piece_json.push_back(int(c));
    }
    tokens.push_back({{"id", id}, {"piece", std::move(piece_json)}});
  }
  return nlohmann::json{{"tokens", std::move(tokens)}};
}

nlohmann::json VllmTokens(const std::vector<int32_t>& ids, bool token_strs, const ApiContext& ctx) {
  nlohmann::json out = {{"count", ids.size()}, {"max_model_len", ctx.max_context}, {"tokens", ids}};
  if (token_strs) {
    nlohmann::json strs = nlohmann::json::array();
    for (int32_t id : ids) strs.push_back(ctx.tokenizer->TokenPiece(id));
    out["token_strs"] = std::move(strs);
  }
  return out;
}

// A chat body that makes several prompts (server-side fan_out) has no one template output.
ApiError OnePromptOnly() {
  return ApiError::Field("fan_out", "fan_out makes several prompts; this route takes a body with one");
}

}  // namespace

Parsed<nlohmann::json> TokenizeResponse(const std::string& body, const ApiContext& ctx) {
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  FieldReader f(*json.value);
  if (f.Has("content")) return LlamaCppTokenize(*json.value, f, ctx);
  const bool token_strs = f.Bool("return_token_strs").value_or(false);
  if (f.Has("messages")) {
    if (f.failed()) return f.error();
    auto chat = ParseChatRequest(body, ctx);
    if (!chat.ok()) return chat.error;
    if (chat.value->spec.prompts.size() != 1) return OnePromptOnly();
    return VllmTokens(chat.value->spec.prompts[0], token_strs, ctx);
  }
  if (!f.Has("prompt")) {
    return ApiError::Field("content", "give content (llama.cpp's shape), or prompt or messages (vLLM's)");
  }
  const std::optional<std::string> prompt = f.String("prompt");
  const bool add_special = f.Bool("add_special_tokens").value_or(true);
  if (f.failed()) return f.error();
  auto ids = ctx.tokenizer->Encode(*prompt, add_special && ctx.tokenizer->add_bos(), /*parse_special=*/true);
  if (!ids.ok()) return ApiError{ids.status(), "prompt", false};
  return VllmTokens(*ids, token_strs, ctx);
}

Parsed<nlohmann::json> DetokenizeResponse(const std::string& body, const ApiContext& ctx) {
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  const nlohmann::json* tokens = FieldReader(*json.value).Raw("tokens");
  if (tokens == nullptr || !tokens->is_array()) {
    return ApiError::Field("tokens", "tokens must be an array of token ids");
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens->size(); ++i) {
    int32_t id = 0;
    ApiError error;
    if (!ReadTokenId((*tokens)[i], ctx, "tokens[" + std::to_string(i) + "]", &id, &error)) return error;
    ids.push_back(id);
  }
  const std::string text = ctx.tokenizer->Decode(ids, /*skip_special=*/false);
  return nlohmann::json{{"content", text}, {"prompt", text}};
}

Parsed<nlohmann::json> ApplyTemplateResponse(const std::string& body, const ApiContext& ctx) {
  auto chat = ParseChatRequest(body, ctx, ChatParse::kTemplateOnly);
  if (!chat.ok()) return chat.error;
  if (chat.value->prompt_texts.size() != 1) return OnePromptOnly();
  return nlohmann::json{{"prompt", chat.value->prompt_texts[0]}};
}

}  // namespace lockstep::server
