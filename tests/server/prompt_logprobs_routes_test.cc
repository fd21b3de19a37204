// Prompt logprobs end to end on a real `lockstep serve`: OpenAI completions' echo + logprobs (whole and
// streamed, max_tokens 0, token-id prompts: what lm-evaluation-harness's local-completions sends), vLLM's
// prompt_logprobs on completions and chat, and TGI's decoder_input_details. A prompt token's logprob is the
// one the model gave it when it generated it.
#include <gtest/gtest.h>

#include <cmath>

#include "e2e_util.h"

namespace lockstep::server::testing {
namespace {

class PromptLogprobsRoutesTest : public SharedServerTest<PromptLogprobsRoutesTest> {};

nlohmann::json Ok(const HttpResponse& r) {
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.Json() : nlohmann::json::object();
}

TEST_F(PromptLogprobsRoutesTest, EchoScoresWhatWasGenerated) {
  // Generate greedily through TGI (its details give the prompt's and the new tokens' ids and logprobs); then
  // score prompt + new tokens through OpenAI's echo with max_tokens 0.
  const auto generated =
      Ok(Post(port(), "/generate",
              {{"inputs", "Once upon"},
               {"parameters", {{"details", true}, {"decoder_input_details", true}, {"max_new_tokens", 6}}}}));
  const auto& prefill = generated["details"]["prefill"];
  const auto& tokens = generated["details"]["tokens"];
  ASSERT_GE(prefill.size(), 2u) << generated;
  ASSERT_GE(tokens.size(), 1u) << generated;
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& t : prefill) ids.push_back(t["id"]);
  for (const auto& t : tokens) ids.push_back(t["id"]);

  const auto scored = Ok(
      Post(port(), "/v1/completions", {{"prompt", ids}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 2}}));
  const auto& choice = scored["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(scored["usage"]["completion_tokens"], 0);
  EXPECT_EQ(scored["usage"]["prompt_tokens"], ids.size());
  const auto& lp = choice["logprobs"];
  ASSERT_EQ(lp["token_logprobs"].size(), ids.size()) << scored;
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  for (size_t i = 1; i < prefill.size(); ++i) {
    EXPECT_EQ(lp["token_logprobs"][i], prefill[i]["logprob"]) << "prompt token " << i;
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_EQ(lp["token_logprobs"][prefill.size() + i], tokens[i]["logprob"]) << "generated token " << i;
    ASSERT_EQ(lp["top_logprobs"][prefill.size() + i].size(), 2u) << scored;
  }
  // Offsets index the echoed text, never going back.
  const auto& offsets = lp["text_offset"];
  for (size_t i = 1; i < offsets.size(); ++i) EXPECT_LE(offsets[i - 1], offsets[i]) << scored;
  EXPECT_LE(offsets.back().get<size_t>(), choice["text"].get<std::string>().size()) << scored;
}

TEST_F(PromptLogprobsRoutesTest, LmEvalHarnessRequestShape) {
  // What lm-evaluation-harness's local-completions sends for loglikelihood: token-id prompts in a batch,
  // max_tokens 1, logprobs 1, echo; it reads token_logprobs[ctxlen:-1] and top_logprobs to tell greedy.
  const auto r = Ok(Post(port(), "/v1/completions",
                         {{"model", "tiny"},
                          {"prompt", {{1, 10, 11, 12}, {1, 10, 11, 13, 14}}},
                          {"temperature", 0},
                          {"max_tokens", 1},
                          {"logprobs", 1},
                          {"seed", 1234},
                          {"echo", true}}));
  ASSERT_EQ(r["choices"].size(), 2u);
  for (size_t c = 0; c < 2; ++c) {
    const auto& lp = r["choices"][c]["logprobs"];
    const size_t prompt = c == 0 ? 4 : 5;
    ASSERT_EQ(lp["token_logprobs"].size(), prompt + 1) << r;
    for (size_t i = 1; i < prompt + 1; ++i) {
      ASSERT_TRUE(lp["token_logprobs"][i].is_number()) << r;
      ASSERT_EQ(lp["top_logprobs"][i].size(), 1u) << r;
      EXPECT_LE(lp["token_logprobs"][i].get<double>(), lp["top_logprobs"][i].begin()->get<double>() + 1e-6);
    }
    // The generated (greedy) token is the most likely one.
    EXPECT_EQ(lp["token_logprobs"][prompt], lp["top_logprobs"][prompt].begin().value()) << r;
  }
  // The two prompts share "1 10 11": the same logprobs there.
  EXPECT_EQ(r["choices"][0]["logprobs"]["token_logprobs"][2],
            r["choices"][1]["logprobs"]["token_logprobs"][2]);
}

TEST_F(PromptLogprobsRoutesTest, StreamedEchoCarriesThePromptInItsFirstChunk) {
  const nlohmann::json body = {{"prompt", "Hello there"}, {"max_tokens", 3},
                               {"temperature", 0},        {"echo", true},
                               {"logprobs", 1},           {"stream", true}};
  nlohmann::json whole_body = body;
  whole_body.erase("stream");
  const auto whole = Ok(Post(port(), "/v1/completions", whole_body));
  nlohmann::json tokens = nlohmann::json::array(), logprobs = nlohmann::json::array(),
                 offsets = nlohmann::json::array();
  std::string text;
  for (const std::string& event : Stream(port(), "/v1/completions", body)) {
    if (event == "[DONE]") continue;
    const auto chunk = nlohmann::json::parse(event);
    const auto& c = chunk["choices"][0];
    text += c["text"].get<std::string>();
    if (c["logprobs"].is_null()) continue;
    for (const auto& t : c["logprobs"]["tokens"]) tokens.push_back(t);
    for (const auto& t : c["logprobs"]["token_logprobs"]) logprobs.push_back(t);
    for (const auto& t : c["logprobs"]["text_offset"]) offsets.push_back(t);
  }
  const auto& want = whole["choices"][0]["logprobs"];
  EXPECT_EQ(text, whole["choices"][0]["text"]);
  EXPECT_EQ(tokens, want["tokens"]);
  EXPECT_EQ(logprobs, want["token_logprobs"]);
  EXPECT_EQ(offsets, want["text_offset"]);
}

TEST_F(PromptLogprobsRoutesTest, VllmPromptLogprobsOnCompletionsAndChat) {
  const auto r = Ok(
      Post(port(), "/v1/completions", {{"prompt", {1, 40, 50}}, {"max_tokens", 1}, {"prompt_logprobs", 2}}));
  const auto& pl = r["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(pl.size(), 3u) << r;
  EXPECT_TRUE(pl[0].is_null());
  for (size_t i = 1; i < 3; ++i) {
    const std::string own = std::to_string(i == 1 ? 40 : 50);
    ASSERT_TRUE(pl[i].contains(own)) << r;
    EXPECT_GE(pl[i][own]["rank"].get<int>(), 1);
    EXPECT_LE(pl[i].size(), 3u);  // the token and its 2 alternatives (one of which may be itself)
    int ranked_first = 0;
    for (const auto& [id, entry] : pl[i].items()) {
      EXPECT_LE(entry["logprob"].get<double>(), 0.0);
      EXPECT_TRUE(entry["decoded_token"].is_string());
      ranked_first += entry["rank"] == 1;
    }
    EXPECT_EQ(ranked_first, 1) << r;
  }
  // With echo's logprobs asking for more alternatives, prompt_logprobs still lists its own number.
  const auto both = Ok(Post(
      port(), "/v1/completions",
      {{"prompt", {1, 40, 50}}, {"max_tokens", 1}, {"prompt_logprobs", 0}, {"echo", true}, {"logprobs", 3}}));
  for (size_t i = 1; i < 3; ++i) EXPECT_EQ(both["choices"][0]["prompt_logprobs"][i].size(), 1u) << both;
  const auto chat = Ok(Post(
      port(), "/v1/chat/completions",
      {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 1}, {"prompt_logprobs", 0}}));
  ASSERT_TRUE(chat["prompt_logprobs"].is_array()) << chat;
  EXPECT_EQ(chat["prompt_logprobs"].size(), chat["usage"]["prompt_tokens"].get<size_t>());
  EXPECT_TRUE(chat["prompt_logprobs"][0].is_null());

  const auto streamed =
      Post(port(), "/v1/completions", {{"prompt", "Hi"}, {"prompt_logprobs", 1}, {"stream", true}});
  EXPECT_EQ(streamed.status, 400) << streamed.body;
  EXPECT_NE(streamed.body.find("prompt_logprobs"), std::string::npos);
  const auto no_echo = Post(port(), "/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 0}});
  EXPECT_EQ(no_echo.status, 400) << no_echo.body;
  EXPECT_NE(no_echo.body.find("max_tokens"), std::string::npos);
  const auto too_many = Post(port(), "/v1/completions", {{"prompt", "Hi"}, {"prompt_logprobs", 21}});
  EXPECT_EQ(too_many.status, 400) << too_many.body;
}

TEST_F(PromptLogprobsRoutesTest, TgiDecoderInputDetails) {
  const auto r =
      Ok(Post(port(), "/generate",
              {{"inputs", "Hello"},
               {"parameters", {{"details", true}, {"decoder_input_details", true}, {"max_new_tokens", 2}}}}));
  const auto& prefill = r["details"]["prefill"];
  const auto tokenized = Ok(Post(port(), "/tokenize", {{"content", "Hello"}}));
  ASSERT_EQ(prefill.size(), tokenized["tokens"].size()) << r;
  EXPECT_TRUE(prefill[0]["logprob"].is_null());
  for (size_t i = 0; i < prefill.size(); ++i) {
    EXPECT_EQ(prefill[i]["id"], tokenized["tokens"][i]);
    if (i > 0) {
      EXPECT_LE(prefill[i]["logprob"].get<double>(), 0.0);
    }
  }
  const auto streamed = Post(port(), "/generate_stream",
                             {{"inputs", "Hello"}, {"parameters", {{"decoder_input_details", true}}}});
  EXPECT_EQ(streamed.status, 422) << streamed.body;
  EXPECT_NE(streamed.body.find("decoder_input_details"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::server::testing
