// Embeddings end to end on a real `lockstep serve`: OpenAI's /v1/embeddings (text, batches, token ids,
// base64, dimensions, llama.cpp's embd_normalize, vLLM's truncate_prompt_tokens) and TEI's /embed; an input's
// vector does not depend on what else is in the batch; bad requests are refused naming the field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

#include "e2e_util.h"

namespace lockstep::server::testing {
namespace {

class EmbeddingsRoutesTest : public SharedServerTest<EmbeddingsRoutesTest> {
 public:
  static std::vector<std::string> Args() { return {"-t", "2"}; }

 protected:
  static nlohmann::json Ok(const HttpResponse& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.Json() : nlohmann::json::object();
  }

  static std::vector<float> Floats(const nlohmann::json& values) {
    std::vector<float> out;
    for (const auto& v : values) out.push_back(v.get<float>());
    return out;
  }

  static double Norm(const std::vector<float>& v) {
    double sum = 0;
    for (float x : v) sum += double(x) * x;
    return std::sqrt(sum);
  }

  static std::vector<float> DecodeBase64Floats(const std::string& text) {
    static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<unsigned char> bytes;
    uint32_t group = 0;
    int bits = 0;
    for (char c : text) {
      if (c == '=') break;
      const size_t value = alphabet.find(c);
      EXPECT_NE(value, std::string::npos) << c;
      group = group << 6 | uint32_t(value);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        bytes.push_back(static_cast<unsigned char>(group >> bits & 0xff));
      }
    }
    EXPECT_EQ(bytes.size() % 4, 0u);
    std::vector<float> out(bytes.size() / 4);
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }

  static std::vector<float> EmbedOne(const nlohmann::json& body) {
    const auto r = Ok(Post(port(), "/v1/embeddings", body));
    if (!r.contains("data") || r["data"].empty()) return {};
    return Floats(r["data"][0]["embedding"]);
  }
};

TEST_F(EmbeddingsRoutesTest, OpenAiShapeAndUnitVectors) {
  const auto r = Ok(Post(port(), "/v1/embeddings", {{"model", "tiny"}, {"input", "Once upon a time"}}));
  EXPECT_EQ(r["object"], "list");
  EXPECT_EQ(r["model"], "tiny");
  ASSERT_EQ(r["data"].size(), 1u) << r;
  EXPECT_EQ(r["data"][0]["object"], "embedding");
  EXPECT_EQ(r["data"][0]["index"], 0);
  const std::vector<float> v = Floats(r["data"][0]["embedding"]);
  ASSERT_GE(v.size(), 8u);
  EXPECT_NEAR(Norm(v), 1.0, 1e-5);
  EXPECT_GT(r["usage"]["prompt_tokens"].get<int>(), 1);
  EXPECT_EQ(r["usage"]["total_tokens"], r["usage"]["prompt_tokens"]);
  // The same text as the token ids it tokenizes to (BOS included, as the route adds it).
  const auto tokens = Ok(Post(port(), "/tokenize", {{"prompt", "Once upon a time"}}));
  EXPECT_EQ(tokens["count"], r["usage"]["prompt_tokens"]);
  EXPECT_EQ(EmbedOne({{"input", tokens["tokens"]}}), v);
}

TEST_F(EmbeddingsRoutesTest, ABatchGivesEachInputItsOwnVector) {
  const std::vector<float> alone = EmbedOne({{"input", "The cat sat"}});
  const auto r =
      Ok(Post(port(), "/v1/embeddings",
              {{"input", {"The cat sat", "A different and somewhat longer sentence here", "The cat sat"}}}));
  ASSERT_EQ(r["data"].size(), 3u) << r;
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(r["data"][i]["index"], i);
  EXPECT_EQ(Floats(r["data"][0]["embedding"]), alone);  // batch invariance through the server
  EXPECT_EQ(Floats(r["data"][2]["embedding"]), alone);
  EXPECT_NE(Floats(r["data"][1]["embedding"]), alone);
  // Token-id inputs in a batch.
  const auto ids = Ok(Post(port(), "/v1/embeddings", {{"input", {{1, 5, 9}, {1, 5, 9, 12}}}}));
  ASSERT_EQ(ids["data"].size(), 2u) << ids;
  EXPECT_EQ(ids["usage"]["prompt_tokens"], 7);
}

TEST_F(EmbeddingsRoutesTest, Base64DimensionsAndNormalization) {
  const std::vector<float> floats = EmbedOne({{"input", "hello"}});
  const auto b64 = Ok(Post(port(), "/v1/embeddings", {{"input", "hello"}, {"encoding_format", "base64"}}));
  ASSERT_TRUE(b64["data"][0]["embedding"].is_string()) << b64;
  EXPECT_EQ(DecodeBase64Floats(b64["data"][0]["embedding"].get<std::string>()), floats);

  const std::vector<float> raw = EmbedOne({{"input", "hello"}, {"embd_normalize", -1}});
  ASSERT_EQ(raw.size(), floats.size());
  const double norm = Norm(raw);
  EXPECT_GT(std::abs(norm - 1.0), 1e-3);  // final-normed hidden states: norm ~ sqrt(n_embd), not 1
  for (size_t i = 0; i < raw.size(); ++i) EXPECT_NEAR(raw[i] / norm, floats[i], 1e-6);
  const std::vector<float> taxicab = EmbedOne({{"input", "hello"}, {"embd_normalize", 1}});
  double sum = 0;
  for (float x : taxicab) sum += std::abs(x);
  EXPECT_NEAR(sum, 1.0, 1e-5);

  const std::vector<float> short_one = EmbedOne({{"input", "hello"}, {"dimensions", 4}});
  ASSERT_EQ(short_one.size(), 4u);
  EXPECT_NEAR(Norm(short_one), 1.0, 1e-6);
  const double head = Norm(std::vector<float>(raw.begin(), raw.begin() + 4));
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(short_one[i], raw[i] / head, 1e-6);
}

TEST_F(EmbeddingsRoutesTest, TeiEmbed) {
  const std::vector<float> openai = EmbedOne({{"input", "hello"}});
  const auto r = Ok(Post(port(), "/embed", {{"inputs", "hello"}}));
  ASSERT_TRUE(r.is_array() && r.size() == 1) << r;
  EXPECT_EQ(Floats(r[0]), openai);
  const auto batch = Ok(Post(port(), "/embed", {{"inputs", {"hello", "world"}}, {"normalize", false}}));
  ASSERT_EQ(batch.size(), 2u) << batch;
  EXPECT_EQ(Floats(batch[0]), EmbedOne({{"input", "hello"}, {"embd_normalize", -1}}));
  // TEI's error shape.
  const HttpResponse missing = Post(port(), "/embed", {{"normalize", true}});
  EXPECT_EQ(missing.status, 422) << missing.body;
  EXPECT_NE(missing.body.find("inputs is required"), std::string::npos) << missing.body;
}

TEST_F(EmbeddingsRoutesTest, LlamaCppEmbedding) {
  const std::vector<float> openai = EmbedOne({{"input", "hello"}});
  for (const char* path : {"/embedding", "/embeddings"}) {
    const auto r = Ok(Post(port(), path, {{"content", {"hello", "world"}}}));
    ASSERT_TRUE(r.is_array() && r.size() == 2) << path << " " << r;
    EXPECT_EQ(r[1]["index"], 1);
    ASSERT_EQ(r[0]["embedding"].size(), 1u) << r;  // one pooled vector per input, as llama.cpp nests it
    EXPECT_EQ(Floats(r[0]["embedding"][0]), openai) << path;
  }
  const auto by_input = Ok(Post(port(), "/embedding", {{"input", "hello"}, {"embd_normalize", -1}}));
  ASSERT_EQ(by_input.size(), 1u) << by_input;
  EXPECT_EQ(Floats(by_input[0]["embedding"][0]), EmbedOne({{"input", "hello"}, {"embd_normalize", -1}}));
  const HttpResponse missing = Post(port(), "/embedding", {{"embd_normalize", 2}});
  EXPECT_EQ(missing.status, 400) << missing.body;
  EXPECT_NE(missing.body.find("must be provided"), std::string::npos) << missing.body;
}

TEST_F(EmbeddingsRoutesTest, LongInputsAreRefusedOrTruncated) {
  nlohmann::json long_ids = nlohmann::json::array();
  for (int i = 0; i < 300; ++i) long_ids.push_back(1 + i % 50);  // the tiny model's context is 256
  const HttpResponse refused = Post(port(), "/v1/embeddings", {{"input", {{1, 2}, long_ids}}});
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("input[1] is 300 tokens, beyond the context of 256"), std::string::npos)
      << refused.body;
  // vLLM's truncate_prompt_tokens keeps the last k tokens.
  nlohmann::json tail = nlohmann::json::array();
  for (size_t i = 300 - 100; i < 300; ++i) tail.push_back(long_ids[i]);
  EXPECT_EQ(EmbedOne({{"input", long_ids}, {"truncate_prompt_tokens", 100}}), EmbedOne({{"input", tail}}));
  // TEI's truncate keeps the first tokens that fit (the default direction, right).
  const auto truncated = Ok(Post(port(), "/embed", {{"inputs", {long_ids}}, {"truncate", true}}));
  ASSERT_EQ(truncated.size(), 1u) << truncated;
  nlohmann::json head = nlohmann::json::array();
  for (size_t i = 0; i < 256; ++i) head.push_back(long_ids[i]);
  EXPECT_EQ(Floats(truncated[0]), Floats(Ok(Post(port(), "/embed", {{"inputs", {head}}}))[0]));
}

TEST_F(EmbeddingsRoutesTest, BadRequestsNameTheField) {
  const struct {
    nlohmann::json body;
    const char* param;
    const char* says;
  } cases[] = {
      {{{"model", "tiny"}}, "input", "input is required"},
      {{{"input", nlohmann::json::array()}}, "input", "must be a string"},
      {{{"input", {{1, -1}}}}, "input", "input[0] must hold token ids"},
      {{{"input", {"a", 3}}}, "input", "input[1] must be a string or an array of token ids"},
      {{{"input", "hi"}, {"encoding_format", "xml"}}, "encoding_format", "encoding_format"},
      {{{"input", "hi"}, {"dimensions", 0}}, "dimensions", "dimensions"},
      {{{"input", "hi"}, {"embd_normalize", "2"}}, "embd_normalize", "a string"},
      {{{"input", "hi"}, {"model", "other"}}, "model", "does not exist"},
  };
  for (const auto& c : cases) {
    const HttpResponse r = Post(port(), "/v1/embeddings", c.body);
    EXPECT_GE(r.status, 400) << c.body.dump() << " → " << r.body;
    const nlohmann::json error = r.Json()["error"];
    EXPECT_EQ(error["param"], c.param) << c.body.dump() << " → " << r.body;
    EXPECT_NE(error["message"].get<std::string>().find(c.says), std::string::npos)
        << c.body.dump() << " → " << r.body;
  }
  EXPECT_NE(server().log().find("embeddings (/v1/embeddings, /embed): last pooling"), std::string::npos)
      << server().log();
}

// --pooling mean: the server says so when it starts, and pools otherwise than last (the default).
class MeanPoolingRoutesTest : public SharedServerTest<MeanPoolingRoutesTest> {
 public:
  static std::vector<std::string> Args() { return {"-t", "1", "--pooling", "mean"}; }
};

TEST_F(MeanPoolingRoutesTest, PoolsEveryPosition) {
  EXPECT_NE(server().log().find("embeddings (/v1/embeddings, /embed): mean pooling (--pooling)"),
            std::string::npos)
      << server().log();
  // Causal attention: position 0's state is the one-token input's vector, position 1's the last-pooled
  // vector of the two tokens (from a server with the default pooling); the mean is their average.
  const auto raw = [](int server_port, const nlohmann::json& ids) {
    const HttpResponse r = Post(server_port, "/v1/embeddings", {{"input", {ids}}, {"embd_normalize", -1}});
    EXPECT_EQ(r.status, 200) << r.body;
    std::vector<double> out;
    const nlohmann::json body = r.Json();
    if (r.status == 200) {
      for (const auto& v : body["data"][0]["embedding"]) out.push_back(v.get<double>());
    }
    return out;
  };
  ServerProcess last_server(TinyModel(), {"-t", "1"});
  ASSERT_TRUE(last_server.ok()) << last_server.log();
  const std::vector<double> first = raw(port(), {5});
  const std::vector<double> second = raw(last_server.port(), {5, 9});
  const std::vector<double> mean = raw(port(), {5, 9});
  ASSERT_EQ(first.size(), mean.size());
  ASSERT_EQ(second.size(), mean.size());
  for (size_t i = 0; i < mean.size(); ++i) {
    EXPECT_NEAR(mean[i], (first[i] + second[i]) / 2, 1e-6 * (1 + std::abs(mean[i]))) << i;
  }
  EXPECT_NE(mean, second);
}

// A batch of more inputs than the queue holds, on a server that runs 2 sequences and queues 2: the inputs go
// into the engine 2 at a time as earlier ones finish, so the batch is served whole (not refused as a full
// queue), each input's vector the one it gets alone; a client that leaves mid-batch leaves nothing behind.
class SmallQueueEmbeddingsTest : public SharedServerTest<SmallQueueEmbeddingsTest> {
 public:
  static std::vector<std::string> Args() { return {"-t", "1", "--max-seqs", "2", "--max-queue", "2"}; }
};

TEST_F(SmallQueueEmbeddingsTest, ABatchLargerThanTheQueueIsServedWhole) {
  nlohmann::json inputs = nlohmann::json::array();
  for (int i = 0; i < 300; ++i) inputs.push_back("input number " + std::to_string(i));
  const HttpResponse r = Post(port(), "/v1/embeddings", {{"input", inputs}});
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  const nlohmann::json body = r.Json();
  ASSERT_EQ(body["data"].size(), 300u);
  for (int i : {0, 1, 150, 299}) {
    EXPECT_EQ(body["data"][i]["index"], i);
    const HttpResponse one = Post(port(), "/v1/embeddings", {{"input", inputs[size_t(i)]}});
    ASSERT_EQ(one.status, 200) << one.body;
    EXPECT_EQ(one.Json()["data"][0]["embedding"], body["data"][i]["embedding"]) << i;
  }
  // TEI's route the same way.
  const HttpResponse tei = Post(port(), "/embed", {{"inputs", inputs}});
  ASSERT_EQ(tei.status, 200) << tei.body.substr(0, 300);
  EXPECT_EQ(tei.Json().size(), 300u);
}

TEST_F(SmallQueueEmbeddingsTest, AClientLeavingMidBatchLeavesNothingBehind) {
  nlohmann::json inputs = nlohmann::json::array();
  std::string words;  // ~190 tokens an input: 2000 of them keep the tiny model busy for seconds
  for (int w = 0; w < 40; ++w) words += " word" + std::to_string(w);
  for (int i = 0; i < 2000; ++i) inputs.push_back(std::to_string(i) + words);
  const HttpResponse fits = Post(port(), "/tokenize", {{"prompt", inputs.back()}});
  ASSERT_LE(fits.Json()["count"].get<int>(), 256) << fits.body;  // the tiny model's context
  const double before = Metric(port(), "lockstep_prompt_tokens_total");
  const int fd = SendAndLeaveOpen(port(), "/v1/embeddings", {{"input", inputs}});
  ASSERT_GE(fd, 0);
  // Each input is one step (prefilled, pooled, done), so running requests read 0 between steps: wait for
  // the batch's first ten inputs (of 2000) instead.
  ASSERT_TRUE(WaitForMetric(port(), "lockstep_prompt_tokens_total", before + 10 * 190));
  ::close(fd);
  EXPECT_TRUE(WaitForIdleEngine(port()));
  // The inputs not yet submitted were dropped (those in flight may have finished before their cancel):
  // far fewer than the batch's ~380 000 tokens were computed.
  EXPECT_LT(Metric(port(), "lockstep_prompt_tokens_total"), before + 2000 * 100);
  const HttpResponse after = Post(port(), "/v1/embeddings", {{"input", "still serving"}});
  EXPECT_EQ(after.status, 200) << after.body;
}

}  // namespace
}  // namespace lockstep::server::testing
