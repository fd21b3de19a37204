// DeepSeek files as llama.cpp's converter writes them since its MLA rework (model/architectures.h,
// model/model_weights.h, model/mla.h): attn_kv_b split into attn_k_b (each head's k_nope rows transposed)
// and attn_v_b, head_count_kv 1, key_length / value_length the latent cache's widths and the heads' widths
// in key_length_mla / value_length_mla. make-model's tiny-deepseek3-split holds tiny-deepseek3's weights in
// that form; neither peer runs it (ik_llama.cpp 8337e4cd3 converts only DeepSeek's own widths, 576 / 512 /
// 64 rope dims; llama.cpp c392e50 predates the split), so the fused twin, checked against ik_llama.cpp
// (peer_golden_test.cc), is its reference here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "model/model.h"
#include "model/model_config.h"
#include "model/test_models.h"
#include "tensor/thread_pool.h"

namespace lockstep::testing {
namespace {

// The split twin's f32 file with the edits, loaded: the first error of config, weights or model.
Status LoadSplitEdited(const FileEdit& edit) {
  auto file = EditedFile(TinyModelPath("tiny-deepseek3-split", TensorType::kF32), edit);
  if (!file.ok()) return file.status();
  auto model = Model::Load(*file, {.pack_weights = false});
  return model.ok() ? Status::Ok() : model.status();
}

TEST(SplitLatentAttention, MakeModelWritesTheConvertersLayout) {
  auto fused = GgufFile::Open(TinyModelPath("tiny-deepseek3", TensorType::kF32));
  auto split = GgufFile::Open(TinyModelPath("tiny-deepseek3-split", TensorType::kF32));
  ASSERT_TRUE(fused.ok() && split.ok());
  const GgufFile& f = **split;
  EXPECT_EQ(*f.GetInt("deepseek2.attention.head_count_kv"), 1);
  EXPECT_EQ(*f.GetInt("deepseek2.attention.key_length"), 64 + 16);  // kv_lora_rank + rope dims
  EXPECT_EQ(*f.GetInt("deepseek2.attention.value_length"), 64);
  EXPECT_EQ(*f.GetInt("deepseek2.attention.key_length_mla"), 48);
  EXPECT_EQ(*f.GetInt("deepseek2.attention.value_length_mla"), 32);
  EXPECT_EQ(f.FindTensor("blk.0.attn_kv_b.weight"), nullptr);
  const GgufTensorInfo* k_b = f.FindTensor("blk.2.attn_k_b.weight");
  const GgufTensorInfo* v_b = f.FindTensor("blk.2.attn_v_b.weight");
  const GgufTensorInfo* kv_b = (*fused)->FindTensor("blk.2.attn_kv_b.weight");
  ASSERT_TRUE(k_b != nullptr && v_b != nullptr && kv_b != nullptr);
  EXPECT_EQ(k_b->dims, (std::vector<int64_t>{32, 64, 8}));  // [nope, kv_lora_rank, n_head]
  EXPECT_EQ(v_b->dims, (std::vector<int64_t>{64, 32, 8}));  // [kv_lora_rank, value, n_head]
  // attn_kv_b's rows: per head 32 k_nope rows, then 32 value rows, each of 64 latent weights.
  auto at = [](const GgufTensorInfo* t, int64_t index) {
    float x;
    std::memcpy(&x, t->data + size_t(index) * sizeof(float), sizeof(float));
    return x;
  };
  for (int64_t h : {0, 5, 7}) {
    for (int64_t r : {0, 17, 63}) {
      for (int64_t i : {0, 9, 31}) {
        EXPECT_EQ(at(k_b, (h * 64 + r) * 32 + i), at(kv_b, (h * 64 + i) * 64 + r))
            << h << " " << r << " " << i;
        EXPECT_EQ(at(v_b, (h * 32 + i) * 64 + r), at(kv_b, (h * 64 + 32 + i) * 64 + r))
            << h << " " << r << " " << i;
      }
    }
  }
}

TEST(SplitLatentAttention, ConfigHoldsTheHeadsWidths) {
  LoadedModel split = LoadModelOrDie(TinyModelPath("tiny-deepseek3-split", TensorType::kF32));
  LoadedModel fused = LoadModelOrDie(TinyModelPath("tiny-deepseek3", TensorType::kF32));
  const ModelConfig& c = split.model->config();
  EXPECT_TRUE(c.kv_b_split);
  EXPECT_FALSE(fused.model->config().kv_b_split);
  EXPECT_EQ(c.n_head_kv, 8);
  EXPECT_EQ(c.head_dim, 48);
  EXPECT_EQ(c.value_dim, 32);
  EXPECT_EQ(c.kv_lora_rank, 64);
  EXPECT_EQ(c.attention_scale, fused.model->config().attention_scale);  // YaRN's mscale^2 / sqrt(48)
  EXPECT_EQ(c.Summary(), fused.model->config().Summary());
}

// attn_k_b's transposed rows are attn_kv_b's k_nope rows and attn_v_b's its value rows: the same products,
// so the same logits to the bit for weights that move unchanged (f32, f16, bf16). Quantized files differ
// from their twins (the blocks run along other dims: 0.13 in 1.2 at q8_0): the reference test checks them.
TEST(SplitLatentAttention, LogitsAreTheFusedTwinsBitForBit) {
  ThreadPool pool(2);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back(int32_t((i * 37 + 11) % 150));
  for (const char* type : {"f32", "f16", "bf16"}) {
    LoadedModel split = LoadModelOrDie(TinyModelPath("tiny-deepseek3-split", type));
    LoadedModel fused = LoadModelOrDie(TinyModelPath("tiny-deepseek3", type));
    const auto a = RunSequence(*split.model, tokens, 7, KvDtype::kF16, pool);
    const auto b = RunSequence(*fused.model, tokens, 7, KvDtype::kF16, pool);
    ASSERT_EQ(a.size(), b.size());
    double max_diff = 0, max_logit = 0;
    for (size_t t = 0; t < a.size(); ++t) {
      for (size_t v = 0; v < a[t].size(); ++v) {
        max_diff = std::max(max_diff, std::abs(double(a[t][v]) - double(b[t][v])));
        max_logit = std::max(max_logit, std::abs(double(b[t][v])));
      }
    }
    std::printf("[ split    ] %s: max |split - fused| = %.3g (max |logit| %.3g)\n", type, max_diff,
                max_logit);
    EXPECT_GT(max_logit, 0.0);
    EXPECT_EQ(max_diff, 0.0) << type;
  }
}

TEST(SplitLatentAttention, InconsistentSplitFilesAreRefusedClearly) {
  struct Case {
    FileEdit edit;
    const char* message;
  };
  const Case cases[] = {
      {FileEdit{.drop_keys = {"deepseek2.attention.key_length_mla"}},
       "deepseek2 with attn_k_b / attn_v_b needs 'deepseek2.attention.key_length_mla' and "
       "'deepseek2.attention.value_length_mla'"},
      {FileEdit{.drop_keys = {"deepseek2.attention.value_length_mla"}},
       "key 'deepseek2.attention.value_length_mla' is missing"},
      {FileEdit{.set_keys = {{"deepseek2.attention.head_count_kv", GgufValue::Uint32(8)}}},
       "needs attention.head_count_kv = 1, key_length = kv_lora_rank + rope.dimension_count (80) and "
       "value_length = kv_lora_rank (64); the file has 8, 80 and 64"},
      {FileEdit{.set_keys = {{"deepseek2.attention.key_length_mla", GgufValue::Uint32(16)}}},
       "'deepseek2.attention.key_length_mla' = 16 must exceed rope.dimension_count (16)"},
      {FileEdit{.drop_tensors = {"blk.1.attn_v_b.weight"}}, "missing 1: blk.1.attn_v_b.weight"},
      {FileEdit{.reshape_tensor = "blk.3.attn_k_b.weight"},
       "blk.3.attn_k_b.weight has shape [64, 32, 8], expected [32, 64, 8]"},
  };
  for (const Case& c : cases) {
    const Status s = LoadSplitEdited(c.edit);
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace lockstep::testing
