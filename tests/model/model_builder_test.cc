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
  EXPECT_EQ(o.mix, KQuantMix::kNone);
  ASSERT_TRUE(SetWeightTypes("q4_k_m", o).ok());
  EXPECT_EQ(o.type, TensorType::kQ4_K);
  EXPECT_EQ(o.mix, KQuantMix::kQ4KM);
  ASSERT_TRUE(SetWeightTypes("Q5_K_M", o).ok());
  EXPECT_EQ(o.type, TensorType::kQ5_K);
  EXPECT_EQ(o.mix, KQuantMix::kQ5KM);
  ASSERT_TRUE(SetWeightTypes("q5_k", o).ok());
  EXPECT_EQ(o.type, TensorType::kQ5_K);
  EXPECT_EQ(o.mix, KQuantMix::kNone);
  ASSERT_TRUE(SetWeightTypes("Q5_1", o).ok());
  EXPECT_EQ(o.type, TensorType::kQ5_1);
  ASSERT_TRUE(SetWeightTypes("IQ4_XS", o).ok());
  EXPECT_EQ(o.type, TensorType::kIQ4_XS);
  ASSERT_TRUE(SetWeightTypes("iq4_nl", o).ok());
  EXPECT_EQ(o.type, TensorType::kIQ4_NL);
  ASSERT_TRUE(SetWeightTypes("Q3_K", o).ok());
  EXPECT_EQ(o.type, TensorType::kQ3_K);
  ASSERT_TRUE(SetWeightTypes("q2_k", o).ok());
  EXPECT_EQ(o.type, TensorType::kQ2_K);
  for (const std::string bad : {"q4_1", "q8_K", "iq2_xxs", ""}) {  // readable types make-model cannot write
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

// llama.cpp's llama_tensor_get_type for the other mixes (dense, non-Falcon): Q5_K_M as Q4_K_M on a q5_K
// base; Q5_K_S only the output in q6_K; Q4_K_S q5_K for attn_v of the first 4 layers and ffn_down of the
// first eighth.
TEST(ModelBuilder, Q5KMQ5KSAndQ4KSMixes) {
  const std::string dir = ScratchDir("builder");
  MakeModelOptions o;
  o.shape = *FindModelShape("tiny-256");
  o.shape.n_layer = 16;
  struct Expected {
    const char* mix;
    int64_t file_type;
    TensorType base, v0, v2, v5, down0, down2, down5;
  };
  const TensorType k4 = TensorType::kQ4_K, k5 = TensorType::kQ5_K, k6 = TensorType::kQ6_K;
  for (const Expected& e : {Expected{"q5_k_m", 17, k5, k6, k5, k5, k6, k5, k5},
                            Expected{"q5_k_s", 16, k5, k5, k5, k5, k5, k5, k5},
                            Expected{"q4_k_s", 14, k4, k5, k5, k4, k5, k4, k4},
                            Expected{"q4_k_m", 15, k4, k6, k4, k4, k6, k4, k4}}) {
    ASSERT_TRUE(SetWeightTypes(e.mix, o).ok());
    const std::string path = dir + "/" + e.mix + ".gguf";
    ASSERT_TRUE(WriteRandomModel(o, path).ok());
    LoadedModel m = LoadModelOrDie(path);
    auto type = [&](const std::string& name) { return m.file->FindTensor(name)->type; };
    EXPECT_EQ(*m.file->GetInt("general.file_type"), e.file_type) << e.mix;
    EXPECT_EQ(type("output.weight"), k6) << e.mix;
    EXPECT_EQ(type("token_embd.weight"), e.base) << e.mix;
    EXPECT_EQ(type("blk.0.attn_q.weight"), e.base) << e.mix;
    EXPECT_EQ(type("blk.15.attn_output.weight"), e.base) << e.mix;
    // Layers 0 and 1 are the first eighth, 4 is (4 - 2) % 3 == 2; 2, 3 and 5 are neither.
    EXPECT_EQ(type("blk.0.attn_v.weight"), e.v0) << e.mix;
    EXPECT_EQ(type("blk.2.attn_v.weight"), e.v2) << e.mix;
    EXPECT_EQ(type("blk.5.attn_v.weight"), e.v5) << e.mix;
    EXPECT_EQ(type("blk.0.ffn_down.weight"), e.down0) << e.mix;
    EXPECT_EQ(type("blk.2.ffn_down.weight"), e.down2) << e.mix;
    EXPECT_EQ(type("blk.5.ffn_down.weight"), e.down5) << e.mix;
  }
}

// llama.cpp's fallback (llama_tensor_get_type): q4_K -> q5_0, q5_K -> q5_1, q6_K -> q8_0, q2_K, q3_K and
// iq4_xs -> iq4_nl.
TEST(ModelBuilder, KQuantRowsThatDoNotFitFallBackAsLlamaCppDoes) {
  const std::string dir = ScratchDir("builder");
  MakeModelOptions o;
  o.shape = *FindModelShape("tiny");  // rows of 64 and 96 elements
  const std::pair<TensorType, TensorType> fallbacks[] = {
      {TensorType::kQ4_K, TensorType::kQ5_0},   {TensorType::kQ5_K, TensorType::kQ5_1},
      {TensorType::kQ6_K, TensorType::kQ8_0},   {TensorType::kIQ4_XS, TensorType::kIQ4_NL},
      {TensorType::kQ3_K, TensorType::kIQ4_NL}, {TensorType::kQ2_K, TensorType::kIQ4_NL}};
  for (const auto& [type, fallback] : fallbacks) {
    o.type = type;
    const std::string path = dir + "/" + std::string(TensorTypeName(type)) + ".gguf";
    ASSERT_TRUE(WriteRandomModel(o, path).ok());
    LoadedModel m = LoadModelOrDie(path);
    for (const GgufTensorInfo& t : m.file->tensors()) {
      EXPECT_EQ(t.type, t.dims.size() == 2 ? fallback : TensorType::kF32) << t.name;
    }
    if (type == TensorType::kIQ4_XS) {
      EXPECT_EQ(*m.file->GetInt("general.file_type"), 30);  // MOSTLY_IQ4_XS
    }
    if (type == TensorType::kQ3_K) {
      EXPECT_EQ(*m.file->GetInt("general.file_type"), 11);  // MOSTLY_Q3_K_S
    }
    if (type == TensorType::kQ2_K) {
      EXPECT_EQ(*m.file->GetInt("general.file_type"), 10);  // MOSTLY_Q2_K
    }
  }
  // SmolLM2-135M's q4_k_m as llama-quantize writes it: 576-wide rows q5_0 (q4_K) or q8_0 (q6_K), ffn_down
  // (1536 wide) q4_K or q6_K.
  o.shape = *FindModelShape("tiny-smollm2");
  ASSERT_TRUE(SetWeightTypes("q4_k_m", o).ok());
  ASSERT_TRUE(WriteRandomModel(o, dir + "/smollm2.gguf").ok());
  LoadedModel m = LoadModelOrDie(dir + "/smollm2.gguf");
  auto type = [&](const std::string& name) { return m.file->FindTensor(name)->type; };
  EXPECT_EQ(type("token_embd.weight"), TensorType::kQ8_0);  // tied: the output matrix, q6_K
  EXPECT_EQ(type("blk.0.attn_q.weight"), TensorType::kQ5_0);
  EXPECT_EQ(type("blk.0.ffn_up.weight"), TensorType::kQ5_0);
  EXPECT_EQ(type("blk.0.attn_v.weight"), TensorType::kQ5_0);
  EXPECT_EQ(type("blk.0.ffn_down.weight"), TensorType::kQ4_K);
  EXPECT_EQ(type("blk.1.attn_v.weight"), TensorType::kQ8_0);  // layer 1 is the last eighth: q6_K
  EXPECT_EQ(type("blk.1.ffn_down.weight"), TensorType::kQ6_K);
  EXPECT_EQ(*m.file->GetInt("general.file_type"), 15);
  o.shape = *FindModelShape("tiny");
  o.mix = KQuantMix::kNone;
  o.type = TensorType::kQ4_K;
  o.shape.n_ff = 100;  // not even the fallback's 32-element blocks fit
  const Status s = WriteRandomModel(o, dir + "/x.gguf");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("q5_0"), std::string::npos) << s.message();
  o.shape.n_ff = 96;
  o.type = TensorType::kQ8_0;
  o.mix = KQuantMix::kQ4KM;  // the mix is made of q4_K
  EXPECT_FALSE(WriteRandomModel(o, dir + "/y.gguf").ok());
}

}  // namespace
}  // namespace lockstep::testing
