// llama.cpp's POST /infill: the prompt builder (LayOutInfill, InfillExtraTokens) token by token, including
// the budget that keeps the text nearest the cursor and the repo-level layout of a Qwen-style vocabulary; and
// end to end on a real `lockstep serve` with a tiny model on StarCoder's vocabulary (FIM tokens, no
// FIM_SEP): greedy /infill equals /completion given the same token ids, input_extra's snippet layout,
// truncation, streaming, n_indent (and its stop rules), a model without FIM tokens → 501, and a 400 naming
// every bad field; /v1/completions' suffix laid out the same way.
#include <gtest/gtest.h>

#include "e2e_util.h"
#include "server/llamacpp_infill.h"
#include "test_client.h"
#include "testing/testdata.h"
#include "testing/vocab/test_vocab.h"

namespace lockstep::server::testing {
namespace infill_routes_test {

std::vector<int32_t> Range(int32_t from, int32_t to) {
  std::vector<int32_t> out;
  for (int32_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

std::vector<int32_t> Cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// A byte-level toy vocabulary with Qwen's FIM pieces (ids 256.. in this order) and the bytes' pieces before.
std::shared_ptr<const Tokenizer> QwenStyleTokenizer() {
  std::vector<std::pair<std::string, int32_t>> pieces;
  for (const char* p : {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>", "<|repo_name|>",
                        "<|file_sep|>"}) {
    pieces.emplace_back(p, 3);
  }
  auto t = ::lockstep::testing::ToyTokenizer(::lockstep::testing::ByteLevelToyVocabulary(pieces));
  EXPECT_NE(t, nullptr);
  return t;
}

// The toy vocabulary has no merges: one token per byte.
std::vector<int32_t> Bytes(const std::string& s) {
  std::vector<int32_t> out;
  for (unsigned char c : s) out.push_back(c);  // the byte pieces are ids 0..255 in byte order
  return out;
}

TEST(InfillLayoutTest, PrefixPromptSuffixAroundFimTokens) {
  const FimTokens fim{.pre = 900, .suf = 901, .mid = 902};
  InfillParts parts{Range(1, 5), Range(10, 13), Range(20, 22), Range(30, 33)};
  const InfillBudget roomy{.n_ctx = 4096, .n_batch = 2048, .n_predict = 16};
  EXPECT_EQ(LayOutInfill(parts, fim, /*bos=*/-1, roomy),
            Cat({Range(30, 33), {900}, Range(1, 5), Range(20, 22), {901}, Range(10, 13), {902}}));
  // BOS goes after the extra context, before FIM_PRE (as llama.cpp).
  EXPECT_EQ(LayOutInfill(parts, fim, /*bos=*/7, roomy),
            Cat({Range(30, 33), {7, 900}, Range(1, 5), Range(20, 22), {901}, Range(10, 13), {902}}));
}

TEST(InfillLayoutTest, BudgetKeepsTheTextNearestTheCursor) {
  const FimTokens fim{.pre = 900, .suf = 901, .mid = 902};
  // n_batch 40: the prefix keeps its last 30 tokens, the suffix its first 10 - 2 - 3 (prompt) = 5; the extra
  // context gets 100 - 40 - 2 * 10 - 3 = 37 tokens, its last ones.
  InfillParts parts{Range(1000, 1100), Range(2000, 2100), Range(3000, 3003), Range(4000, 4100)};
  const InfillBudget budget{.n_ctx = 100, .n_batch = 40, .n_predict = 10};
  const std::vector<int32_t> out = LayOutInfill(parts, fim, -1, budget);
  EXPECT_EQ(
      out,
      Cat({Range(4063, 4100), {900}, Range(1070, 1100), Range(3000, 3003), {901}, Range(2000, 2005), {902}}));
  EXPECT_LT(out.size() + 10, 100u);
  // n_predict -1 reserves nothing but the slack; a prompt longer than the suffix's share leaves no suffix.
  parts.prompt = Range(3000, 3020);
  EXPECT_EQ(LayOutInfill(parts, fim, -1, InfillBudget{.n_ctx = 100, .n_batch = 40, .n_predict = -1}),
            Cat({Range(4043, 4100), {900}, Range(1070, 1100), Range(3000, 3020), {901, 902}}));
}

TEST(InfillLayoutTest, BatchIsLlamaCppsOrHalfASmallContext) {
  EXPECT_EQ(InfillBudgetFor(32768, 64).n_batch, 2048);
  EXPECT_EQ(InfillBudgetFor(4096, 64).n_batch, 2048);
  EXPECT_EQ(InfillBudgetFor(256, 64).n_batch, 128);
  EXPECT_EQ(InfillBudgetFor(256, 64).n_predict, 64);
}

TEST(InfillLayoutTest, RepoLevelExtraContextWithFileSeparators) {
  ApiContext ctx;
  ctx.tokenizer = QwenStyleTokenizer();
  ASSERT_EQ(ctx.tokenizer->fim().rep, 260);
  ASSERT_EQ(ctx.tokenizer->fim().sep, 261);
  const nlohmann::json extra = {{{"filename", "a.py"}, {"text", "x=1"}}, {{"text", "<|fim_pad|>"}}};
  auto ids = InfillExtraTokens(ctx, &extra);
  ASSERT_TRUE(ids.ok()) << ids.error.status.message();
  // A chunk without filename is "tmp"; special-token text in a chunk stays text.
  EXPECT_EQ(*ids.value, Cat({{260},
                             Bytes("myproject\n"),
                             {261},
                             Bytes("a.py\n"),
                             Bytes("x=1"),
                             {261},
                             Bytes("tmp\n"),
                             Bytes("<|fim_pad|>"),
                             {261},
                             Bytes("filename\n")}));
  // No input_extra: the repository and current-file markers only.
  auto none = InfillExtraTokens(ctx, nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none.value, Cat({{260}, Bytes("myproject\n"), {261}, Bytes("filename\n")}));
  const nlohmann::json bad = {{{"filename", "a.py"}}};
  auto refused = InfillExtraTokens(ctx, &bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error.param, "input_extra[0].text");
}

TEST(LlamaCppCodeStopsTest, IndentCutsAShallowLineAfterTheFirst) {
  constexpr size_t kGoOn = std::string_view::npos;
  EXPECT_EQ(LlamaCppIndentCut("x = 1", 4), kGoOn);  // the cursor's line is never checked
  EXPECT_EQ(LlamaCppIndentCut("a\n    b", 4), kGoOn);
  EXPECT_EQ(LlamaCppIndentCut("a\n  b", 4), 4u);    // cut before "b", the indentation kept
  EXPECT_EQ(LlamaCppIndentCut("a\n  ", 4), kGoOn);  // no character on the line yet
  EXPECT_EQ(LlamaCppIndentCut("a\n", 4), kGoOn);
  EXPECT_EQ(LlamaCppIndentCut("a\n\tb", 2), 3u);  // a tab counts one, as llama.cpp
  EXPECT_EQ(LlamaCppIndentCut("a\n    b\nc", 4), 8u);
  EXPECT_EQ(LlamaCppIndentCut("a\nb", 0), kGoOn);
}

TEST(LlamaCppCodeStopsTest, PredictTimeNeedsANewLine) {
  EXPECT_FALSE(LlamaCppPredictTimeUp("abc", 5000, 100));
  EXPECT_FALSE(LlamaCppPredictTimeUp("a\nb", 50, 100));
  EXPECT_TRUE(LlamaCppPredictTimeUp("a\nb", 150, 100));
  EXPECT_FALSE(LlamaCppPredictTimeUp("a\nb", 150, 0));
}

// The end-to-end suite: tiny model, StarCoder's vocabulary (<fim_prefix> <fim_suffix> <fim_middle>
// <fim_pad>).
class InfillRoutesTest : public SharedServerTest<InfillRoutesTest> {
 public:
  static std::string Model() {
    if (::lockstep::testing::TestDataDir().empty()) return TinyModel();  // the tests skip
    const std::string path = ::lockstep::testing::MakeTempDir("lockstep-infill") + "/tiny-starcoder.gguf";
    const std::string make = ::lockstep::testing::LockstepBinary() +
                             " make-model --shape tiny --vocab-from " +
                             ::lockstep::testing::TestDataPath("vocab/ggml-vocab-starcoder.gguf") + " -o " +
                             path + " > /dev/null 2>&1";
    EXPECT_EQ(::lockstep::testing::RunCommand(make), 0) << make;
    return path;
  }

 protected:
  void SetUp() override {
    LOCKSTEP_REQUIRE_TESTDATA();
    SharedServerTest::SetUp();
  }
  static nlohmann::json Infill(const nlohmann::json& body) {
    const HttpResponse r = Post(port(), "/infill", body);
    EXPECT_EQ(r.status, 200) << body.dump() << " → " << r.body;
    return r.Json();
  }
  static std::vector<int32_t> Tokens(const std::string& text) {
    const HttpResponse r = Post(port(), "/tokenize", {{"content", text}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json()["tokens"].get<std::vector<int32_t>>();
  }
  static int32_t Id(const std::string& piece) {
    const std::vector<int32_t> ids = Tokens(piece);  // /tokenize parses special-token text
    EXPECT_EQ(ids.size(), 1u) << piece;
    return ids.empty() ? -1 : ids[0];
  }
};

TEST_F(InfillRoutesTest, GreedyEqualsCompletionOfTheSameTokens) {
  const std::string prefix = "def add(a, b):\n    ";
  const std::string suffix = "\n\nprint(add(1, 2))\n";
  const std::string prompt = "return";
  const nlohmann::json j = Infill({{"input_prefix", prefix},
                                   {"input_suffix", suffix},
                                   {"prompt", prompt},
                                   {"n_predict", 8},
                                   {"temperature", 0},
                                   {"return_tokens", true}});
  // StarCoder's vocabulary adds no BOS; no input_extra and no FIM_REP / FIM_SEP: nothing before FIM_PRE.
  const std::vector<int32_t> ids = [&] {
    std::vector<int32_t> v = {Id("<fim_prefix>")};
    for (const std::string& part : {prefix, prompt}) {
      const std::vector<int32_t> t = Tokens(part);
      v.insert(v.end(), t.begin(), t.end());
    }
    v.push_back(Id("<fim_suffix>"));
    const std::vector<int32_t> t = Tokens(suffix);
    v.insert(v.end(), t.begin(), t.end());
    v.push_back(Id("<fim_middle>"));
    return v;
  }();
  EXPECT_EQ(j["tokens_evaluated"], ids.size()) << j.dump();
  EXPECT_EQ(j["prompt"], "<fim_prefix>" + prefix + prompt + "<fim_suffix>" + suffix + "<fim_middle>");
  const HttpResponse same =
      Post(port(), "/completion",
           {{"prompt", ids}, {"n_predict", 8}, {"temperature", 0}, {"return_tokens", true}});
  ASSERT_EQ(same.status, 200) << same.body;
  EXPECT_EQ(j["content"], same.Json()["content"]);
  EXPECT_EQ(j["tokens"], same.Json()["tokens"]);
  EXPECT_EQ(j["tokens_predicted"], same.Json()["tokens_predicted"]);
  // /completion's result shape.
  for (const char* key : {"content", "tokens", "stop", "stop_type", "stopping_word", "tokens_predicted",
                          "tokens_evaluated", "tokens_cached", "generation_settings", "prompt", "timings",
                          "truncated", "has_new_line", "model", "index", "id_slot"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["stop"], true);
}

// OpenAI's /v1/completions `suffix` (Ollama's and DeepSeek's fill in the middle): the prompt is the prefix,
// laid out as /infill lays out input_prefix and input_suffix, so greedy outputs are equal.
TEST_F(InfillRoutesTest, CompletionsSuffixIsFillInTheMiddle) {
  const std::string prefix = "def add(a, b):\n    return";
  const std::string suffix = "\n\nprint(add(1, 2))\n";
  const nlohmann::json infill =
      Infill({{"input_prefix", prefix}, {"input_suffix", suffix}, {"n_predict", 8}, {"temperature", 0}});
  const nlohmann::json body = {{"prompt", prefix}, {"suffix", suffix}, {"max_tokens", 8}, {"temperature", 0}};
  const HttpResponse r = Post(port(), "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json whole = r.Json();
  EXPECT_EQ(whole["choices"][0]["text"], infill["content"]) << r.body;
  EXPECT_EQ(whole["usage"]["prompt_tokens"], infill["tokens_evaluated"]) << r.body;
  nlohmann::json streamed = body;
  streamed["stream"] = true;
  bool done = false;
  EXPECT_EQ(CollectOpenAiText(Stream(port(), "/v1/completions", streamed), false, &done)[0],
            infill["content"].get<std::string>());
  // An empty suffix is a plain completion.
  nlohmann::json plain = body;
  plain["suffix"] = "";
  const HttpResponse p = Post(port(), "/v1/completions", plain);
  ASSERT_EQ(p.status, 200) << p.body;
  EXPECT_LT(p.Json()["usage"]["prompt_tokens"].get<int>(), whole["usage"]["prompt_tokens"].get<int>());
  for (const nlohmann::json& bad : {nlohmann::json{{"suffix", 3}}, nlohmann::json{{"echo", true}},
                                    nlohmann::json{{"prompt", {1, 2, 3}}}}) {
    nlohmann::json b = body;
    b.update(bad);
    const HttpResponse e = Post(port(), "/v1/completions", b);
    EXPECT_EQ(e.status, 400) << bad << " -> " << e.body;
    EXPECT_EQ(e.Json()["error"]["param"], "suffix") << e.body;
  }
  nlohmann::json chat = {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"suffix", "y"}};
  EXPECT_EQ(Post(port(), "/v1/chat/completions", chat).status, 400);
}

TEST_F(InfillRoutesTest, ExtraChunksAreSnippetsBeforeThePrefix) {
  // StarCoder has no FIM_SEP (llama.cpp knows only <|file_sep|>) and no FIM_REP: each chunk is a snippet.
  const nlohmann::json j =
      Infill({{"input_prefix", "x = "},
              {"input_suffix", ""},
              {"input_extra", {{{"filename", "a.py"}, {"text", "A = 1"}}, {{"text", "B = 2"}}}},
              {"n_predict", 2},
              {"temperature", 0}});
  EXPECT_EQ(
      j["prompt"],
      "\n\n--- snippet ---\n\nA = 1\n\n--- snippet ---\n\nB = 2<fim_prefix>x = <fim_suffix><fim_middle>");
  const size_t expected = 2 * Tokens("\n\n--- snippet ---\n\n").size() + Tokens("A = 1").size() +
                          Tokens("B = 2").size() + Tokens("x = ").size() + 3;
  EXPECT_EQ(j["tokens_evaluated"], expected);
}

TEST_F(InfillRoutesTest, TruncationKeepsTheTextNearestTheCursor) {
  // Context 256: n_batch 128, so 96 prefix tokens, 30 suffix tokens and 256 - 128 - 2 * 4 - 3 = 117 tokens
  // of extra context.
  std::string prefix, suffix, extra;
  for (int i = 0; i < 150; ++i) {
    prefix += " p" + std::to_string(i);
    suffix += " s" + std::to_string(i);
    extra += " e" + std::to_string(i);
  }
  const nlohmann::json j = Infill({{"input_prefix", prefix},
                                   {"input_suffix", suffix},
                                   {"input_extra", {{{"text", extra}}}},
                                   {"n_predict", 4},
                                   {"temperature", 0}});
  const std::string p = j["prompt"].get<std::string>();
  EXPECT_EQ(j["tokens_evaluated"], 117 + 1 + 96 + 1 + 30 + 1) << p;
  const size_t pre = p.find("<fim_prefix>");
  const size_t suf = p.find("<fim_suffix>");
  ASSERT_NE(pre, std::string::npos) << p;
  ASSERT_NE(suf, std::string::npos) << p;
  EXPECT_NE(p.find(" e149<fim_prefix>"), std::string::npos) << p;  // the extra context's end
  EXPECT_EQ(p.find(" e0 "), std::string::npos) << p;               // ... not its start
  EXPECT_NE(p.find(" p149<fim_suffix>"), std::string::npos) << p;  // the prefix's end
  EXPECT_EQ(p.find(" p0 "), std::string::npos) << p;
  EXPECT_EQ(p.substr(suf, 17), "<fim_suffix> s0 s") << p;  // the suffix's start
  EXPECT_EQ(p.find(" s149"), std::string::npos) << p;
  EXPECT_EQ(p.substr(p.size() - 12), "<fim_middle>") << p;
}

TEST_F(InfillRoutesTest, StreamConcatenatesToContent) {
  nlohmann::json body = {{"input_prefix", "int main() {"},
                         {"input_suffix", "}"},
                         {"n_predict", 10},
                         {"temperature", 0},
                         {"ignore_eos", true}};
  const nlohmann::json whole = Infill(body);
  body["stream"] = true;
  int status = 0;
  const std::vector<std::string> events = Stream(port(), "/infill", body, nullptr, &status);
  EXPECT_EQ(status, 200);
  ASSERT_GE(events.size(), 2u);
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_NE(events[i], "[DONE]");
    const nlohmann::json e = nlohmann::json::parse(events[i]);
    EXPECT_EQ(e["stop"], i + 1 == events.size()) << events[i];
    text += e["content"].get<std::string>();
  }
  EXPECT_EQ(text, whole["content"]);
  const nlohmann::json last = nlohmann::json::parse(events.back());
  EXPECT_EQ(last["tokens_predicted"], 10);
  EXPECT_EQ(last["tokens_evaluated"], whole["tokens_evaluated"]);
  EXPECT_EQ(last["stop_type"], "limit");
}

TEST_F(InfillRoutesTest, FimPadEndsGeneration) {
  // The FIM_PAD token, forced by logit_bias, is an end of generation (stop_type eos), as in llama.cpp.
  const nlohmann::json j = Infill({{"input_prefix", "a"},
                                   {"input_suffix", "b"},
                                   {"n_predict", 8},
                                   {"temperature", 0},
                                   {"logit_bias", {{Id("<fim_pad>"), 1000}}}});
  EXPECT_EQ(j["stop_type"], "eos") << j.dump();
  EXPECT_EQ(j["tokens_predicted"], 1) << j.dump();
}

TEST_F(InfillRoutesTest, NIndentEndsAShallowLine) {
  // A grammar makes the text a new line, then "x" at no indentation, then letters.
  nlohmann::json body = {{"input_prefix", "def f():\n"},
                         {"input_suffix", ""},
                         {"prompt", "    "},
                         {"n_predict", 8},
                         {"temperature", 0},
                         {"ignore_eos", true},
                         {"grammar", "root ::= \"\\n\" \"x\" [a-z]*"}};
  const nlohmann::json free = Infill(body);
  ASSERT_EQ(free["content"].get<std::string>().substr(0, 2), "\nx") << free.dump();
  EXPECT_EQ(free["tokens_predicted"], 8);
  body["n_indent"] = 4;  // "x" at indentation 0 < 4: the choice ends before it
  const nlohmann::json cut = Infill(body);
  EXPECT_EQ(cut["content"], "\n") << cut.dump();
  EXPECT_EQ(cut["stop_type"], "limit");
  EXPECT_LE(cut["tokens_predicted"], 2);
  body["stream"] = true;
  const std::vector<std::string> events = Stream(port(), "/infill", body);
  ASSERT_FALSE(events.empty());
  const nlohmann::json last = nlohmann::json::parse(events.back());
  EXPECT_EQ(last["stop_type"], "limit") << events.back();
  EXPECT_EQ(last["tokens_predicted"], cut["tokens_predicted"]) << events.back();
  // t_max_predict_ms far beyond the request changes nothing; t_max_prompt_ms is read and ignored (as
  // llama.cpp).
  body.erase("n_indent");
  body["stream"] = false;
  body["t_max_predict_ms"] = 3600000;
  body["t_max_prompt_ms"] = 500;
  EXPECT_EQ(Infill(body)["content"], free["content"]);
}

TEST_F(InfillRoutesTest, EveryBadFieldIsA400NamingIt) {
  const nlohmann::json ok = {{"input_prefix", "a"}, {"input_suffix", "b"}, {"n_predict", 2}};
  const auto with = [&](const char* key, const nlohmann::json& value) {
    nlohmann::json body = ok;
    body[key] = value;
    return body;
  };
  nlohmann::json no_prefix = ok;
  no_prefix.erase("input_prefix");
  nlohmann::json no_suffix = ok;
  no_suffix.erase("input_suffix");
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {no_prefix, "input_prefix"},
      {no_suffix, "input_suffix"},
      {with("input_prefix", 5), "input_prefix"},
      {with("input_prefix", {"a", -1}), "input_prefix[1]"},
      {with("input_suffix", {{"x"}}), "input_suffix[0]"},
      {with("prompt", 5), "prompt"},
      {with("prompt", {"a"}), "prompt"},
      {with("input_extra", "x"), "input_extra"},
      {with("input_extra", {5}), "input_extra[0]"},
      {with("input_extra", {{{"filename", "a"}}}), "input_extra[0].text"},
      {with("input_extra", {{{"text", 5}}}), "input_extra[0].text"},
      {with("input_extra", {{{"text", "a"}, {"filename", 3}}}), "input_extra[0].filename"},
      {with("input_extra", nlohmann::json::array({{{"text", "a"}}, {{"text", true}}})),
       "input_extra[1].text"},
      {with("input_extra", std::vector<nlohmann::json>(257, {{"text", "a"}})), "input_extra"},
      {with("n_predict", "x"), "n_predict"},
      {with("temperature", "hot"), "temperature"},
      {with("n_probs", -1), "n_probs"},
      {with("mirostat", 3), "mirostat"},
      {with("dry_multiplier", -0.8), "dry_multiplier"},
      {with("dry_sequence_breakers", "\n"), "dry_sequence_breakers"},
      {with("n_indent", "4"), "n_indent"},
      {with("t_max_predict_ms", 1.5), "t_max_predict_ms"},
      {with("t_max_prompt_ms", "x"), "t_max_prompt_ms"},
  };
  for (const auto& [body, param] : cases) {
    const HttpResponse r = Post(port(), "/infill", body);
    EXPECT_EQ(r.status, 400) << body.dump() << " → " << r.body;
    const nlohmann::json error = r.Json()["error"];
    EXPECT_EQ(error["type"], "invalid_request_error") << r.body;
    EXPECT_EQ(error["param"], param) << body.dump() << " → " << r.body;
    const std::string field = param.substr(0, param.find_first_of("[."));
    EXPECT_NE(error["message"].get<std::string>().find(field), std::string::npos) << r.body;
  }
  // DRY is read as on /completion (the same parser) and reported.
  const HttpResponse dry = Post(port(), "/infill",
                                {{"input_prefix", "a"},
                                 {"input_suffix", "b"},
                                 {"n_predict", 2},
                                 {"dry_multiplier", 0.8},
                                 {"dry_sequence_breakers", {"\n"}}});
  ASSERT_EQ(dry.status, 200) << dry.body;
  EXPECT_FLOAT_EQ(dry.Json()["generation_settings"]["dry_multiplier"].get<float>(), 0.8f) << dry.body;
  EXPECT_EQ(dry.Json()["generation_settings"]["dry_sequence_breakers"], nlohmann::json({"\n"})) << dry.body;
  // Text that is not UTF-8 (JSON's \u escapes cannot say it; the raw byte can).
  const HttpResponse bad_utf8 =
      Request(port(), "POST", "/infill", "{\"input_prefix\": \"a\", \"input_suffix\": \"\xff\"}");
  EXPECT_EQ(bad_utf8.status, 400) << bad_utf8.body;
  const HttpResponse malformed = Request(port(), "POST", "/infill", "{\"input_prefix\": ");
  EXPECT_EQ(malformed.status, 400) << malformed.body;
  EXPECT_EQ(Request(port(), "GET", "/infill").status, 405);
}

// A model without FIM tokens (the tiny model's own vocabulary): 501 not_supported_error naming each missing
// token, in llama.cpp's words and with its status and type.
TEST(InfillNoFimTest, ModelWithoutFimTokensIsA501) {
  ServerProcess server(TinyModel(), {"-t", "1"});
  ASSERT_TRUE(server.ok()) << server.log();
  const HttpResponse r = Post(server.port(), "/infill", {{"input_prefix", "a"}, {"input_suffix", "b"}});
  EXPECT_EQ(r.status, 501) << r.body;
  EXPECT_EQ(r.Json()["error"]["type"], "not_supported_error") << r.body;
  EXPECT_EQ(r.Json()["error"]["code"], 501) << r.body;
  const std::string message = r.Json()["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("Infill is not supported by this model"), std::string::npos) << message;
  for (const char* missing :
       {"prefix token is missing", "suffix token is missing", "middle token is missing"})
    EXPECT_NE(message.find(missing), std::string::npos) << message;
  EXPECT_EQ(Post(server.port(), "/completion", {{"prompt", "a"}, {"n_predict", 1}}).status, 200);
  // /v1/completions' suffix, the same message as OpenAI's invalid request (a 400: OpenAI's SDKs retry every
  // 5xx); found by fuzz/openai_completion_fuzzer ("a bad request is a 4xx").
  const HttpResponse suffix =
      Post(server.port(), "/v1/completions", {{"prompt", "a"}, {"suffix", "b"}, {"max_tokens", 1}});
  EXPECT_EQ(suffix.status, 400) << suffix.body;
  EXPECT_EQ(suffix.Json()["error"]["type"], "invalid_request_error") << suffix.body;
  EXPECT_NE(
      suffix.Json()["error"]["message"].get<std::string>().find("Infill is not supported by this model"),
      std::string::npos)
      << suffix.body;
  EXPECT_EQ(suffix.Json()["error"]["param"], "suffix") << suffix.body;
}

}  // namespace infill_routes_test
}  // namespace lockstep::server::testing
