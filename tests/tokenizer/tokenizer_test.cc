// Tokenizer behaviour on real vocabularies of the suite: special tokens, BOS/EOS, end-of-generation ids,
// decoding options, streaming details, invalid input.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "testing/testdata.h"
#include "vocab_suite.h"

namespace lockstep {
namespace {

const Tokenizer& Get(const std::string& name) {
  const auto& loaded = testing::LoadSuiteTokenizer(name);
  if (!loaded.ok()) {
    ADD_FAILURE() << name << ": " << loaded.status().ToString();
    std::abort();
  }
  return **loaded;
}

std::vector<int32_t> Encode(const Tokenizer& t, std::string_view text, bool add_bos, bool parse_special) {
  auto ids = t.Encode(text, add_bos, parse_special);
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

TEST(TokenizerTest, SentencePieceSpecialTokensOnlyWhenAsked) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& t = Get("llama-spm");
  EXPECT_EQ(t.model_name(), "llama");
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(Encode(t, "Hello", true, false), std::vector<int32_t>({1, 15043}));
  EXPECT_EQ(Encode(t, "<s>Hello</s>", false, true), std::vector<int32_t>({1, 15043, 2}));
  const auto plain = Encode(t, "<s>Hello</s>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(t.Decode(plain), "<s>Hello</s>");
  EXPECT_EQ(t.Decode(std::vector<int32_t>{1, 15043, 2}), "<s>Hello</s>");
  EXPECT_EQ(t.Decode(std::vector<int32_t>{1, 15043, 2}, /*skip_special=*/true), "Hello");
  EXPECT_EQ(t.TokenPiece(15043), "▁Hello");
  EXPECT_EQ(t.TokenBytes(15043), " Hello");
  EXPECT_EQ(t.TokenPiece(-1), "");
  EXPECT_EQ(t.TokenPiece(32000), "");
  EXPECT_TRUE(t.IsSpecial(1));
  EXPECT_FALSE(t.IsSpecial(15043));
  EXPECT_TRUE(t.IsEndOfGeneration(2));
  EXPECT_FALSE(t.IsEndOfGeneration(1));
  EXPECT_FALSE(t.IsEndOfGeneration(15043));
  EXPECT_FALSE(t.IsEndOfGeneration(-5));
}

TEST(TokenizerTest, LeadingSpaceRuleAndContinuation) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& t = Get("llama-spm");
  const std::vector<int32_t> hello = {15043};
  EXPECT_EQ(t.Decode(hello), "Hello");
  EXPECT_EQ(t.Decode(hello, false, /*continuation=*/true), " Hello");
  // A prompt's completion decoded on its own keeps its leading space when marked as a continuation.
  IncrementalDetokenizer detok(t, false, /*continuation=*/true);
  EXPECT_EQ(detok.Push(15043), " Hello");
  // Text after a special token gets the prefix space in Encode and loses it in Decode again.
  const auto ids = Encode(t, "Hi<s>there", false, true);
  EXPECT_EQ(t.Decode(ids), "Hi<s>there");
  EXPECT_EQ(t.Decode(Encode(t, " leading space", false, false)), " leading space");
  EXPECT_EQ(t.Decode(Encode(t, "  two", true, false), true), "  two");
}

TEST(TokenizerTest, ChatControlTokensEndGeneration) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& t = Get("phi-3");
  const int32_t end = t.FindToken("<|end|>");
  const int32_t user = t.FindToken("<|user|>");
  ASSERT_GE(end, 0);
  ASSERT_GE(user, 0);
  EXPECT_EQ(t.eot_id(), end);
  EXPECT_TRUE(t.IsEndOfGeneration(end));
  EXPECT_TRUE(t.IsEndOfGeneration(t.eos_id()));
  EXPECT_FALSE(t.IsEndOfGeneration(user));
  const auto ids = Encode(t, "<|user|>\nHi<|end|>", false, true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), user);
  EXPECT_EQ(ids.back(), end);
  // Phi-3's special tokens strip the whitespace after them (llama.cpp's rule for phi-3 names, Hugging Face's
  // rstrip of these added tokens): the newline is not encoded, "Hi" gets the SentencePiece prefix space.
  EXPECT_EQ(ids, (std::vector<int32_t>{user, t.FindToken("\xE2\x96\x81Hi"), end}));
  EXPECT_EQ(t.Decode(ids), "<|user|>Hi<|end|>");
  EXPECT_EQ(t.Decode(ids, true), "Hi");
  const auto plain = Encode(t, "<|user|>\nHi<|end|>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), end), 0);
}

TEST(TokenizerTest, ByteLevelSpecialTokensAndBos) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& gpt2 = Get("gpt-2");
  EXPECT_EQ(gpt2.model_name(), "gpt2");
  EXPECT_EQ(gpt2.pre_name(), "gpt-2");
  EXPECT_FALSE(gpt2.add_bos());
  EXPECT_EQ(Encode(gpt2, "Hello world", true, false), std::vector<int32_t>({15496, 995}));
  EXPECT_EQ(Encode(gpt2, "<|endoftext|>", false, true), std::vector<int32_t>({50256}));
  EXPECT_GT(Encode(gpt2, "<|endoftext|>", false, false).size(), 1u);
  EXPECT_TRUE(gpt2.IsEndOfGeneration(50256));
  EXPECT_EQ(gpt2.Decode(std::vector<int32_t>{15496, 995}), "Hello world");
  EXPECT_EQ(gpt2.TokenPiece(995), "Ġworld");

  const Tokenizer& ds = Get("deepseek-llm");
  EXPECT_TRUE(ds.add_bos());
  const auto ids = Encode(ds, "Hello", true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), ds.bos_id());
  EXPECT_EQ(ds.Decode(ids, true), "Hello");
}

TEST(TokenizerTest, InvalidUtf8InputIsAnError) {
  LOCKSTEP_REQUIRE_TESTDATA();
  for (const char* name : {"llama-spm", "gpt-2"}) {
    const Tokenizer& t = Get(name);
    for (std::string_view bad : {std::string_view("abc\xFF"), std::string_view("\xC3"),
                                 std::string_view("x\xED\xA0\x80"), std::string_view("\xC0\xAF")}) {
      auto ids = t.Encode(bad, false, false);
      ASSERT_FALSE(ids.ok()) << name;
      EXPECT_EQ(ids.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(ids.status().message().find("UTF-8"), std::string::npos) << ids.status().message();
    }
    auto ids = t.Encode(std::string_view("abc\xFF", 4), false, false);
    EXPECT_NE(ids.status().message().find("offset 3"), std::string::npos) << ids.status().message();
  }
}

TEST(TokenizerTest, IncrementalHoldsPartialUtf8) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& t = Get("llama-spm");
  const auto ids = Encode(t, "🦙", false, false);  // ▁ then four byte tokens
  ASSERT_EQ(ids.size(), 5u);
  IncrementalDetokenizer detok(t);
  EXPECT_EQ(detok.Push(ids[0]), "");  // the prefix space, removed at the start of the text
  EXPECT_EQ(detok.Push(ids[1]), "");
  EXPECT_EQ(detok.pending_bytes(), 1u);
  EXPECT_EQ(detok.Push(ids[2]), "");
  EXPECT_EQ(detok.Push(ids[3]), "");
  EXPECT_EQ(detok.pending_bytes(), 3u);
  EXPECT_EQ(detok.Push(ids[4]), "🦙");
  EXPECT_EQ(detok.Flush(), "");
  // A sequence cut short comes out as one U+FFFD at the end; an impossible byte at once.
  IncrementalDetokenizer cut(t);
  EXPECT_EQ(cut.Push(ids[1]), "");
  EXPECT_EQ(cut.Push(ids[2]), "");
  EXPECT_EQ(cut.Push(t.FindToken("▁Hello")), "\xEF\xBF\xBD Hello");
  EXPECT_EQ(cut.Push(ids[1]), "");
  EXPECT_EQ(cut.Flush(), "\xEF\xBF\xBD");
  IncrementalDetokenizer bad(t);
  EXPECT_EQ(bad.Push(t.FindToken("<0xFF>")), "\xEF\xBF\xBD");
  EXPECT_EQ(t.Decode(std::vector<int32_t>{ids[1], ids[2]}), "\xEF\xBF\xBD");
}

TEST(TokenizerTest, ByteLevelIncrementalAcrossTokens) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& t = Get("gpt-2");
  const std::string text = "🚀 (normal) 😶‍🌫️ 我想在apple工作";
  const auto ids = Encode(t, text, false, false);
  IncrementalDetokenizer detok(t);
  std::string out;
  int held = 0;
  for (int32_t id : ids) {
    out += detok.Push(id);
    held += detok.pending_bytes() > 0;
  }
  out += detok.Flush();
  EXPECT_EQ(out, text);
  EXPECT_GT(held, 0) << "expected some token boundary inside a UTF-8 sequence";
}

TEST(TokenizerTest, DecodeSkipsIdsOutOfRange) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const Tokenizer& t = Get("gpt-2");
  EXPECT_EQ(t.Decode(std::vector<int32_t>{15496, -1, 1 << 30, 995}), "Hello world");
}

TEST(TokenizerTest, EmptyText) {
  LOCKSTEP_REQUIRE_TESTDATA();
  for (const char* name : {"llama-spm", "gpt-2", "deepseek-coder"}) {
    const Tokenizer& t = Get(name);
    EXPECT_TRUE(Encode(t, "", false, false).empty()) << name;
    const auto with_bos = Encode(t, "", true, false);
    EXPECT_EQ(with_bos.size(), t.add_bos() ? 1u : 0u) << name;
  }
}

TEST(TokenizerTest, ConcurrentEncodeAndDecode) {
  LOCKSTEP_REQUIRE_TESTDATA();
  for (const char* name : {"llama-spm", "deepseek-llm"}) {
    const Tokenizer& t = Get(name);
    const std::string text = "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～ 3.14 <s> </s>";
    const auto expected = Encode(t, text, true, true);
    std::vector<std::thread> threads;
    std::atomic<int> mismatches{0};
    for (int k = 0; k < 4; ++k) {
      threads.emplace_back([&] {
        for (int i = 0; i < 50; ++i) {
          auto ids = t.Encode(text, true, true);
          if (!ids.ok() || *ids != expected || t.Decode(*ids) != t.Decode(expected)) ++mismatches;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0) << name;
  }
}

TEST(TokenizerTest, SmallModelVocabulary) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto file = GgufFile::Open(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto t = Tokenizer::FromGguf(**file);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->vocab_size(), 512);
  EXPECT_EQ((*t)->bos_id(), 1);
  EXPECT_EQ((*t)->eos_id(), 2);
  EXPECT_EQ((*t)->TokenPiece(3), "<0x00>");
  // Its pieces past the byte tokens are placeholders, so text falls back to byte tokens -- including the
  // escaped spaces (▁ has no piece), which therefore decode as "▁", as SentencePiece's byte fallback does.
  auto ids = (*t)->Encode("Once upon", true, false);
  ASSERT_TRUE(ids.ok());
  const std::vector<int32_t> expected = {1,        3 + 0xE2, 3 + 0x96, 3 + 0x81, 3 + 'O',
                                         3 + 'n',  3 + 'c',  3 + 'e',  3 + 0xE2, 3 + 0x96,
                                         3 + 0x81, 3 + 'u',  3 + 'p',  3 + 'o',  3 + 'n'};
  EXPECT_EQ(*ids, expected);
  EXPECT_EQ((*t)->Decode(*ids, true), "▁Once▁upon");
}

}  // namespace
}  // namespace lockstep
