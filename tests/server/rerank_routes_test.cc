// Reranking end to end on a real `lockstep serve`: llama.cpp's /rerank and /v1/rerank (Jina/Cohere shape,
// TEI's `texts` form), vLLM's /score; the results' order, top_n, return_documents and usage (the shared
// query's prefix is served from the cache); a document's score alone equals its score among others, bit for
// bit; every bad request is a 400 naming the field; a model without a classifier head refuses (unless
// --reranking names yes/no tokens).
#include <gtest/gtest.h>

#include <set>

#include "e2e_util.h"

namespace lockstep::server::testing {
namespace {

const std::vector<std::string> kDocs = {
    "The capital of France is Paris.",
    "Cats sleep for most of the day.",
    "Paris is known for the Eiffel Tower and the Louvre.",
    "A recipe for bread: flour, water, salt and yeast.",
};

class RerankRoutesTest : public SharedServerTest<RerankRoutesTest> {
 public:
  static std::string Model() { return RerankModel(); }
  static std::vector<std::string> Args() { return {"-t", "2"}; }

 protected:
  static nlohmann::json Ok(const HttpResponse& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.Json() : nlohmann::json::object();
  }
  static nlohmann::json Rerank(const nlohmann::json& body, const std::string& path = "/v1/rerank") {
    return Ok(Post(port(), path, body));
  }
  // The relevance score of each document, by index.
  static std::map<int, double> Scores(const nlohmann::json& response) {
    std::map<int, double> out;
    const nlohmann::json results = response.value("results", nlohmann::json::array());
    for (const nlohmann::json& r : results) out[r["index"].get<int>()] = r["relevance_score"].get<double>();
    return out;
  }
  // A 400 naming `param`.
  static void ExpectRefused(const std::string& path, const std::string& body, const std::string& param) {
    const HttpResponse r = Request(port(), "POST", path, body);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    const nlohmann::json j = r.Json();
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error") << r.body;
    EXPECT_EQ(j["error"]["param"], param) << body << " -> " << r.body;
  }
};

TEST_F(RerankRoutesTest, JinaShapeSortedWithUsage) {
  const nlohmann::json r =
      Rerank({{"model", "tiny-qwen3-reranker"}, {"query", "What is Paris?"}, {"documents", kDocs}});
  EXPECT_EQ(r["object"], "list");
  EXPECT_EQ(r["model"], "tiny-qwen3-reranker");
  EXPECT_EQ(r["id"].get<std::string>().rfind("rerank-", 0), 0u) << r;
  const nlohmann::json results = r["results"];
  ASSERT_EQ(results.size(), kDocs.size()) << r;
  std::set<int> indices;
  double previous = 2;
  for (const nlohmann::json& item : results) {
    indices.insert(item["index"].get<int>());
    const double score = item["relevance_score"].get<double>();
    EXPECT_GT(score, 0.0);
    EXPECT_LT(score, 1.0);
    EXPECT_LE(score, previous) << r;  // most relevant first
    previous = score;
    EXPECT_FALSE(item.contains("document")) << item;
  }
  EXPECT_EQ(indices.size(), kDocs.size());
  // Usage: the pairs' prompts, each counted once; each document alone adds up to the same.
  int sum = 0;
  for (const std::string& doc : kDocs) {
    sum += Rerank({{"query", "What is Paris?"}, {"documents", {doc}}})["usage"]["prompt_tokens"].get<int>();
  }
  EXPECT_EQ(r["usage"]["prompt_tokens"], sum);
  EXPECT_EQ(r["usage"]["total_tokens"], sum);
  // The aliases answer the same scores.
  for (const char* path : {"/rerank", "/reranking", "/v1/reranking"}) {
    EXPECT_EQ(Scores(Rerank({{"query", "What is Paris?"}, {"documents", kDocs}}, path)), Scores(r)) << path;
  }
}

TEST_F(RerankRoutesTest, ScoresDoNotDependOnTheOtherDocuments) {
  const nlohmann::json all = Rerank({{"query", "Where is the Louvre?"}, {"documents", kDocs}});
  const std::map<int, double> together = Scores(all);
  ASSERT_EQ(together.size(), kDocs.size());
  std::set<double> distinct;
  for (size_t i = 0; i < kDocs.size(); ++i) {
    const std::map<int, double> alone =
        Scores(Rerank({{"query", "Where is the Louvre?"}, {"documents", {kDocs[i]}}}));
    ASSERT_EQ(alone.size(), 1u);
    EXPECT_EQ(alone.at(0), together.at(int(i))) << i;  // bit for bit (== on the doubles)
    distinct.insert(alone.at(0));
  }
  EXPECT_EQ(distinct.size(), kDocs.size());  // the documents do get different scores
  // A document twice in one request: the same score twice.
  const std::map<int, double> twice =
      Scores(Rerank({{"query", "Where is the Louvre?"}, {"documents", {kDocs[2], kDocs[2]}}}));
  EXPECT_EQ(twice.at(0), twice.at(1));
  EXPECT_EQ(twice.at(0), together.at(2));
}

TEST_F(RerankRoutesTest, TheSharedQueryIsServedFromThePrefixCache) {
  const std::string query = "Which of these mention a city in Europe, and which one is about cooking?";
  Rerank({{"query", query}, {"documents", {"warm-up"}}});
  const nlohmann::json r = Rerank({{"query", query}, {"documents", kDocs}});
  const int cached = r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
  // The template's head and the query (well over two 16-token blocks) are computed once, not per document.
  EXPECT_GE(cached, 32 * int(kDocs.size())) << r["usage"];
  EXPECT_LT(cached, r["usage"]["prompt_tokens"].get<int>());
}

TEST_F(RerankRoutesTest, TopNAndReturnDocuments) {
  const nlohmann::json full = Rerank({{"query", "bread"}, {"documents", kDocs}});
  const nlohmann::json top =
      Rerank({{"query", "bread"}, {"documents", kDocs}, {"top_n", 2}, {"return_documents", true}});
  ASSERT_EQ(top["results"].size(), 2u) << top;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(top["results"][i]["index"], full["results"][i]["index"]);
    EXPECT_EQ(top["results"][i]["relevance_score"], full["results"][i]["relevance_score"]);
    const int index = top["results"][i]["index"].get<int>();
    EXPECT_EQ(top["results"][i]["document"]["text"], kDocs[size_t(index)]);
  }
  EXPECT_EQ(top["usage"]["prompt_tokens"], full["usage"]["prompt_tokens"]);  // every document was scored
  EXPECT_EQ(Rerank({{"query", "bread"}, {"documents", kDocs}, {"top_n", 99}})["results"].size(),
            kDocs.size());
}

TEST_F(RerankRoutesTest, DocumentObjectsAsCohereAndJinaSendThem) {
  // {"text": ...} objects (other keys ignored), mixed with strings: the same scores as the strings.
  nlohmann::json objects = nlohmann::json::array();
  for (size_t i = 0; i < kDocs.size(); ++i) {
    if (i % 2 == 0) {
      objects.push_back({{"text", kDocs[i]}, {"title", "t"}});
    } else {
      objects.push_back(kDocs[i]);
    }
  }
  const nlohmann::json strings = Rerank({{"query", "bread"}, {"documents", kDocs}});
  const nlohmann::json mixed =
      Rerank({{"query", "bread"}, {"documents", objects}, {"return_documents", true}});
  ASSERT_EQ(mixed["results"].size(), strings["results"].size()) << mixed;
  for (size_t i = 0; i < kDocs.size(); ++i) {
    EXPECT_EQ(mixed["results"][i]["index"], strings["results"][i]["index"]);
    EXPECT_EQ(mixed["results"][i]["relevance_score"], strings["results"][i]["relevance_score"]);
    EXPECT_EQ(mixed["results"][i]["document"]["text"], kDocs[mixed["results"][i]["index"].get<size_t>()]);
  }
}

TEST_F(RerankRoutesTest, TeiForm) {
  const nlohmann::json jina = Rerank({{"query", "cats"}, {"documents", kDocs}});
  const HttpResponse r =
      Post(port(), "/rerank", {{"query", "cats"}, {"texts", kDocs}, {"return_text", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json tei = r.Json();
  ASSERT_TRUE(tei.is_array()) << r.body;
  ASSERT_EQ(tei.size(), kDocs.size());
  for (size_t i = 0; i < tei.size(); ++i) {
    EXPECT_EQ(tei[i]["index"], jina["results"][i]["index"]);
    EXPECT_EQ(tei[i]["score"], jina["results"][i]["relevance_score"]);
    EXPECT_EQ(tei[i]["text"], kDocs[tei[i]["index"].get<size_t>()]);
  }
}

TEST_F(RerankRoutesTest, VllmScore) {
  const nlohmann::json jina = Rerank({{"query", "Paris"}, {"documents", kDocs}});
  const std::map<int, double> want = Scores(jina);
  const nlohmann::json r = Ok(
      Post(port(), "/v1/score", {{"model", "tiny-qwen3-reranker"}, {"text_1", "Paris"}, {"text_2", kDocs}}));
  EXPECT_EQ(r["object"], "list");
  EXPECT_EQ(r["model"], "tiny-qwen3-reranker");
  EXPECT_EQ(r["id"].get<std::string>().rfind("score-", 0), 0u) << r;
  EXPECT_TRUE(r["created"].is_number_integer());
  ASSERT_EQ(r["data"].size(), kDocs.size());
  for (size_t i = 0; i < kDocs.size(); ++i) {  // in input order
    EXPECT_EQ(r["data"][i]["index"], i);
    EXPECT_EQ(r["data"][i]["object"], "score");
    EXPECT_EQ(r["data"][i]["score"].get<double>(), want.at(int(i))) << i;
  }
  EXPECT_EQ(r["usage"]["prompt_tokens"], jina["usage"]["prompt_tokens"]);
  EXPECT_EQ(r["usage"]["completion_tokens"], 0);
  // One pair of strings; lists paired item by item.
  const nlohmann::json one = Ok(Post(port(), "/score", {{"text_1", "Paris"}, {"text_2", kDocs[2]}}));
  ASSERT_EQ(one["data"].size(), 1u);
  EXPECT_EQ(one["data"][0]["score"].get<double>(), want.at(2));
  const nlohmann::json pairs =
      Ok(Post(port(), "/v1/score", {{"text_1", {"Paris", "cats"}}, {"text_2", {kDocs[0], kDocs[1]}}}));
  ASSERT_EQ(pairs["data"].size(), 2u);
  EXPECT_EQ(pairs["data"][0]["score"].get<double>(), want.at(0));
  EXPECT_EQ(pairs["data"][1]["score"].get<double>(),
            Scores(Rerank({{"query", "cats"}, {"documents", {kDocs[1]}}})).at(0));
}

TEST_F(RerankRoutesTest, BadRequestsNameTheField) {
  const std::string docs = nlohmann::json(kDocs).dump();
  for (const char* path : {"/v1/rerank", "/rerank"}) {
    ExpectRefused(path, R"({"documents": )" + docs + "}", "query");
    ExpectRefused(path, R"({"query": 5, "documents": )" + docs + "}", "query");
    ExpectRefused(path, R"({"query": "q"})", "documents");
    ExpectRefused(path, R"({"query": "q", "documents": "one string"})", "documents");
    ExpectRefused(path, R"({"query": "q", "documents": []})", "documents");
    ExpectRefused(path, R"({"query": "q", "documents": {"a": "b"}})", "documents");
    ExpectRefused(path, R"({"query": "q", "documents": ["a", 7]})", "documents");
    ExpectRefused(path, R"({"query": "q", "documents": ["a", null]})", "documents");
    ExpectRefused(path, R"({"query": "q", "documents": ["a", {"text": 5}]})", "documents");
    ExpectRefused(path, R"({"query": "q", "documents": [{"title": "a"}]})", "documents");
    for (const char* top_n : {"0", "-1", "1.5", "\"2\"", "true"}) {
      ExpectRefused(path, R"({"query": "q", "documents": ["a"], "top_n": )" + std::string(top_n) + "}",
                    "top_n");
    }
    ExpectRefused(path, R"({"query": "q", "documents": ["a"], "return_documents": "yes"})",
                  "return_documents");
    ExpectRefused(path, R"({"query": "q", "texts": []})", "texts");
    ExpectRefused(path,
                  nlohmann::json({{"query", "q"}, {"documents", std::vector<std::string>(1025, "d")}}).dump(),
                  "documents");
    ExpectRefused(path,
                  nlohmann::json({{"query", "q"}, {"documents", {"short", std::string(5000, 'x')}}}).dump(),
                  "documents[1]");  // beyond the context
  }
  ExpectRefused("/v1/score", R"({"text_2": "a"})", "text_1");
  ExpectRefused("/v1/score", R"({"text_1": "a"})", "text_2");
  ExpectRefused("/v1/score", R"({"text_1": "a", "text_2": []})", "text_2");
  ExpectRefused("/v1/score", R"({"text_1": 3, "text_2": "a"})", "text_1");
  ExpectRefused("/v1/score", R"({"text_1": ["a", "b"], "text_2": ["a", "b", "c"]})", "text_1");
  ExpectRefused("/v1/score", R"({"text_1": "a", "text_2": ["a", {"text": "b"}]})", "text_2");
  // Malformed JSON and an unknown model.
  EXPECT_EQ(Request(port(), "POST", "/v1/rerank", R"({"query": )").status, 400);
  EXPECT_EQ(Post(port(), "/v1/rerank", {{"model", "other"}, {"query", "q"}, {"documents", {"a"}}}).status,
            404);
  // The server is still fine.
  EXPECT_EQ(Rerank({{"query", "q"}, {"documents", {"a"}}})["results"].size(), 1u);
}

TEST_F(RerankRoutesTest, EmbeddingsOfARankFilePoolTheLastToken) {
  const nlohmann::json r = Ok(Post(port(), "/v1/embeddings", {{"input", "hello"}}));
  ASSERT_EQ(r["data"].size(), 1u);
  EXPECT_EQ(r["data"][0]["embedding"].size(), 128u);  // n_embd values, not the classifier's 2
}

// A plain model cannot rank, unless --reranking names the tokens that score it.
class PlainModelRerankTest : public SharedServerTest<PlainModelRerankTest> {};

TEST_F(PlainModelRerankTest, RefusedNamingTheModel) {
  for (const char* path : {"/v1/rerank", "/rerank", "/v1/score"}) {
    const HttpResponse r =
        Post(port(), path, {{"query", "q"}, {"documents", {"a"}}, {"text_1", "q"}, {"text_2", "a"}});
    EXPECT_EQ(r.status, 400) << path << " " << r.body;
    EXPECT_EQ(r.Json()["error"]["param"], "model") << r.body;
    EXPECT_NE(r.body.find("cannot rank"), std::string::npos) << r.body;
  }
}

class YesNoRerankTest : public SharedServerTest<YesNoRerankTest> {
 public:
  static std::vector<std::string> Args() { return {"-t", "1", "--reranking", "--rerank-tokens", "y,n"}; }
};

TEST_F(YesNoRerankTest, ScoresWithTheTokenLogits) {
  const HttpResponse r = Post(port(), "/v1/rerank", {{"query", "is it"}, {"documents", kDocs}});
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json results = r.Json()["results"];
  ASSERT_EQ(results.size(), kDocs.size());
  for (const nlohmann::json& item : results) {
    EXPECT_GT(item["relevance_score"].get<double>(), 0.0);
    EXPECT_LT(item["relevance_score"].get<double>(), 1.0);
  }
}

TEST(RerankStartup, TokensOutsideTheVocabularyAreRefused) {
  // The built-in vocabulary has no "yes" token: --reranking's default cannot be used, and says so.
  ServerProcess server(TinyModel(), {"-t", "1", "--reranking"});
  EXPECT_FALSE(server.ok());
  EXPECT_NE(server.log().find("--rerank-tokens"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace lockstep::server::testing
