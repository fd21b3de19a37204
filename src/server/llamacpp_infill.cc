// llama.cpp's POST /infill: the prompt layout and budget, and the request's own fields (the rest is
// /completion's parser, ParseLlamaCppRequest).
#include "server/llamacpp_infill.h"

#include <algorithm>
#include <optional>

#include "server/request_fields.h"

namespace lockstep::server {
// Named, not anonymous: the server is a unity build.
namespace llamacpp_infill {

constexpr int64_t kLlamaCppBatch = 2048;  // llama.cpp's default n_batch
constexpr int64_t kSlack = 3;             // BOS, FIM_MID and one token to generate
constexpr size_t kMaxExtraChunks = 256;
constexpr const char* kRepoName = "myproject\n";             // llama.cpp's fixed repository name
constexpr const char* kFileName = "filename\n";              // ... and the current file's name
constexpr const char* kDefaultChunkName = "tmp";             // a chunk without a filename
constexpr const char* kSnippet = "\n\n--- snippet ---\n\n";  // chunk separator without FIM_SEP

// Text tokenized as llama.cpp's infill does: no BOS, special-token text kept as text.
Parsed<std::vector<int32_t>> Plain(const ApiContext& ctx, const std::string& text, const std::string& param) {
  auto ids = ctx.tokenizer->Encode(text, /*add_bos=*/false, /*parse_special=*/false);
  if (!ids.ok()) return ApiError{ids.status(), param, false};
  return std::move(*ids);
}

// Appends Plain(text); the error where the vocabulary cannot represent the text.
std::optional<ApiError> AppendPlain(const ApiContext& ctx, const std::string& text, const std::string& param,
                                    std::vector<int32_t>& out) {
  auto ids = Plain(ctx, text, param);
  if (!ids.ok()) return ids.error;
  out.insert(out.end(), ids.value->begin(), ids.value->end());
  return std::nullopt;
}

// One input_extra chunk: {"text": string, "filename"?: string}, after its separator.
Parsed<bool> AddChunk(const ApiContext& ctx, const nlohmann::json& chunk, size_t i,
                      std::vector<int32_t>& out) {
  const std::string where = "input_extra[" + std::to_string(i) + "]";
  if (!chunk.is_object()) {
    return ApiError::Field(
        where,
        where + " must be an object {\"filename\": string, \"text\": string}, got " + DescribeJson(chunk));
  }
  FieldReader f(chunk, where);
  const auto text = f.String("text");
  const auto filename = f.String("filename");
  if (!f.failed() && !text) f.Fail("text", where + ".text is required (a string)");
  if (f.failed()) return f.error();
  const int32_t sep = ctx.tokenizer->fim().sep;
  if (sep >= 0) {
    out.push_back(sep);
    if (auto e = AppendPlain(ctx, filename.value_or(kDefaultChunkName) + "\n", where + ".filename", out))
      return *e;
  } else if (auto e = AppendPlain(ctx, kSnippet, where, out)) {
    return *e;
  }
  if (auto e = AppendPlain(ctx, *text, where + ".text", out)) return *e;
  return true;
}

// llama.cpp's model check, in its words and with its answer (501, not_supported_error): every missing token
// named.
std::optional<ApiError> CheckFimTokens(const FimTokens& fim) {
  std::string missing;
  if (fim.pre < 0) missing += " prefix token is missing.";
  if (fim.suf < 0) missing += " suffix token is missing.";
  if (fim.mid < 0) missing += " middle token is missing.";
  if (missing.empty()) return std::nullopt;
  ApiError error{Unimplemented("Infill is not supported by this model:" + missing), "", false};
  error.http_status = 501;
  return error;
}

// input_prefix / input_suffix: required; a string or an array of strings and token ids.
Parsed<std::vector<int32_t>> ReadSide(FieldReader& f, const ApiContext& ctx, const char* name) {
  const nlohmann::json* v = f.Raw(name);
  if (v == nullptr) {
    return ApiError::Field(
        name, std::string(name) + " is required (a string or an array of strings and token ids)");
  }
  return EncodeMixed(ctx, *v, /*bos_first=*/false, name, /*parse_special=*/false);
}

// The reader /infill gives ParseLlamaCppRequest: one prompt, laid out.
Parsed<bool> ReadInfillPrompt(FieldReader& f, const ApiContext& ctx, LlamaCppRequest& req) {
  const auto prompt = f.String("prompt");
  const nlohmann::json* extra = f.Raw("input_extra");
  if (f.failed()) return f.error();
  InfillParts parts;
  auto prefix = ReadSide(f, ctx, "input_prefix");
  if (!prefix.ok()) return prefix.error;
  parts.prefix = std::move(*prefix.value);
  auto suffix = ReadSide(f, ctx, "input_suffix");
  if (!suffix.ok()) return suffix.error;
  parts.suffix = std::move(*suffix.value);
  if (prompt) {
    auto ids = ctx.tokenizer->Encode(*prompt, /*add_bos=*/false, /*parse_special=*/true);
    if (!ids.ok()) return ApiError{ids.status(), "prompt", false};
    parts.prompt = std::move(*ids);
  }
  auto extra_ids = InfillExtraTokens(ctx, extra);
  if (!extra_ids.ok()) return extra_ids.error;
  parts.extra = std::move(*extra_ids.value);
  const int32_t bos = ctx.tokenizer->add_bos() ? ctx.tokenizer->bos_id() : -1;
  req.spec.prompts.push_back(
      LayOutInfill(parts, ctx.tokenizer->fim(), bos, InfillBudgetFor(ctx.max_context, req.n_predict)));
  return true;
}

}  // namespace llamacpp_infill

InfillBudget InfillBudgetFor(int64_t n_ctx, int64_t n_predict) {
  return InfillBudget{n_ctx, std::min(llamacpp_infill::kLlamaCppBatch, n_ctx / 2), n_predict};
}

std::vector<int32_t> LayOutInfill(const InfillParts& parts, const FimTokens& fim, int32_t bos,
                                  const InfillBudget& budget) {
  const int64_t quarter = budget.n_batch / 4;
  const auto n_prefix = std::min<int64_t>(static_cast<int64_t>(parts.prefix.size()), 3 * quarter);
  const auto n_suffix =
      std::min<int64_t>(static_cast<int64_t>(parts.suffix.size()),
                        std::max<int64_t>(0, quarter - 2 - static_cast<int64_t>(parts.prompt.size())));
  const int64_t reserved =
      budget.n_batch + 2 * std::max<int64_t>(0, budget.n_predict) + llamacpp_infill::kSlack;
  const auto n_extra = std::min<int64_t>(static_cast<int64_t>(parts.extra.size()),
                                         std::max<int64_t>(0, budget.n_ctx - reserved));
  std::vector<int32_t> out(parts.extra.end() - n_extra, parts.extra.end());  // the chunks nearest the file
  if (bos >= 0) out.push_back(bos);
  out.push_back(fim.pre);
  out.insert(out.end(), parts.prefix.end() - n_prefix, parts.prefix.end());  // the text nearest the cursor
  out.insert(out.end(), parts.prompt.begin(), parts.prompt.end());
  out.push_back(fim.suf);
  out.insert(out.end(), parts.suffix.begin(), parts.suffix.begin() + n_suffix);
  out.push_back(fim.mid);
  return out;
}

Parsed<std::vector<int32_t>> InfillExtraTokens(const ApiContext& ctx, const nlohmann::json* input_extra) {
  using namespace llamacpp_infill;  // NOLINT(build/namespaces): this file's own helpers
  if (input_extra != nullptr && !input_extra->is_array()) {
    return ApiError::Field("input_extra",
                           "input_extra must be an array of {\"filename\": string, \"text\": string}, got " +
                               DescribeJson(*input_extra));
  }
  if (input_extra != nullptr && input_extra->size() > kMaxExtraChunks) {
    return ApiError::Field("input_extra", "input_extra may hold at most " + std::to_string(kMaxExtraChunks) +
                                              " chunks, got " + std::to_string(input_extra->size()));
  }
  const FimTokens& fim = ctx.tokenizer->fim();
  std::vector<int32_t> out;
  if (fim.rep >= 0) {
    out.push_back(fim.rep);
    if (auto e = AppendPlain(ctx, kRepoName, "input_extra", out)) return *e;
  }
  for (size_t i = 0; input_extra != nullptr && i < input_extra->size(); ++i) {
    if (auto added = AddChunk(ctx, (*input_extra)[i], i, out); !added.ok()) return added.error;
  }
  if (fim.sep >= 0) {
    out.push_back(fim.sep);
    if (auto e = AppendPlain(ctx, kFileName, "input_extra", out)) return *e;
  }
  return out;
}

Parsed<std::vector<int32_t>> InfillPrompt(const ApiContext& ctx, const std::string& prefix,
                                          const std::string& suffix, int64_t n_predict,
                                          const std::string& prefix_param, const std::string& suffix_param) {
  if (auto error = llamacpp_infill::CheckFimTokens(ctx.tokenizer->fim())) return *error;
  InfillParts parts;
  auto prefix_ids = llamacpp_infill::Plain(ctx, prefix, prefix_param);
  if (!prefix_ids.ok()) return prefix_ids.error;
  parts.prefix = std::move(*prefix_ids.value);
  auto suffix_ids = llamacpp_infill::Plain(ctx, suffix, suffix_param);
  if (!suffix_ids.ok()) return suffix_ids.error;
  parts.suffix = std::move(*suffix_ids.value);
  auto extra = InfillExtraTokens(ctx, nullptr);  // the repo and file markers where the vocabulary has them
  if (!extra.ok()) return extra.error;
  parts.extra = std::move(*extra.value);
  const int32_t bos = ctx.tokenizer->add_bos() ? ctx.tokenizer->bos_id() : -1;
  return LayOutInfill(parts, ctx.tokenizer->fim(), bos, InfillBudgetFor(ctx.max_context, n_predict));
}

Parsed<LlamaCppRequest> ParseLlamaCppInfill(const std::string& body, const ApiContext& ctx) {
  if (auto error = llamacpp_infill::CheckFimTokens(ctx.tokenizer->fim())) return *error;
  return ParseLlamaCppRequest(body, ctx, llamacpp_infill::ReadInfillPrompt);
}

}  // namespace lockstep::server
