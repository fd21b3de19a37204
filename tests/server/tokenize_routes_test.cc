// End-to-end: POST /tokenize, /detokenize and /apply-template of a real `lockstep serve` process, in
// llama.cpp's and vLLM's shapes, their errors, and `serve --chat-template` (built-in name, file, bad name).
#include <gtest/gtest.h>

#include <fstream>

#include "e2e_util.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {

class TokenizeRoutesTest : public SharedServerTest<TokenizeRoutesTest> {};

TEST_F(TokenizeRoutesTest, LlamaCppShapesRoundTrip) {
  auto tokens = Post(port(), "/tokenize", {{"content", "Hello world"}});
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  const nlohmann::json ids = tokens.Json()["tokens"];
  ASSERT_TRUE(ids.is_array());
  ASSERT_GT(ids.size(), 1u);
  EXPECT_FALSE(tokens.Json().contains("count"));  // llama.cpp's shape: tokens only
  auto text = Post(port(), "/detokenize", {{"tokens", ids}});
  ASSERT_EQ(text.status, 200) << text.body;
  EXPECT_EQ(text.Json()["content"], "Hello world");
  EXPECT_EQ(text.Json()["prompt"], "Hello world");

  auto pieces = Post(port(), "/tokenize", {{"content", "Hi \xC3\xA9"}, {"with_pieces", true}});
  ASSERT_EQ(pieces.status, 200) << pieces.body;
  std::string joined;
  const nlohmann::json piece_tokens = pieces.Json()["tokens"];
  for (const auto& t : piece_tokens) {
    ASSERT_TRUE(t["id"].is_number_integer()) << pieces.body;
    if (t["piece"].is_string()) {
      joined += t["piece"].get<std::string>();
    } else {  // a piece that is not valid UTF-8 on its own: its bytes
      for (const auto& b : t["piece"]) joined += char(b.get<int>());
    }
  }
  EXPECT_EQ(joined, "Hi \xC3\xA9");

  // Mixed strings and ids, as llama.cpp accepts.
  auto mixed = Post(port(), "/tokenize", {{"content", {"Hello", 5, " world"}}});
  ASSERT_EQ(mixed.status, 200) << mixed.body;
  EXPECT_EQ(mixed.Json()["tokens"].size(),
            Post(port(), "/tokenize", {{"content", "Hello"}}).Json()["tokens"].size() + 1 +
                Post(port(), "/tokenize", {{"content", " world"}}).Json()["tokens"].size());
}

TEST_F(TokenizeRoutesTest, VllmShapes) {
  auto tokens =
      Post(port(), "/tokenize", {{"model", "tiny"}, {"prompt", "Hello world"}, {"return_token_strs", true}});
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  const auto j = tokens.Json();
  EXPECT_EQ(j["count"], j["tokens"].size());
  EXPECT_EQ(j["max_model_len"], 256);
  ASSERT_EQ(j["token_strs"].size(), j["tokens"].size());
  EXPECT_EQ(j["tokens"], Post(port(), "/tokenize", {{"content", "Hello world"}}).Json()["tokens"]);

  // messages: the chat template applied (the tiny model has none: ChatML), then tokenized as the chat route
  // does.
  const nlohmann::json messages = {{{"role", "user"}, {"content", "Hi"}}};
  auto chat = Post(port(), "/tokenize", {{"messages", messages}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  auto text = Post(port(), "/detokenize", {{"tokens", chat.Json()["tokens"]}});
  EXPECT_EQ(text.Json()["prompt"], "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  auto no_prompt = Post(port(), "/tokenize", {{"messages", messages}, {"add_generation_prompt", false}});
  ASSERT_EQ(no_prompt.status, 200) << no_prompt.body;
  EXPECT_EQ(Post(port(), "/detokenize", {{"tokens", no_prompt.Json()["tokens"]}}).Json()["content"],
            "<|im_start|>user\nHi<|im_end|>\n");
}

TEST_F(TokenizeRoutesTest, ApplyTemplate) {
  auto r = Post(port(), "/apply-template",
                {{"messages",
                  {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(
      r.Json()["prompt"],
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(r.Json().size(), 1u);
}

// As llama.cpp's: the template is only rendered, so a conversation longer than the context (which
// /v1/chat/completions refuses) still renders whole.
TEST_F(TokenizeRoutesTest, ApplyTemplateRendersAConversationLongerThanTheContext) {
  std::string long_text;
  for (int i = 0; i < 4000; ++i) long_text += "word ";
  const nlohmann::json body = {{"messages", {{{"role", "user"}, {"content", long_text}}}}};
  const HttpResponse generate = Post(port(), "/v1/chat/completions", body);
  ASSERT_EQ(generate.status, 400) << generate.body;
  EXPECT_EQ(generate.Json()["error"]["code"], "context_length_exceeded") << generate.body;
  const HttpResponse r = Post(port(), "/apply-template", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["prompt"], "<|im_start|>user\n" + long_text + "<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(TokenizeRoutesTest, BadInputIsA400NamingTheField) {
  auto check = [&](const std::string& path, const std::string& body, const std::string& param) {
    auto r = Request(port(), "POST", path, body);
    EXPECT_EQ(r.status, 400) << path << " " << body << ": " << r.body;
    EXPECT_EQ(r.Json()["error"]["param"], param) << path << " " << body << ": " << r.body;
  };
  check("/tokenize", R"({"content": 3})", "content");
  check("/tokenize", R"({"content": ["a", -1]})", "content[1]");
  check("/tokenize", R"({"content": "a", "with_pieces": "yes"})", "with_pieces");
  check("/tokenize", R"({"prompt": 7})", "prompt");
  check("/tokenize", R"({})", "content");
  check("/tokenize", R"({"messages": "hi"})", "messages");
  check("/detokenize", R"({"tokens": "1 2"})", "tokens");
  check("/detokenize", R"({"tokens": [1, 99999999]})", "tokens[1]");
  check("/detokenize", R"({"tokens": [1.5]})", "tokens[0]");
  check("/apply-template", R"({"messages": []})", "messages");
  EXPECT_EQ(Request(port(), "POST", "/tokenize", "{oops").status, 400);
  EXPECT_EQ(Request(port(), "GET", "/tokenize").status, 405);
}

TEST(ServeChatTemplateTest, BuiltinNameFileAndBadName) {
  ServerProcess llama2(TinyModel(), {"-t", "1", "--chat-template", "llama2"});
  ASSERT_TRUE(llama2.ok()) << llama2.log();
  const nlohmann::json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  auto r = Post(llama2.port(), "/apply-template", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string prompt = r.Json()["prompt"];
  EXPECT_NE(prompt.find("[INST] Hi [/INST]"), std::string::npos) << prompt;  // after the BOS token's text

  const std::string dir = lockstep::testing::MakeTempDir("serve-template");
  std::ofstream(dir + "/t.jinja") << "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}";
  ServerProcess from_file(TinyModel(), {"-t", "1", "--chat-template", dir + "/t.jinja"});
  ASSERT_TRUE(from_file.ok()) << from_file.log();
  EXPECT_EQ(Post(from_file.port(), "/apply-template", body).Json()["prompt"], "<user>Hi");

  std::string out;
  EXPECT_EQ(lockstep::testing::RunCommand(lockstep::testing::LockstepBinary() + " serve -m " + TinyModel() +
                                              " --port 0 --chat-template nosuch 2>&1",
                                          &out),
            1);
  EXPECT_NE(out.find("--chat-template 'nosuch': no such file, and not a built-in template (chatml,"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace lockstep::server::testing
