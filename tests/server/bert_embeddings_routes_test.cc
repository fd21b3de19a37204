// A bert embedding model (tiny-bert, WordPiece) served end to end: /v1/embeddings gives unit CLS vectors
// that do not depend on the batch; tokenization adds [CLS] and [SEP]; text generation and inputs longer
// than one forward pass are refused with a 400 that says why; a BERT cross-encoder ranks through /v1/rerank.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "e2e_util.h"

namespace lockstep::server::testing {
namespace {

class BertEmbeddingsRoutesTest : public SharedServerTest<BertEmbeddingsRoutesTest> {
 public:
  static std::string Model() { return BertModel(); }
  // --embeddings as llama-server's command lines for embedding models have it (accepted, changes nothing).
  static std::vector<std::string> Args() { return {"-t", "2", "--max-batch-tokens", "64", "--embeddings"}; }
};

std::vector<float> BertFloats(const nlohmann::json& values) {
  std::vector<float> out;
  for (const auto& v : values) out.push_back(v.get<float>());
  return out;
}

TEST_F(BertEmbeddingsRoutesTest, UnitClsVectorsIndependentOfTheBatch) {
  const auto one = Post(port(), "/v1/embeddings", {{"input", "Hello, world!"}});
  ASSERT_EQ(one.status, 200) << one.body;
  const std::vector<float> alone = BertFloats(one.Json()["data"][0]["embedding"]);
  ASSERT_EQ(alone.size(), 128u);
  double norm = 0;
  for (float v : alone) norm += double(v) * v;
  EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-5);
  EXPECT_EQ(one.Json()["usage"]["prompt_tokens"], 6);  // [CLS] hello , world ! [SEP]
  const auto batch = Post(
      port(), "/v1/embeddings",
      {{"input",
        {"A longer first input, so the steps are shared differently.", "Hello, world!", "HELLO,   world!"}}});
  ASSERT_EQ(batch.status, 200) << batch.body;
  const auto data = batch.Json()["data"];
  ASSERT_EQ(data.size(), 3u);
  EXPECT_EQ(BertFloats(data[1]["embedding"]), alone);
  EXPECT_EQ(BertFloats(data[2]["embedding"]), alone);  // the same words after WordPiece normalisation
  EXPECT_NE(BertFloats(data[0]["embedding"]), alone);
}

TEST_F(BertEmbeddingsRoutesTest, TokenizeAddsClsAndSep) {
  const auto r = Post(port(), "/tokenize", {{"content", "Hello, world!"}, {"add_special", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["tokens"], nlohmann::json({101, 7592, 1010, 2088, 999, 102}));
}

TEST_F(BertEmbeddingsRoutesTest, RefusesGenerationAndTooLongInputs) {
  const auto gen = Post(port(), "/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 4}});
  EXPECT_EQ(gen.status, 400) << gen.body;
  EXPECT_NE(gen.body.find("embeddings only"), std::string::npos) << gen.body;
  std::string text;
  for (int i = 0; i < 70; ++i) text += "word ";
  const auto too_long = Post(port(), "/v1/embeddings", {{"input", text}});
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  EXPECT_NE(too_long.body.find("one forward pass"), std::string::npos) << too_long.body;
}

class BertRerankRoutesTest : public SharedServerTest<BertRerankRoutesTest> {
 public:
  static std::string Model() { return BertRerankModel(); }
};

// A BERT cross-encoder ranks [CLS] query [SEP] document [SEP] (5 tokens for one-word texts).
TEST_F(BertRerankRoutesTest, RanksClsQuerySepDocumentSep) {
  const auto r = Post(port(), "/v1/rerank", {{"query", "hello"}, {"documents", {"world", "test", "paris"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json j = r.Json();
  ASSERT_EQ(j["results"].size(), 3u) << j;
  EXPECT_EQ(j["usage"]["prompt_tokens"], 15) << j;
  std::set<double> scores;
  for (const auto& item : j["results"]) {
    const double score = item["relevance_score"].get<double>();
    EXPECT_GT(score, 0.0);
    EXPECT_LT(score, 1.0);
    scores.insert(score);
  }
  EXPECT_EQ(scores.size(), 3u) << j;  // the documents are told apart
}

}  // namespace
}  // namespace lockstep::server::testing
