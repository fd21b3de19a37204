#include "server/rerank_api.h"

#include <algorithm>
#include <numeric>

#include "model/classifier.h"
#include "server/request_fields.h"

namespace lockstep::server {
namespace {

// The 400 for a model without a classifier head (checked before anything else, as llama.cpp does).
std::optional<ApiError> CannotRank(const ApiContext& ctx) {
  if (ctx.can_rank) return std::nullopt;
  return ApiError::Field("model",
                         "the model '" + ctx.model_id +
                             "' cannot rank: it has no classifier head (cls.output.weight, rank pooling); "
                             "start the server with --reranking to score with the logits of yes/no tokens");
}

// A required field holding a non-empty array of strings (at most kMaxRerankDocuments); errors name it.
std::optional<std::vector<std::string>> ReadTexts(FieldReader& f, const char* name) {
  const nlohmann::json* raw = f.Raw(name);
  if (raw == nullptr) {
    if (!f.failed()) f.Fail(name, std::string(name) + " is required (a non-empty array of strings)");
    return std::nullopt;
  }
  if (!raw->is_array() || raw->empty()) {
    f.Fail(name, std::string(name) + " must be a non-empty array of strings, got " + DescribeJson(*raw));
    return std::nullopt;
  }
  return f.StringOrList(name, kMaxRerankDocuments);
}

// documents: strings, or Cohere's and Jina's document objects {"text": string} (other keys ignored), mixed.
std::optional<std::vector<std::string>> ReadDocuments(FieldReader& f) {
  const nlohmann::json* raw = f.Raw("documents");
  if (raw == nullptr || !raw->is_array() || raw->empty()) return ReadTexts(f, "documents");  // its messages
  if (raw->size() > kMaxRerankDocuments) {
    f.Fail("documents", "documents may hold at most " + std::to_string(kMaxRerankDocuments) +
                            " entries, got " + std::to_string(raw->size()));
    return std::nullopt;
  }
  std::vector<std::string> texts;
  for (size_t i = 0; i < raw->size(); ++i) {
    const nlohmann::json& item = (*raw)[i];
    if (item.is_string()) {
      texts.push_back(item.get<std::string>());
    } else if (item.is_object() && item.contains("text") && item["text"].is_string()) {
      texts.push_back(item["text"].get<std::string>());
    } else {
      f.Fail("documents", "documents[" + std::to_string(i) +
                              "] must be a string or an object with a string \"text\", got " +
                              DescribeJson(item));
      return std::nullopt;
    }
  }
  return texts;
}

// Replaces {query} and {document} in one pass (text substituted is not scanned again).
std::string FillTemplate(const std::string& tmpl, const std::string& query, const std::string& document) {
  std::string out;
  size_t i = 0;
  while (i < tmpl.size()) {
    if (tmpl.compare(i, 7, "{query}") == 0) {
      out += query;
      i += 7;
    } else if (tmpl.compare(i, 10, "{document}") == 0) {
      out += document;
      i += 10;
    } else {
      out += tmpl[i++];
    }
  }
  return out;
}

// The spec of rank requests for (queries[i], documents[i]) pairs (queries of one entry: every pair's).
Parsed<RerankRequest> MakeRequest(const std::vector<std::string>& queries, std::vector<std::string> documents,
                                  const char* param, const ApiContext& ctx) {
  RerankRequest req;
  req.spec.base.embedding = Pooling::kRank;
  req.spec.base.max_tokens = 0;
  req.spec.max_in_flight = std::max(1, ctx.max_seqs);
  for (size_t i = 0; i < documents.size(); ++i) {
    const std::string& query = queries.size() == 1 ? queries[0] : queries[i];
    auto prompt = RerankPrompt(ctx, query, documents[i], std::string(param) + "[" + std::to_string(i) + "]");
    if (!prompt.ok()) return prompt.error;
    req.spec.prompts.push_back(std::move(*prompt.value));
  }
  req.documents = std::move(documents);
  return req;
}

nlohmann::json Usage(int prompt_tokens, int cached_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"total_tokens", prompt_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

}  // namespace

Parsed<std::vector<int32_t>> RerankPrompt(const ApiContext& ctx, const std::string& query,
                                          const std::string& document, const std::string& param) {
  const Tokenizer& tok = *ctx.tokenizer;
  std::vector<int32_t> ids;
  if (!ctx.rerank_template.empty()) {
    auto encoded = tok.Encode(FillTemplate(ctx.rerank_template, query, document), /*add_bos=*/false,
                              /*parse_special=*/true);
    if (!encoded.ok()) return ApiError{encoded.status(), param, false};
    ids = std::move(*encoded);
  } else {
    auto q = tok.Encode(query, false, /*parse_special=*/false);
    if (!q.ok()) return ApiError{q.status(), "query", false};
    auto d = tok.Encode(document, false, /*parse_special=*/false);
    if (!d.ok()) return ApiError{d.status(), param, false};
    const int32_t eos = tok.eos_id() >= 0 ? tok.eos_id() : ctx.sep_id;
    if (tok.bos_id() >= 0) ids.push_back(tok.bos_id());
    ids.insert(ids.end(), q->begin(), q->end());
    if (eos >= 0) ids.push_back(eos);
    if (ctx.sep_id >= 0 && ctx.sep_id != eos) ids.push_back(ctx.sep_id);  // BERT: [CLS] q [SEP] d [SEP]
    ids.insert(ids.end(), d->begin(), d->end());
    if (eos >= 0) ids.push_back(eos);
  }
  if (ids.empty()) return ApiError::Field(param, param + " makes an empty prompt (no token to score)");
  if (int64_t(ids.size()) > ctx.max_context) {
    return ApiError{
        OutOfRange(param + " makes a prompt of " + std::to_string(ids.size()) +
                   " tokens, beyond the context of " + std::to_string(ctx.max_context) + " tokens"),
        param};
  }
  return ids;
}

Parsed<RerankRequest> ParseRerankRequest(const std::string& body, const ApiContext& ctx) {
  if (auto refused = CannotRank(ctx)) return *refused;
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  FieldReader f(*json.value);
  if (auto unknown = CheckModel(ctx, f.String("model"))) return *unknown;
  const bool tei = f.Raw("documents") == nullptr && f.Raw("texts") != nullptr;
  const std::optional<std::string> query = f.String("query");
  if (!query && !f.failed()) f.Fail("query", "query is required (a string)");
  const int64_t top_n = f.Int("top_n", 1, INT32_MAX).value_or(0);
  const bool return_documents = f.Bool(tei ? "return_text" : "return_documents").value_or(false);
  f.String("user");
  if (f.failed()) return f.error();
  auto documents = tei ? ReadTexts(f, "texts") : ReadDocuments(f);
  if (!documents) return f.error();
  auto req = MakeRequest({*query}, std::move(*documents), tei ? "texts" : "documents", ctx);
  if (!req.ok()) return req;
  req.value->top_n = top_n;
  req.value->return_documents = return_documents;
  req.value->tei = tei;
  return req;
}

Parsed<RerankRequest> ParseScoreRequest(const std::string& body, const ApiContext& ctx) {
  if (auto refused = CannotRank(ctx)) return *refused;
  auto json = ParseJsonObject(body);
  if (!json.ok()) return json.error;
  FieldReader f(*json.value);
  if (auto unknown = CheckModel(ctx, f.String("model"))) return *unknown;
  f.String("user");
  std::optional<std::vector<std::string>> sides[2];
  const char* names[2] = {"text_1", "text_2"};
  for (int s = 0; s < 2; ++s) {
    const nlohmann::json* raw = f.Raw(names[s]);
    if (raw == nullptr && !f.failed()) f.Fail(names[s], std::string(names[s]) + " is required");
    if (raw != nullptr && raw->is_array() && raw->empty() && !f.failed()) {
      f.Fail(names[s], std::string(names[s]) + " must not be an empty array");
    }
    sides[s] = f.StringOrList(names[s], kMaxRerankDocuments);
  }
  if (f.failed()) return f.error();
  if (sides[0]->size() != 1 && sides[0]->size() != sides[1]->size()) {
    return ApiError::Field("text_1", "text_1 must be one text or as many as text_2 (" +
                                         std::to_string(sides[1]->size()) + "), got " +
                                         std::to_string(sides[0]->size()));
  }
  return MakeRequest(*sides[0], std::move(*sides[1]), "text_2", ctx);
}

std::vector<std::optional<double>> FinishedScores(GenerationJob& job) {
  std::vector<std::optional<double>> out;
  for (const ChoiceState& choice : job.choices()) {
    const std::vector<float>& logits = choice.last.embedding;
    out.push_back(logits.empty() ? std::nullopt : std::optional<double>(RankScore(logits)));
  }
  return out;
}

nlohmann::json RerankResponse(const RerankRequest& req, const std::vector<double>& scores, int prompt_tokens,
                              int cached_tokens, const std::string& id, const ApiContext& ctx) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (req.top_n > 0 && size_t(req.top_n) < order.size()) order.resize(size_t(req.top_n));
  nlohmann::json results = nlohmann::json::array();
  for (size_t i : order) {
    nlohmann::json item = {{"index", i}, {req.tei ? "score" : "relevance_score", scores[i]}};
    if (req.return_documents) {
      if (req.tei) {
        item["text"] = req.documents[i];
      } else {
        item["document"] = {{"text", req.documents[i]}};
      }
    }
    results.push_back(std::move(item));
  }
  if (req.tei) return results;
  return {{"id", id},
          {"model", ctx.model_id},
          {"object", "list"},
          {"usage", Usage(prompt_tokens, cached_tokens)},
          {"results", std::move(results)}};
}

nlohmann::json ScoreResponse(const std::vector<double>& scores, int prompt_tokens, int cached_tokens,
                             const std::string& id, int64_t created, const ApiContext& ctx) {
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < scores.size(); ++i) {
    data.push_back({{"index", i}, {"object", "score"}, {"score", scores[i]}});
  }
  nlohmann::json usage = Usage(prompt_tokens, cached_tokens);
  usage["completion_tokens"] = 0;
  return {{"id", id},
          {"object", "list"},
          {"created", created},
          {"model", ctx.model_id},
          {"data", std::move(data)},
          {"usage", std::move(usage)}};
}

}  // namespace lockstep::server
