// Vocabularies built in memory (GgufWriter -> GgufFile::FromBytes): malformed ones must give clear load
// errors, small well-formed ones pin down SentencePiece and byte-level BPE behaviour exactly.
#include <gtest/gtest.h>

#include <optional>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace lockstep {
namespace {

// A toy SentencePiece vocabulary: <unk> <s> </s>, 256 byte tokens, then pieces with scores.
struct SpmSpec {
  std::vector<std::string> pieces = {"▁",   "h",   "e",      "l", "o", "▁h", "ll",
                                     "▁he", "llo", "▁hello", "w", "r", "d"};
  std::vector<float> scores = {-1, -2, -2, -2, -2, -3, -4, -5, -6, -7, -8, -8, -8};
};

GgufWriter SpmWriter(const SpmSpec& spec = {}) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    tokens.push_back(buf);
    scores.push_back(0);
    types.push_back(6);
  }
  for (size_t i = 0; i < spec.pieces.size(); ++i) {
    tokens.push_back(spec.pieces[i]);
    scores.push_back(spec.scores[i]);
    types.push_back(1);
  }
  GgufWriter w;
  w.Set("general.architecture", GgufValue::String("llama"));
  w.Set("tokenizer.ggml.model", GgufValue::String("llama"));
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  w.Set("tokenizer.ggml.scores", GgufValue::Float32Array(scores));
  w.Set("tokenizer.ggml.token_type", GgufValue::Int32Array(types));
  w.Set("tokenizer.ggml.bos_token_id", GgufValue::Uint32(1));
  w.Set("tokenizer.ggml.eos_token_id", GgufValue::Uint32(2));
  w.Set("tokenizer.ggml.unknown_token_id", GgufValue::Uint32(0));
  return w;
}

// A toy byte-level BPE vocabulary: the 256 byte characters, then merged pieces.
GgufWriter BpeWriter(const std::vector<std::string>& merges = {"h e", "l l", "he ll", "hell o", "Ġ w"}) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    byte_level::EncodeBytes(std::string(1, static_cast<char>(b)), &s);
    tokens.push_back(s);
  }
  for (const char* p : {"he", "ll", "hell", "hello", "Ġw", "<|endoftext|>"}) tokens.push_back(p);
  std::vector<int32_t> types(tokens.size(), 1);
  types.back() = 3;
  GgufWriter w;
  w.Set("tokenizer.ggml.model", GgufValue::String("gpt2"));
  w.Set("tokenizer.ggml.pre", GgufValue::String("gpt-2"));
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  w.Set("tokenizer.ggml.token_type", GgufValue::Int32Array(types));
  w.Set("tokenizer.ggml.merges", GgufValue::StringArray(merges));
  w.Set("tokenizer.ggml.eos_token_id", GgufValue::Uint32(static_cast<uint32_t>(tokens.size() - 1)));
  return w;
}

Result<std::unique_ptr<Tokenizer>> Load(const GgufWriter& w) {
  const std::vector<std::byte> bytes = w.ToBytes();
  auto file = GgufFile::FromBytes(bytes, "toy.gguf");
  if (!file.ok()) return file.status();
  return Tokenizer::FromGguf(**file);  // the tokenizer copies what it needs; the file may go
}

// Expects a load error whose message contains every one of `needles`.
void ExpectLoadError(const GgufWriter& w, std::vector<std::string> needles) {
  auto t = Load(w);
  ASSERT_FALSE(t.ok()) << "loaded a malformed vocabulary";
  for (const auto& needle : needles) {
    EXPECT_NE(t.status().message().find(needle), std::string::npos)
        << "message '" << t.status().message() << "' lacks '" << needle << "'";
  }
}

TEST(MalformedVocabTest, ToyVocabulariesLoad) {
  ASSERT_TRUE(Load(SpmWriter()).ok()) << Load(SpmWriter()).status().ToString();
  ASSERT_TRUE(Load(BpeWriter()).ok()) << Load(BpeWriter()).status().ToString();
}

TEST(MalformedVocabTest, MissingTokens) {
  GgufWriter w;
  w.Set("tokenizer.ggml.model", GgufValue::String("llama"));
  ExpectLoadError(w, {"tokenizer.ggml.tokens"});
}

TEST(MalformedVocabTest, MissingModel) {
  GgufWriter w;
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray({"a", "b"}));
  ExpectLoadError(w, {"tokenizer.ggml.model"});
}

TEST(MalformedVocabTest, EmptyTokens) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray({}));
  ExpectLoadError(w, {"tokenizer.ggml.tokens", "empty"});
}

TEST(MalformedVocabTest, DuplicatePiece) {
  SpmSpec spec;
  spec.pieces[3] = "h";  // "h" twice
  ExpectLoadError(SpmWriter(spec), {"twice", "'h'"});
}

TEST(MalformedVocabTest, WrongLengthArrays) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.token_type", GgufValue::Int32Array({1, 2, 3}));
  ExpectLoadError(w, {"tokenizer.ggml.token_type", "3 entries"});
  GgufWriter w2 = SpmWriter();
  w2.Set("tokenizer.ggml.scores", GgufValue::Float32Array({0.5f}));
  ExpectLoadError(w2, {"tokenizer.ggml.scores", "1 entries"});
}

TEST(MalformedVocabTest, WrongArrayTypes) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.scores", GgufValue::StringArray({"x"}));
  ExpectLoadError(w, {"tokenizer.ggml.scores"});
  GgufWriter w2 = SpmWriter();
  w2.Set("tokenizer.ggml.tokens", GgufValue::Int32Array({1, 2}));
  ExpectLoadError(w2, {"tokenizer.ggml.tokens"});
}

TEST(MalformedVocabTest, BadTokenType) {
  GgufWriter w = SpmWriter();
  std::vector<int32_t> types(3 + 256 + SpmSpec().pieces.size(), 1);
  types[7] = 42;
  w.Set("tokenizer.ggml.token_type", GgufValue::Int32Array(types));
  ExpectLoadError(w, {"token_type[7] = 42"});
}

TEST(MalformedVocabTest, SpecialIdOutOfRange) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.eos_token_id", GgufValue::Uint32(100000));
  ExpectLoadError(w, {"tokenizer.ggml.eos_token_id", "100000", "out of range"});
  GgufWriter w2 = SpmWriter();
  w2.Set("tokenizer.ggml.bos_token_id", GgufValue::String("one"));
  ExpectLoadError(w2, {"tokenizer.ggml.bos_token_id"});
}

TEST(MalformedVocabTest, MergesNamingUnknownPieces) {
  ExpectLoadError(BpeWriter({"h e", "x yz"}), {"merges[1]", "'yz'"});
  ExpectLoadError(BpeWriter({"h e", "e h"}), {"merges[1]", "'eh'"});  // result not in the vocabulary
  ExpectLoadError(BpeWriter({"noseparator"}), {"merges[0]", "two pieces"});
  GgufWriter w = BpeWriter();
  w.Set("tokenizer.ggml.merges", GgufValue::StringArray({}));
  EXPECT_TRUE(Load(w).ok());  // no merges: every byte is its own token
}

TEST(MalformedVocabTest, MissingMerges) {
  GgufWriter w2;
  w2.Set("tokenizer.ggml.model", GgufValue::String("gpt2"));
  w2.Set("tokenizer.ggml.tokens", GgufValue::StringArray({"a", "b"}));
  ExpectLoadError(w2, {"tokenizer.ggml.merges"});
}

TEST(MalformedVocabTest, UnsupportedModelAndPreTokenizer) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.model", GgufValue::String("t5"));
  auto t = Load(w);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(t.status().message().find("Unigram"), std::string::npos);
  GgufWriter w2 = BpeWriter();
  w2.Set("tokenizer.ggml.pre", GgufValue::String("no-such-pre"));
  auto t2 = Load(w2);
  ASSERT_FALSE(t2.ok());
  EXPECT_EQ(t2.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(t2.status().message().find("no-such-pre"), std::string::npos);
}

TEST(MalformedVocabTest, AddBosWithoutBos) {
  GgufWriter w = BpeWriter();
  w.Set("tokenizer.ggml.add_bos_token", GgufValue::Bool(true));
  ExpectLoadError(w, {"add_bos_token", "no BOS"});
}

TEST(ToyVocabTest, SentencePieceMergesByScoreAndFallsBackToBytes) {
  auto t = Load(SpmWriter());
  ASSERT_TRUE(t.ok());
  const Tokenizer& tok = **t;
  auto id = [&](const std::string& piece) { return tok.FindToken(piece); };
  auto ids = tok.Encode("hello", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, std::vector<int32_t>({id("▁hello")}));
  // "hellow": ▁hello + w; "x" has no piece: byte fallback <0x78>.
  ids = tok.Encode("hellow x", true, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, std::vector<int32_t>({1, id("▁hello"), id("w"), id("▁"), 3 + 'x'}));
  EXPECT_EQ(tok.Decode(*ids), "<s>hellow x");
  EXPECT_EQ(tok.Decode(*ids, /*skip_special=*/true), "hellow x");
  // A character outside the vocabulary becomes its UTF-8 bytes.
  ids = tok.Encode("é", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, std::vector<int32_t>({id("▁"), 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tok.Decode(*ids), "é");
}

TEST(ToyVocabTest, SentencePiecePieceSpanningWordsIsFound) {
  // "o▁w" spans a word boundary, so the encoder must not split the text into words for this vocabulary.
  SpmSpec spec;
  spec.pieces.push_back("▁w");
  spec.scores.push_back(-1.5);
  spec.pieces.push_back("o▁w");
  spec.scores.push_back(10);
  auto t = Load(SpmWriter(spec));
  ASSERT_TRUE(t.ok());
  auto ids = (*t)->Encode("hello world", false, false);
  ASSERT_TRUE(ids.ok());
  const std::vector<int32_t> expected = {
      (*t)->FindToken("▁he"), (*t)->FindToken("ll"), (*t)->FindToken("o▁w"), (*t)->FindToken("o"),
      (*t)->FindToken("r"),   (*t)->FindToken("l"),  (*t)->FindToken("d")};
  EXPECT_EQ(*ids, expected);
  EXPECT_EQ((*t)->Decode(*ids), "hello world");
}

TEST(ToyVocabTest, SentencePieceWithoutByteTokensUsesUnknown) {
  GgufWriter w;
  w.Set("tokenizer.ggml.model", GgufValue::String("llama"));
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray({"<unk>", "<s>", "</s>", "▁", "a"}));
  w.Set("tokenizer.ggml.token_type", GgufValue::Int32Array({2, 3, 3, 1, 1}));
  auto t = Load(w);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto ids = (*t)->Encode("ab", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, std::vector<int32_t>({3, 4, 0}));
}

TEST(ToyVocabTest, ByteLevelBpeMergesByRank) {
  auto t = Load(BpeWriter());
  ASSERT_TRUE(t.ok());
  const Tokenizer& tok = **t;
  auto ids = tok.Encode("hello world", false, false);
  ASSERT_TRUE(ids.ok());
  std::vector<int32_t> expected = {tok.FindToken("hello"), tok.FindToken("Ġw"), 'o', 'r', 'l', 'd'};
  EXPECT_EQ(*ids, expected);
  EXPECT_EQ(tok.Decode(*ids), "hello world");
  // Control token text is plain text unless asked.
  ids = tok.Encode("<|endoftext|>", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_GT(ids->size(), 1u);
  ids = tok.Encode("<|endoftext|>", false, true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, std::vector<int32_t>({tok.eos_id()}));
  EXPECT_TRUE(tok.IsEndOfGeneration(tok.eos_id()));
  EXPECT_TRUE(tok.IsSpecial(tok.eos_id()));
  EXPECT_FALSE(tok.add_bos());
  EXPECT_EQ(tok.bos_id(), -1);
}

}  // namespace
}  // namespace lockstep
