// DeepSeek's multi-head latent attention (model/mla.h): the absorbed form, which caches each row's latent
// once, against the decompressed one (ModelLoadOptions::decompressed_mla); and files as llama.cpp's converter
// writes them since its MLA rework (model/architectures.h, model/model_weights.h): attn_kv_b split into
// attn_k_b (each head's k_nope rows transposed) and attn_v_b, head_count_kv 1, key_length / value_length the
// latent cache's widths and the heads' widths in key_length_mla / value_length_mla. make-model's
// tiny-deepseek3-split holds tiny-deepseek3's weights in that form; neither peer runs it (ik_llama.cpp
// 8337e4cd3 converts only DeepSeek's own widths, 576 / 512 / 64 rope dims; llama.cpp c392e50 predates the
// split), so the fused twin, checked against ik_llama.cpp (peer_golden_test.cc), is its reference here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// The model of `name`'s file of `type` in the absorbed form (the default) or the decompressed one.
LoadedModel LoadForm(const std::string& name, const char* type, bool decompressed) {
  auto opened = GgufFile::Open(TinyModelPath(name, type));
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  std::shared_ptr<const GgufFile> file = std::move(*opened);
  auto model = Model::Load(file, {.decompressed_mla = decompressed});
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return {file, std::move(*model)};
}

// The latent form's cache: one KV head of rope dims + latent (16 + 64) with the latent (64) as its value,
// instead of 8 heads of 48-dim keys and 32-dim values: 144 floats a position and layer instead of 640.
TEST(AbsorbedLatentAttention, CachesOneLatentHead) {
  LoadedModel absorbed = LoadForm("tiny-deepseek2", "f32", false);
  LoadedModel decompressed = LoadForm("tiny-deepseek2", "f32", true);
  EXPECT_TRUE(absorbed.model->config().mla_latent_cache);
  EXPECT_FALSE(decompressed.model->config().mla_latent_cache);
  const KvLayout a = absorbed.model->MakeKvLayout(KvDtype::kF16, 16);
  const KvLayout d = decompressed.model->MakeKvLayout(KvDtype::kF16, 16);
  EXPECT_EQ(a.n_layer, 27);
  EXPECT_EQ(a.n_kv_head, 1);
  EXPECT_EQ(a.head_dim, 16 + 64);
  EXPECT_EQ(a.ValueDim(), 64);
  EXPECT_EQ(d.n_kv_head, 8);
  EXPECT_EQ(d.head_dim, 48);
  EXPECT_EQ(d.ValueDim(), 32);
  EXPECT_EQ(a.BlockBytes(), size_t(27 * (80 + 64) * 16 * 2));
  EXPECT_EQ(d.BlockBytes(), size_t(27 * 8 * (48 + 32) * 16 * 2));
  std::printf("[ kv bytes ] tiny-deepseek2 f16: %zu a position absorbed, %zu decompressed\n",
              a.BlockBytes() / 16, d.BlockBytes() / 16);
  // The heads' widths stay the config's (the weights' shapes and the attention scale).
  EXPECT_EQ(absorbed.model->config().head_dim, 48);
  EXPECT_EQ(absorbed.model->config().attention_scale, decompressed.model->config().attention_scale);
  // And the split files' layout is the same as their fused twins'.
  LoadedModel split = LoadForm("tiny-deepseek3-split", "f32", false);
  LoadedModel fused = LoadForm("tiny-deepseek3", "f32", false);
  const KvLayout s = split.model->MakeKvLayout(KvDtype::kF16, 16);
  EXPECT_EQ(s.n_kv_head, 1);
  EXPECT_EQ(s.head_dim, 80);
  EXPECT_EQ(s.ValueDim(), 64);
  EXPECT_EQ(s.BlockBytes(), fused.model->MakeKvLayout(KvDtype::kF16, 16).BlockBytes());
}

// The absorbed form computes the decompressed form's attention in another order of sums (q . W_kb l as
// (W_kb^T q) . l, W_vb applied after the weighted sum): in f32, logits agree to float rounding (6e-7 of the
// largest), greedy tokens alike. (Quantized weights meet 8-bit activations at other points, q_nope and the
// attention output instead of the latent, so there the two forms are two roundings of the model: 3-10 % of
// the largest logit at q8_0; ReferenceTest holds both to the reference forward pass.)
TEST(AbsorbedLatentAttention, LogitsMatchTheDecompressedForm) {
  ThreadPool pool(2);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 300; ++i) tokens.push_back(int32_t((i * 37 + 11) % 150));
  struct Case {
    const char* name;
    const char* type;
    double tolerance;  // of max |absorbed - decompressed| / max |logit|
  };
  for (const Case& c : {Case{"tiny-deepseek2", "f32", 5e-6}, Case{"tiny-deepseek3", "f32", 5e-6},
                        Case{"tiny-deepseek3-split", "f32", 5e-6}}) {
    LoadedModel absorbed = LoadForm(c.name, c.type, false);
    LoadedModel decompressed = LoadForm(c.name, c.type, true);
    const auto a = RunSequence(*absorbed.model, tokens, 64, KvDtype::kF32, pool);
    const auto b = RunSequence(*decompressed.model, tokens, 64, KvDtype::kF32, pool);
    ASSERT_EQ(a.size(), b.size());
    double max_diff = 0, max_logit = 0;
    int same_argmax = 0;
    for (size_t t = 0; t < a.size(); ++t) {
      for (size_t v = 0; v < a[t].size(); ++v) {
        max_diff = std::max(max_diff, std::abs(double(a[t][v]) - double(b[t][v])));
        max_logit = std::max(max_logit, std::abs(double(b[t][v])));
      }
      same_argmax += std::max_element(a[t].begin(), a[t].end()) - a[t].begin() ==
                     std::max_element(b[t].begin(), b[t].end()) - b[t].begin();
    }
    std::printf(
        "[ absorbed ] %s %s: max |absorbed - decompressed| = %.3g (max |logit| %.3g), argmax %d/%zu\n",
        c.name, c.type, max_diff, max_logit, same_argmax, a.size());
    EXPECT_GT(max_logit, 0.0);
    EXPECT_LE(max_diff, c.tolerance * max_logit) << c.name << " " << c.type;
    EXPECT_GE(same_argmax, int(a.size()) - 3) << c.name << " " << c.type;
  }
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
