// End-to-end: LoRA adapters on a real `lockstep serve --lora A --lora-scaled B 0.5` with the tiny model and
// two adapters from `lockstep make-lora`: GET/POST /lora-adapters (llama.cpp's), the per-request `lora` field
// on /completion, /v1/completions and /v1/chat/completions, global scales for requests without it, the
// prefix cache kept apart between different scales, and 400s naming the field.
#include <gtest/gtest.h>

#include "e2e_util.h"
#include "test_client.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {

std::string MakeAdapter(const std::string& name, const std::string& extra) {
  const std::string path = ::lockstep::testing::MakeTempDir("lockstep-server-lora") + "/" + name + ".gguf";
  const std::string cmd = ::lockstep::testing::LockstepBinary() + " make-lora -m " + TinyModel() + " -o " +
                          path + " " + extra + " > /dev/null 2>&1";
  EXPECT_EQ(::lockstep::testing::RunCommand(cmd), 0) << cmd;
  return path;
}

const std::string& AdapterA() {
  static const std::string path = MakeAdapter("a", "--rank 8 --alpha 16");
  return path;
}
const std::string& AdapterB() {
  static const std::string path = MakeAdapter("b", "--rank 2 --alpha 0 --type f16 --targets attn_v,output");
  return path;
}

// A prompt of several 16-token KV blocks.
constexpr const char* kLongPrompt =
    "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat and the bird sings "
    "a song about the morning sun rising over the quiet hills";

class LoraRoutesTest : public SharedServerTest<LoraRoutesTest> {
 public:
  static std::vector<std::string> Args() {
    return {"-t", "1", "--lora", AdapterA(), "--lora-scaled", AdapterB(), "0.5"};
  }

 protected:
  void TearDown() override {  // every test starts from the start-up scales
    Post(port(), "/lora-adapters", {{{"id", 0}, {"scale", 1.0}}, {{"id", 1}, {"scale", 0.5}}});
  }
  static std::string Text(const nlohmann::json& lora, const std::string& path = "/completion",
                          const std::string& prompt = "Hello world") {
    nlohmann::json body = {{"prompt", prompt}, {"temperature", 0}};
    body[path == "/completion" ? "n_predict" : "max_tokens"] = 16;
    if (!lora.is_null()) body["lora"] = lora;
    const HttpResponse r = Post(port(), path, body);
    EXPECT_EQ(r.status, 200) << body.dump() << " → " << r.body;
    return path == "/completion" ? r.Json()["content"].get<std::string>()
                                 : r.Json()["choices"][0]["text"].get<std::string>();
  }
};

TEST_F(LoraRoutesTest, ListsAndSetsGlobalScales) {
  HttpResponse r = Request(port(), "GET", "/lora-adapters");
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json expected = {{{"id", 0}, {"path", AdapterA()}, {"scale", 1.0}},
                                   {{"id", 1}, {"path", AdapterB()}, {"scale", 0.5}}};
  EXPECT_EQ(r.Json(), expected);
  // Adapters not listed get 0, as llama.cpp's.
  r = Post(port(), "/lora-adapters", {{{"id", 1}, {"scale", 0.25}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json(), nlohmann::json({{"success", true}}));
  r = Request(port(), "GET", "/lora-adapters");
  EXPECT_EQ(r.Json()[0]["scale"], 0.0);
  EXPECT_EQ(r.Json()[1]["scale"], 0.25);
  // A request without `lora` takes the global scales; its generation_settings list them.
  const HttpResponse c = Post(port(), "/completion", {{"prompt", "Hello"}, {"n_predict", 2}});
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.Json()["generation_settings"]["lora"],
            nlohmann::json({{{"id", 0}, {"scale", 0.0}}, {{"id", 1}, {"scale", 0.25}}}));
}

TEST_F(LoraRoutesTest, PerRequestScalesOnEveryCompletionRoute) {
  const std::string base = Text(nlohmann::json::array());  // every adapter off
  const nlohmann::json a_only = {{{"id", 0}, {"scale", 1.0}}};
  const std::string adapted = Text(a_only);
  EXPECT_NE(base, adapted);
  EXPECT_EQ(Text(a_only, "/v1/completions"), adapted);
  EXPECT_EQ(Text(nlohmann::json::array(), "/v1/completions"), base);
  // Global scales set to the same values give the same text to requests without the field.
  ASSERT_EQ(Post(port(), "/lora-adapters", a_only).status, 200);
  EXPECT_EQ(Text(nullptr), adapted);
  EXPECT_EQ(Text(nullptr, "/v1/completions"), adapted);
  ASSERT_EQ(Post(port(), "/lora-adapters", nlohmann::json::array()).status, 200);
  EXPECT_EQ(Text(nullptr), base);
  // Chat reads the field too.
  auto chat = [&](const nlohmann::json& lora) {
    const nlohmann::json body = {{"messages", {{{"role", "user"}, {"content", "Hi there"}}}},
                                 {"max_tokens", 12},
                                 {"temperature", 0},
                                 {"lora", lora}};
    const HttpResponse r = Post(port(), "/v1/chat/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json()["choices"][0]["message"]["content"].get<std::string>();
  };
  EXPECT_NE(chat(nlohmann::json::array()), chat({{{"id", 0}, {"scale", 2.0}}}));
}

TEST_F(LoraRoutesTest, PrefixCacheIsNotSharedAcrossScales) {
  auto cached = [&](const nlohmann::json& lora) {
    const nlohmann::json body = {
        {"prompt", kLongPrompt}, {"max_tokens", 2}, {"temperature", 0}, {"lora", lora}};
    const HttpResponse r = Post(port(), "/v1/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json()["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
  };
  const nlohmann::json one = {{{"id", 0}, {"scale", 0.75}}};
  const nlohmann::json other = {{{"id", 0}, {"scale", 0.5}}};
  cached(one);
  EXPECT_GT(cached(one), 0);  // same scales: the prompt's blocks are found
  EXPECT_EQ(cached(other), 0);
  EXPECT_EQ(cached({{{"id", 0}, {"scale", 0.75}}, {{"id", 1}, {"scale", 0.1}}}), 0);
  EXPECT_GT(cached(other), 0);
}

TEST_F(LoraRoutesTest, BadLoraFieldsAre400s) {
  const std::vector<nlohmann::json> bad = {
      {{{"id", 2}, {"scale", 1}}},
      {{{"id", -1}, {"scale", 1}}},
      {{{"scale", 1}}},
      {{{"id", 0}, {"scale", "big"}}},
      "lora",
      {1, 2},
  };
  for (const nlohmann::json& lora : bad) {
    for (const char* path : {"/completion", "/v1/completions"}) {
      const HttpResponse r = Post(port(), path, {{"prompt", "x"}, {"lora", lora}});
      EXPECT_EQ(r.status, 400) << path << " " << lora.dump() << " → " << r.body;
      EXPECT_EQ(r.Json()["error"]["param"], "lora") << r.body;
      EXPECT_NE(r.Json()["error"]["message"].get<std::string>().find("lora"), std::string::npos) << r.body;
    }
    const HttpResponse set = Post(port(), "/lora-adapters", lora);
    EXPECT_EQ(set.status, 400) << lora.dump() << " → " << set.body;
  }
  EXPECT_EQ(Request(port(), "POST", "/lora-adapters", "{\"id\": 0}").status, 400);  // not an array
  EXPECT_EQ(Request(port(), "POST", "/lora-adapters", "[{").status, 400);
  // Nothing changed.
  const HttpResponse r = Request(port(), "GET", "/lora-adapters");
  EXPECT_EQ(r.Json()[0]["scale"], 1.0);
  EXPECT_EQ(r.Json()[1]["scale"], 0.5);
}

}  // namespace
}  // namespace lockstep::server::testing
