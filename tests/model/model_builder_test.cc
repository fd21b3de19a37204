// make-model's builder: files load in our reader/model/tokenizer, are deterministic per seed, follow the
// --vocab-from vocabulary, carry the llama3 rope factors, and reject impossible type/shape combinations.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "model/model_config.h"
#include "model/test_models.h"
#include "testing/testdata.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ModelBuilder, BuiltinVocabularyLoadsInTheTokenizer) {
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny", TensorType::kQ8_0));
  auto tok = Tokenizer::FromGguf(*m.file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->vocab_size(), m.model->config().n_vocab);
  EXPECT_EQ((*tok)->model_name(), "gpt2");
  const std::string text = "the cat and the hat\nsings!";
  auto ids = (*tok)->Encode(text, false, false);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_LT(ids->size(), text.size());  // merges apply
  EXPECT_EQ((*tok)->Decode(*ids), text);
  EXPECT_TRUE((*tok)->IsEndOfGeneration((*tok)->eos_id()));
}

TEST(ModelBuilder, SameSeedSameFileOtherSeedDifferent) {
  const std::string dir = ScratchDir("builder");
  MakeModelOptions o;
  o.shape = *FindModelShape("tiny-qwen2");
  o.type = TensorType::kQ4_0;
  o.seed = 5;
  ASSERT_TRUE(WriteRandomModel(o, dir + "/a.gguf").ok());
  ASSERT_TRUE(WriteRandomModel(o, dir + "/b.gguf").ok());
  o.seed = 6;
  ASSERT_TRUE(WriteRandomModel(o, dir + "/c.gguf").ok());
  EXPECT_EQ(ReadAll(dir + "/a.gguf"), ReadAll(dir + "/b.gguf"));
  EXPECT_NE(ReadAll(dir + "/a.gguf"), ReadAll(dir + "/c.gguf"));
}

TEST(ModelBuilder, VocabFromSetsVocabularyAndShapes) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string dir = ScratchDir("builder");
  MakeModelOptions o;
  o.shape = *FindModelShape("tiny");
  o.type = TensorType::kF16;
  o.vocab_from = TestDataPath("vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(WriteRandomModel(o, dir + "/m.gguf").ok());
  LoadedModel m = LoadModelOrDie(dir + "/m.gguf");
  EXPECT_EQ(m.model->config().n_vocab, 32000);
  auto tok = Tokenizer::FromGguf(*m.file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->vocab_size(), 32000);
  EXPECT_EQ(*m.file->GetInt("llama.vocab_size"), 32000);
  EXPECT_EQ(m.file->FindTensor("token_embd.weight")->type, TensorType::kF16);
  EXPECT_EQ(m.file->FindTensor("output_norm.weight")->type, TensorType::kF32);
}

TEST(ModelBuilder, KnownShapes) {
  auto s = FindModelShape("smollm2-135m");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->n_embd, 576);
  EXPECT_EQ(s->n_layer, 30);
  EXPECT_EQ(s->n_head_kv, 3);
  auto q = FindModelShape("qwen2-0.5b");
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->qkv_bias);
  EXPECT_EQ(q->architecture, "qwen2");
  auto l = FindModelShape("llama-1b");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->llama3_factor, 32);
  auto bad = FindModelShape("gpt-5");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("smollm2-135m"), std::string::npos);
}

TEST(ModelBuilder, Llama3ScalingIsWrittenAsRopeFreqs) {
  // A small llama-shaped model with llama3 scaling: the rope_freqs tensor is read back into the config.
  const std::string dir = ScratchDir("builder");
  MakeModelOptions o;
  o.shape = *FindModelShape("tiny");
  o.shape.llama3_factor = 8;
  o.shape.rope_freq_base = 500000;
  ASSERT_TRUE(WriteRandomModel(o, dir + "/m.gguf").ok());
  LoadedModel m = LoadModelOrDie(dir + "/m.gguf");
  const ModelConfig& c = m.model->config();
  EXPECT_EQ(c.rope_freq_factors, Llama3RopeFreqFactors(c.rope_dim, 500000, 8, 1, 4, 8192));
}

TEST(ModelBuilder, RejectsRowsThatAreNotWholeBlocks) {
  MakeModelOptions o;
  o.shape = *FindModelShape("tiny");
  o.shape.n_ff = 100;  // not a multiple of 32
  o.type = TensorType::kQ8_0;
  const Status s = WriteRandomModel(o, ScratchDir("builder") + "/x.gguf");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("100"), std::string::npos) << s.message();
}

TEST(ModelBuilder, WeightTypeNames) {
  MakeModelOptions o;
  ASSERT_TRUE(SetWeightTypes("Q6_K", o).ok());
  EXPECT_EQ(o.type, TensorType::kQ6_K);
  EXPECT_FALSE(o.q4_k_m);
  ASSERT_TRUE(SetWeightTypes("q4_k_m", o).ok());
  EXPECT_EQ(o.type, TensorType::kQ4_K);
  EXPECT_TRUE(o.q4_k_m);
  for (const std::string bad : {"q5_k", "q8_K", "iq2_xxs", ""}) {  // readable types make-model cannot write
    const Status s = SetWeightTypes(bad, o);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("q4_k_m"), std::string::npos) << s.message();
  }
}

TEST(ModelBuilder, Q4KMGivesSixBitsToTheOutputAndToSomeLayersVAndDown) {
  // llama.cpp's pattern for 16 layers (Llama 3.2 1B): the first and last two and every third between.
  std::vector<int64_t> more;
  for (int64_t l = 0; l < 16; ++l) {
    if (UsesMoreBits(l, 16)) more.push_back(l);
  }
  EXPECT_EQ(more, (std::vector<int64_t>{0, 1, 4, 7, 10, 13, 14, 15}));

  const std::string dir = ScratchDir("builder");
  MakeModelOptions o;
  o.shape = *FindModelShape("tiny-256");  // 2 layers: layer 1 is the last eighth
  ASSERT_TRUE(SetWeightTypes("q4_k_m", o).ok());
  ASSERT_TRUE(WriteRandomModel(o, dir + "/m.gguf").ok());
  LoadedModel m = LoadModelOrDie(dir + "/m.gguf");
  auto type = [&](const std::string& name) { return m.file->FindTensor(name)->type; };
  EXPECT_EQ(type("output.weight"), TensorType::kQ6_K);
  EXPECT_EQ(type("token_embd.weight"), TensorType::kQ4_K);
  EXPECT_EQ(type("blk.0.attn_v.weight"), TensorType::kQ4_K);
  EXPECT_EQ(type("blk.0.ffn_down.weight"), TensorType::kQ4_K);
  EXPECT_EQ(type("blk.1.attn_v.weight"), TensorType::kQ6_K);
  EXPECT_EQ(type("blk.1.ffn_down.weight"), TensorType::kQ6_K);
  EXPECT_EQ(type("blk.1.attn_q.weight"), TensorType::kQ4_K);
  EXPECT_EQ(type("blk.1.ffn_norm.weight"), TensorType::kF32);
  EXPECT_EQ(*m.file->GetInt("general.file_type"), 15);  // LLAMA_FTYPE_MOSTLY_Q4_K_M

  // Tied embeddings: token_embd is the output matrix and gets its six bits.
  o.shape.tied_embeddings = true;
  ASSERT_TRUE(WriteRandomModel(o, dir + "/tied.gguf").ok());
  LoadedModel tied = LoadModelOrDie(dir + "/tied.gguf");
  EXPECT_EQ(tied.file->FindTensor("token_embd.weight")->type, TensorType::kQ6_K);
}

TEST(ModelBuilder, KQuantRowsThatDoNotFitFallBackToQ8_0) {
  const std::string dir = ScratchDir("builder");
  MakeModelOptions o;
  o.shape = *FindModelShape("tiny");  // rows of 64 and 96 elements
  o.type = TensorType::kQ4_K;
  ASSERT_TRUE(WriteRandomModel(o, dir + "/m.gguf").ok());
  LoadedModel m = LoadModelOrDie(dir + "/m.gguf");
  for (const GgufTensorInfo& t : m.file->tensors()) {
    EXPECT_EQ(t.type, t.dims.size() == 2 ? TensorType::kQ8_0 : TensorType::kF32) << t.name;
  }
  o.shape.n_ff = 100;  // not even the fallback's 32-element blocks fit
  const Status s = WriteRandomModel(o, dir + "/x.gguf");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("q8_0"), std::string::npos) << s.message();
  o.shape.n_ff = 96;
  o.type = TensorType::kQ8_0;
  o.q4_k_m = true;  // the mix is made of q4_K
  EXPECT_FALSE(WriteRandomModel(o, dir + "/y.gguf").ok());
}

}  // namespace
}  // namespace lockstep::testing
