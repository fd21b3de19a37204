// Mixtures of experts (model/moe.h): the configuration of qwen3moe, qwen2moe, deepseek2 and Mixtral-style
// llama files, their experts bound as slices of the 3-D tensors, the routing rule, and clear errors for
// malformed or unsupported expert files. (The forward pass against the reference: reference_test.cc; batch
// invariance: batch_invariance_test.cc.)
#include "model/moe.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/test_models.h"
#include "tensor/thread_pool.h"

namespace lockstep::testing {
namespace {

using Edit = FileEdit;
using Gating = ModelConfig::ExpertGating;

// `shape`'s f32 file with the edits, loaded: the first error of config, weights or model.
Status LoadEdited(const std::string& shape, const Edit& edit) {
  auto file = EditedFile(TinyModelPath(shape, TensorType::kF32), edit);
  if (!file.ok()) return file.status();
  auto model = Model::Load(*file, {.pack_weights = false});
  return model.ok() ? Status::Ok() : model.status();
}

// The message of LoadEdited's error, which must be one.
std::string Error(const std::string& shape, const Edit& edit) {
  const Status s = LoadEdited(shape, edit);
  EXPECT_FALSE(s.ok());
  return s.ToString();
}

Edit SetKey(const std::string& key, GgufValue value) {
  Edit e;
  e.set_keys = {{key, std::move(value)}};
  return e;
}

TEST(MixtureOfExperts, Qwen3MoeConfig) {
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-qwen3moe", TensorType::kF32));
  const ModelConfig& c = m.model->config();
  EXPECT_EQ(c.architecture, "qwen3moe");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.n_expert, 8);
  EXPECT_EQ(c.n_expert_used, 2);
  EXPECT_EQ(c.n_ff_expert, 64);  // expert_feed_forward_length, not the dense feed_forward_length
  EXPECT_EQ(c.n_ff, 512);
  EXPECT_NE(c.Summary().find("2 of 8 experts of width 64"), std::string::npos) << c.Summary();
}

TEST(MixtureOfExperts, MixtralIsLlamaWithExperts) {
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-mixtral", TensorType::kF32));
  const ModelConfig& c = m.model->config();
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.rope_mode, RopeMode::kNormal);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.n_expert, 4);
  EXPECT_EQ(c.n_expert_used, 2);
  EXPECT_EQ(c.n_ff_expert, c.n_ff);  // no expert_feed_forward_length: feed_forward_length
}

TEST(MixtureOfExperts, ExpertsAreSlicesOfThe3dTensors) {
  for (const char* types : {"q8_0", "q4_k_m"}) {
    SCOPED_TRACE(types);
    LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-mixtral", types));
    auto weights = ModelWeights::Bind(*m.file, m.model->config(), -1);
    ASSERT_TRUE(weights.ok()) << weights.status().ToString();
    const LayerWeights& l = weights->layers[2];
    const GgufTensorInfo* gate = m.file->FindTensor("blk.2.ffn_gate_exps.weight");
    const GgufTensorInfo* down = m.file->FindTensor("blk.2.ffn_down_exps.weight");
    ASSERT_TRUE(gate && down);
    ASSERT_EQ(l.expert_gate.size(), 4u);
    ASSERT_EQ(l.expert_down.size(), 4u);
    EXPECT_EQ(l.router.type, TensorType::kF32);
    EXPECT_EQ(l.router.out, 4);
    for (int64_t e = 0; e < 4; ++e) {
      EXPECT_EQ(l.expert_gate[e].type, gate->type);
      EXPECT_EQ(l.expert_gate[e].out, 128);
      EXPECT_EQ(l.expert_gate[e].in, 512);
      EXPECT_EQ(l.expert_gate[e].data, gate->data + e * 128 * RowBytes(gate->type, 512));
      EXPECT_EQ(l.expert_down[e].out, 512);
      EXPECT_EQ(l.expert_down[e].data, down->data + e * 512 * RowBytes(down->type, 128));
    }
    EXPECT_EQ(l.w_gate.data, nullptr);  // no dense FFN
  }
}

TEST(MixtureOfExperts, RoutingTakesTheLargestAndBreaksTiesByIndex) {
  const float logits[] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f, 2.0f};
  int32_t experts[3];
  float weights[3];
  RouteRow(logits, 6, 3, true, experts, weights);
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 3);
  EXPECT_EQ(experts[2], 5);
  EXPECT_FLOAT_EQ(weights[0], 1.0f / 3);
  EXPECT_FLOAT_EQ(weights[0] + weights[1] + weights[2], 1.0f);
  RouteRow(logits, 6, 2, true, experts, weights);  // 2 of 3 equal ones: the lower indices
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 3);
  const float spread[] = {0.0f, std::log(3.0f), -5.0f};
  RouteRow(spread, 3, 2, true, experts, weights);  // softmax over the chosen: 3 : 1
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 0);
  EXPECT_NEAR(weights[0], 0.75f, 1e-6);
  EXPECT_NEAR(weights[1], 0.25f, 1e-6);
  RouteRow(spread, 3, 2, false, experts, weights);  // qwen2moe: the softmax over all three, as it is
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 0);
  const float all = 4.0f + std::exp(-5.0f);
  EXPECT_NEAR(weights[0], 3.0f / all, 1e-6);
  EXPECT_NEAR(weights[1], 1.0f / all, 1e-6);
}

TEST(MixtureOfExperts, Qwen2MoeHasASharedExpertAndUnnormalisedWeights) {
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-qwen2moe", TensorType::kF32));
  const ModelConfig& c = m.model->config();
  EXPECT_EQ(c.architecture, "qwen2moe");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.n_expert, 16);
  EXPECT_EQ(c.n_expert_used, 4);
  EXPECT_EQ(c.n_ff_expert, 64);
  EXPECT_EQ(c.n_ff_shared, 256);
  EXPECT_FALSE(c.expert_weights_norm);
  EXPECT_NE(c.Summary().find("4 of 16 experts of width 64 (weights not renormalised) and a gated shared "
                             "expert of width 256"),
            std::string::npos)
      << c.Summary();
  auto weights = ModelWeights::Bind(*m.file, c, -1);
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  const LayerWeights& l = weights->layers[1];
  EXPECT_EQ(l.shared_gate.out, 1);
  EXPECT_EQ(l.shared_gate.in, 256);
  EXPECT_EQ(l.w_gate.data, m.file->FindTensor("blk.1.ffn_gate_shexp.weight")->data);
  EXPECT_EQ(l.w_down.data, m.file->FindTensor("blk.1.ffn_down_shexp.weight")->data);
  EXPECT_EQ(l.expert_up.size(), 16u);
  // llama.cpp's defaults when the widths are not in the file: experts feed_forward_length /
  // expert_used_count, the shared expert feed_forward_length (named by the tensors they then mismatch).
  Edit defaults;
  defaults.drop_keys = {"qwen2moe.expert_feed_forward_length", "qwen2moe.expert_shared_feed_forward_length"};
  defaults.set_keys = {{"qwen2moe.feed_forward_length", GgufValue::Uint32(512)}};
  const std::string widths = Error("tiny-qwen2moe", defaults);
  EXPECT_NE(widths.find("blk.0.ffn_gate_exps.weight has shape [256, 64, 16], expected [256, 128, 16]"),
            std::string::npos)
      << widths;
  EXPECT_NE(widths.find("blk.0.ffn_gate_shexp.weight has shape [256, 256], expected [256, 512]"),
            std::string::npos)
      << widths;
  // One shared expert is what its graph has; more are another model.
  EXPECT_TRUE(LoadEdited("tiny-qwen2moe", SetKey("qwen2moe.expert_shared_count", GgufValue::Uint32(1))).ok());
  const std::string two =
      Error("tiny-qwen2moe", SetKey("qwen2moe.expert_shared_count", GgufValue::Uint32(2)));
  EXPECT_NE(two.find("unsupported: shared experts ('qwen2moe.expert_shared_count' = 2)"), std::string::npos)
      << two;
  Edit missing;
  missing.drop_tensors = {"blk.1.ffn_gate_inp_shexp.weight", "blk.2.ffn_up_shexp.weight"};
  const std::string gone = Error("tiny-qwen2moe", missing);
  EXPECT_NE(gone.find("missing 2: blk.1.ffn_gate_inp_shexp.weight blk.2.ffn_up_shexp.weight"),
            std::string::npos)
      << gone;
}

// llama.cpp's converter writes the shared expert's gate as HF's [1, n_embd] weight, GGUF dims [n_embd, 1]
// (make-model: [n_embd], as llama.cpp declares it); both load, to the same logits.
// olmoe: whole-width Q/K norms, NeoX pairs, experts as wide as feed_forward_length weighted by their softmax
// over all experts (not renormalised). deepseek (DeepSeek-MoE): a dense first layer, then softmax scores not
// renormalised beside two gated shared experts; expert_weights_scale is not applied (llama.cpp's graph).
TEST(MixtureOfExperts, OlmoeAndDeepseekV1Configs) {
  const ModelConfig olmoe = LoadModelOrDie(TinyModelPath("tiny-olmoe", TensorType::kF32)).model->config();
  EXPECT_EQ(olmoe.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(olmoe.qk_norm && olmoe.qk_norm_whole);
  EXPECT_EQ(olmoe.n_ff_expert, 64);  // feed_forward_length
  EXPECT_EQ(olmoe.expert_gating, ModelConfig::ExpertGating::kLogits);
  EXPECT_FALSE(olmoe.expert_weights_norm);
  EXPECT_EQ(olmoe.n_ff_shared, 0);

  const ModelConfig deepseek =
      LoadModelOrDie(TinyModelPath("tiny-deepseek", TensorType::kF32)).model->config();
  EXPECT_EQ(deepseek.rope_mode, RopeMode::kNormal);
  EXPECT_EQ(deepseek.kv_lora_rank, 0);  // llama's attention
  EXPECT_EQ(deepseek.n_layer_dense_lead, 1);
  EXPECT_EQ(deepseek.n_ff, 256);
  EXPECT_EQ(deepseek.n_ff_expert, 32);
  EXPECT_EQ(deepseek.n_ff_shared, 64);  // 2 shared experts
  EXPECT_FALSE(deepseek.shared_expert_gate);
  EXPECT_EQ(deepseek.expert_gating, ModelConfig::ExpertGating::kSoftmax);
  EXPECT_FALSE(deepseek.expert_weights_norm);
  auto scaled =
      EditedFile(TinyModelPath("tiny-deepseek", TensorType::kF32),
                 FileEdit{{}, {{"deepseek.expert_weights_scale", GgufValue::Float32(16.0f)}}, {}, ""});
  ASSERT_TRUE(scaled.ok()) << scaled.status().ToString();
  auto config = ModelConfig::FromGguf(**scaled);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->expert_weights_scale, 1.0f);
}

TEST(MixtureOfExperts, Qwen2MoeSharedGateMayBeTwoDimensional) {
  auto file = GgufFile::Open(TinyModelPath("tiny-qwen2moe", TensorType::kF32));
  ASSERT_TRUE(file.ok());
  GgufWriter w;
  for (const auto& [k, v] : (*file)->metadata()) w.Set(k, v);
  for (const GgufTensorInfo& t : (*file)->tensors()) {
    std::vector<int64_t> dims = t.dims;
    if (t.name.find("ffn_gate_inp_shexp") != std::string::npos) dims.push_back(1);
    ASSERT_TRUE(w.AddTensor(t.name, t.type, dims, {t.data, t.size_bytes}).ok());
  }
  auto two_d = GgufFile::FromBytes(w.ToBytes(), "qwen2moe-2d-gate.gguf");
  ASSERT_TRUE(two_d.ok());
  EXPECT_EQ((*two_d)->FindTensor("blk.0.ffn_gate_inp_shexp.weight")->dims, (std::vector<int64_t>{256, 1}));
  std::shared_ptr<const GgufFile> shared(std::move(two_d).value());
  auto model = Model::Load(shared, {.pack_weights = false});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  LoadedModel one_d = LoadModelOrDie(TinyModelPath("tiny-qwen2moe", TensorType::kF32));
  ThreadPool pool(1);
  const std::vector<int32_t> tokens = {3, 1, 4, 1, 5};
  EXPECT_EQ(RunSequence(**model, tokens, 5, KvDtype::kF32, pool),
            RunSequence(*one_d.model, tokens, 5, KvDtype::kF32, pool));
}

TEST(MixtureOfExperts, MalformedExpertKeysNameTheKey) {
  struct KeyCase {
    const char* shape;
    const char* key;
    int64_t value;  // -1: the key dropped
    const char* error;
  };
  const KeyCase cases[] = {
      {"tiny-qwen3moe", "qwen3moe.expert_used_count", -1, "key 'qwen3moe.expert_used_count' is missing"},
      {"tiny-qwen3moe", "qwen3moe.expert_used_count", 9,
       "'qwen3moe.expert_used_count' = 9 is out of range (1..qwen3moe.expert_count = 8)"},
      {"tiny-qwen3moe", "qwen3moe.expert_used_count", 0, "expert_used_count' = 0 is out of range"},
      {"tiny-qwen3moe", "qwen3moe.expert_count", 0, "'qwen3moe.expert_count' = 0 is out of range"},
      {"tiny-qwen3moe", "qwen3moe.expert_count", 100000, "is out of range (1..512)"},
      {"tiny-qwen3moe", "qwen3moe.expert_count", -1, "the key is missing"},
      {"tiny-qwen3moe", "qwen3moe.expert_feed_forward_length", 0,
       "'qwen3moe.expert_feed_forward_length' = 0 is out of range"},
      {"tiny-mixtral", "llama.expert_shared_count", 1,
       "unsupported: shared experts ('llama.expert_shared_count' = 1)"},
      {"tiny-qwen3moe", "qwen3moe.expert_gating_func", 2, "'qwen3moe.expert_gating_func' = 2"},
  };
  for (const KeyCase& c : cases) {
    SCOPED_TRACE(std::string(c.key) + " = " + std::to_string(c.value));
    Edit edit;
    if (c.value < 0) {
      edit.drop_keys = {c.key};
    } else {
      edit.set_keys = {{c.key, GgufValue::Uint32(uint32_t(c.value))}};
    }
    const std::string error = Error(c.shape, edit);
    EXPECT_NE(error.find(c.error), std::string::npos) << error;
  }
  EXPECT_TRUE(LoadEdited("tiny-qwen3moe", SetKey("qwen3moe.expert_gating_func", GgufValue::Uint32(1))).ok());
}

TEST(MixtureOfExperts, MalformedExpertTensorsAreNamed) {
  Edit missing;
  missing.drop_tensors = {"blk.1.ffn_down_exps.weight", "blk.3.ffn_gate_inp.weight"};
  const std::string m = Error("tiny-qwen3moe", missing);
  EXPECT_NE(m.find("missing 2: blk.1.ffn_down_exps.weight blk.3.ffn_gate_inp.weight"), std::string::npos)
      << m;
  // Fewer experts in the key than in the tensors: every expert tensor's shape is named.
  const std::string shape = Error("tiny-qwen3moe", SetKey("qwen3moe.expert_count", GgufValue::Uint32(6)));
  EXPECT_NE(shape.find("blk.0.ffn_gate_exps.weight has shape [256, 64, 8], expected [256, 64, 6]"),
            std::string::npos)
      << shape;
  EXPECT_NE(shape.find("blk.0.ffn_gate_inp.weight has shape [256, 8], expected [256, 6]"), std::string::npos)
      << shape;
  // Early Mixtral conversions: one tensor per expert (here one beside the merged ones).
  auto file = GgufFile::Open(TinyModelPath("tiny-mixtral", TensorType::kF32));
  ASSERT_TRUE(file.ok());
  GgufWriter w;
  for (const auto& [k, v] : (*file)->metadata()) w.Set(k, v);
  for (const GgufTensorInfo& t : (*file)->tensors()) {
    ASSERT_TRUE(w.AddTensor(t.name, t.type, t.dims, {t.data, t.size_bytes}).ok());
  }
  const GgufTensorInfo* up = (*file)->FindTensor("blk.0.ffn_up_exps.weight");
  ASSERT_TRUE(w.AddTensor("blk.0.ffn_gate.0.weight", up->type, {up->dims[0], up->dims[1]},
                          {up->data, up->size_bytes / size_t(up->dims[2])})
                  .ok());
  auto old = GgufFile::FromBytes(w.ToBytes(), "old-mixtral.gguf");
  ASSERT_TRUE(old.ok());
  auto r = Model::Load(std::shared_ptr<const GgufFile>(std::move(old).value()), {.pack_weights = false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("experts stored one tensor each (blk.N.ffn_gate.E.weight"),
            std::string::npos)
      << r.status().message();
  // Mixtral's experts are feed_forward_length wide.
  const std::string ff = Error("tiny-mixtral", SetKey("llama.feed_forward_length", GgufValue::Uint32(64)));
  EXPECT_NE(ff.find("blk.0.ffn_down_exps.weight has shape [128, 512, 4], expected [64, 512, 4]"),
            std::string::npos)
      << ff;
}

TEST(MixtureOfExperts, OtherExpertArchitecturesAreRefusedClearly) {
  const std::string llama4 =
      Error("tiny-qwen3moe", SetKey("general.architecture", GgufValue::String("llama4")));
  EXPECT_NE(
      llama4.find("unsupported: mixture of experts ('llama4' needs shared experts and sigmoid routing)"),
      std::string::npos)
      << llama4;
  const std::string phimoe =
      Error("tiny-qwen3moe", SetKey("general.architecture", GgufValue::String("phimoe")));
  EXPECT_NE(phimoe.find("'phimoe' needs sparsemixer routing"), std::string::npos) << phimoe;
  // Experts in an architecture whose graph has none.
  const std::string qwen3 = Error("tiny-qwen3", SetKey("qwen3.expert_count", GgufValue::Uint32(8)));
  EXPECT_NE(qwen3.find("unsupported: mixture of experts ('qwen3', qwen3.expert_count = 8)"),
            std::string::npos)
      << qwen3;
  EXPECT_NE(qwen3.find("runs the experts of llama, qwen3moe,"), std::string::npos) << qwen3;  // the table's
  EXPECT_NE(qwen3.find("olmoe, deepseek (llama: Mixtral) files"), std::string::npos) << qwen3;
  EXPECT_EQ(LoadEdited("tiny-qwen3moe", SetKey("general.architecture", GgufValue::String("llama4"))).code(),
            StatusCode::kUnimplemented);
}

// deepseek2 (model/architectures.h, model/mla.h): a DeepSeek-V2-Lite-shaped file's configuration, its
// routing rule (RouteScoredRow) and clear refusals of what lockstep does not run (values narrower than keys
// in the attention kernels: attention_test.cc).
TEST(Deepseek2, ConfigOfALiteShapedFile) {
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-deepseek2", TensorType::kF32));
  const ModelConfig& c = m.model->config();
  EXPECT_EQ(c.architecture, "deepseek2");
  EXPECT_EQ(c.head_dim, 48);
  EXPECT_EQ(c.value_dim, 32);
  EXPECT_EQ(c.rope_dim, 16);
  EXPECT_EQ(c.kv_lora_rank, 64);
  EXPECT_EQ(c.q_lora_rank, 0);
  EXPECT_EQ(c.att_dim(), 8 * 32);
  EXPECT_EQ(c.n_layer_dense_lead, 1);
  EXPECT_FALSE(c.FeedForwardExperts(0));
  EXPECT_TRUE(c.FeedForwardExperts(1));
  EXPECT_EQ(c.n_ff_shared, 2 * 32);
  EXPECT_FALSE(c.shared_expert_gate);
  EXPECT_EQ(c.expert_gating, Gating::kSoftmax);
  EXPECT_FALSE(c.expert_weights_norm);
  EXPECT_FALSE(c.expert_selection_bias);
  EXPECT_FLOAT_EQ(c.attention_scale, 1.0f / std::sqrt(48.0f));
  EXPECT_NE(
      c.Summary().find("4 of 16 experts of width 32 (weights not renormalised) and shared experts of width "
                       "64, softmax scores x 1, 1 dense layers first, latent attention (rank 64; values 32 "
                       "wide, the latent cached)"),
      std::string::npos)
      << c.Summary();
  const KvLayout kv = m.model->MakeKvLayout(KvDtype::kF16, 16);
  EXPECT_EQ(kv.n_kv_head, 1);  // the absorbed form's latent (model/mla.h)
  EXPECT_EQ(kv.head_dim, 16 + 64);
  EXPECT_EQ(kv.ValueDim(), 64);
}

// The bias chooses the experts, the unbiased scores weigh them; renormalised, then scaled.
TEST(Deepseek2, ScoredRoutingChoosesWithTheBiasAndWeighsWithoutIt) {
  int32_t experts[2];
  float weights[2];
  float sigmoid[] = {0.0f, 1.0f, 2.0f, -1.0f};
  const float bias[] = {0.0f, 0.0f, -1.0f, 2.0f};
  RouteScoredRow(sigmoid, 4, 2, Gating::kSigmoid, bias, {}, false, 1.0f, experts, weights);
  EXPECT_EQ(experts[0], 3);  // 0.27 + 2
  EXPECT_EQ(experts[1], 1);  // 0.73 (expert 2: 0.88 - 1)
  EXPECT_NEAR(weights[0], 1 / (1 + std::exp(1.0)), 1e-6);
  EXPECT_NEAR(weights[1], 1 / (1 + std::exp(-1.0)), 1e-6);
  float again[] = {0.0f, 1.0f, 2.0f, -1.0f};
  RouteScoredRow(again, 4, 2, Gating::kSigmoid, bias, {}, true, 2.5f, experts, weights);
  EXPECT_NEAR(weights[0] + weights[1], 2.5f, 1e-6);  // renormalised, times expert_weights_scale
  float softmax[] = {0.0f, std::log(3.0f), -5.0f, std::log(2.0f)};
  RouteScoredRow(softmax, 4, 2, Gating::kSoftmax, nullptr, {}, false, 1.0f, experts, weights);
  const float all = 6.0f + std::exp(-5.0f);  // the softmax over every expert, as it is
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 3);
  EXPECT_NEAR(weights[0], 3.0f / all, 1e-6);
  EXPECT_NEAR(weights[1], 2.0f / all, 1e-6);
  EXPECT_NEAR(softmax[2], std::exp(-5.0f) / all, 1e-8);  // scores left in place
}

// Group-limited routing: only the best groups' experts are chosen; a group's score is the sum of its two
// best choosing scores with sigmoid scores (V3), its best with softmax scores (V2).
TEST(Deepseek2, GroupedRoutingChoosesOnlyFromTheBestGroups) {
  // 4 groups of 2; equal logits, so the bias alone orders the choosing scores.
  const float bias[] = {0.9f, -0.5f, 0.4f, 0.4f, 0.0f, 0.0f, 0.45f, -1.0f};
  int32_t experts[3];
  float weights[3];
  auto route = [&](Gating gating, ExpertGroups groups) {
    float scores[8] = {};
    RouteScoredRow(scores, 8, 3, gating, bias, groups, false, 1.0f, experts, weights);
    return std::vector<int32_t>(experts, experts + 3);
  };
  // Sigmoid (0.5 + bias): group sums 1.4, 1.8, 1.0, 0.45: groups 1 and 0.
  EXPECT_EQ(route(Gating::kSigmoid, {4, 2}), (std::vector<int32_t>{0, 2, 3}));
  EXPECT_FLOAT_EQ(weights[1], 0.5f);  // weighed by the unbiased score
  EXPECT_EQ(route(Gating::kSigmoid, {4, 4}), (std::vector<int32_t>{0, 6, 2}));  // all groups: expert 6 too
  EXPECT_EQ(route(Gating::kSigmoid, {}), (std::vector<int32_t>{0, 6, 2}));
  // Softmax (0.125 + bias): group maxima 1.025, 0.525, 0.125, 0.575: groups 0 and 3 (their sums would
  // pick groups 1 and 0).
  EXPECT_EQ(route(Gating::kSoftmax, {4, 2}), (std::vector<int32_t>{0, 6, 1}));
  EXPECT_FLOAT_EQ(weights[2], 0.125f);
}

TEST(Deepseek2, GroupedRoutingConfig) {
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-deepseek3-grouped", TensorType::kF32));
  const ModelConfig& c = m.model->config();
  EXPECT_EQ(c.n_expert, 32);
  EXPECT_EQ(c.n_expert_used, 8);
  EXPECT_EQ(c.expert_groups, 8);
  EXPECT_EQ(c.expert_groups_used, 4);
  EXPECT_NE(c.Summary().find("from the best 4 of 8 expert groups"), std::string::npos) << c.Summary();
  const ModelConfig plain = LoadModelOrDie(TinyModelPath("tiny-deepseek2", TensorType::kF32)).model->config();
  EXPECT_EQ(plain.expert_groups, 1);
  EXPECT_EQ(plain.expert_groups_used, 1);
}

// Every family reading DeepSeek's or its own experts refuses a file without them by name.
TEST(Experts, FamiliesNeedTheirCounts) {
  for (const auto& [shape, arch] : {std::pair<const char*, const char*>{"tiny-deepseek2", "deepseek2"},
                                    {"tiny-glm4moe", "glm4moe"},
                                    {"tiny-minimax-m2", "minimax-m2"},
                                    {"tiny-ernie4.5-moe", "ernie4_5-moe"},
                                    {"tiny-dots1", "dots1"}}) {
    const std::string key = std::string(arch) + ".expert_used_count";
    const Status s = LoadEdited(shape, SetKey(key, GgufValue::Uint32(0)));
    EXPECT_NE(s.message().find(std::string(arch) + " needs expert_count, expert_used_count and "
                                                   "expert_feed_forward_length of at least 1"),
              std::string::npos)
        << shape << ": " << s.ToString();
  }
  const Status shared =
      LoadEdited("tiny-deepseek2", SetKey("deepseek2.expert_shared_count", GgufValue::Uint32(0)));
  EXPECT_NE(shared.message().find("'deepseek2.expert_shared_count' = 0: deepseek2 needs at least 1"),
            std::string::npos)
      << shared.ToString();
}

TEST(Deepseek2, WhatItDoesNotRunIsRefusedClearly) {
  struct Case {
    Edit edit;
    const char* message;
  };
  const Case cases[] = {
      {SetKey("deepseek2.expert_gating_func", GgufValue::Uint32(3)), "'deepseek2.expert_gating_func' = 3"},
      {SetKey("deepseek2.attention.key_length_mla", GgufValue::Uint32(48)),
       "deepseek2 with 'deepseek2.attention.key_length_mla' needs attention.head_count_kv = 1"},
      {SetKey("deepseek2.attention.head_count_kv", GgufValue::Uint32(1)), "head_count_kv = head_count"},
      // 16 experts: groups must divide them, and the used groups hold at least expert_used_count (4).
      {SetKey("deepseek2.expert_group_count", GgufValue::Uint32(3)),
       "'deepseek2.expert_group_count' = 3 must divide 'deepseek2.expert_count' = 16"},
      {Edit{.set_keys = {{"deepseek2.expert_group_count", GgufValue::Uint32(8)},
                         {"deepseek2.expert_group_used_count", GgufValue::Uint32(1)}}},
       "'deepseek2.expert_group_used_count' = 1 leaves fewer experts than 'deepseek2.expert_used_count' = 4"},
      {SetKey("deepseek2.expert_group_used_count", GgufValue::Uint32(2)),
       "'deepseek2.expert_group_used_count' = 2 is out of range (0..1)"},
  };
  for (const Case& c : cases) {
    const Status s = LoadEdited("tiny-deepseek2", c.edit);
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.ToString();
  }
  Edit no_rank;
  no_rank.drop_keys = {"deepseek2.attention.kv_lora_rank"};
  EXPECT_NE(
      LoadEdited("tiny-deepseek2", no_rank).message().find("deepseek2.attention.kv_lora_rank' is missing"),
      std::string::npos);
  // Groups that are all used route as without groups.
  Edit all_groups;
  all_groups.set_keys = {{"deepseek2.expert_group_count", GgufValue::Uint32(4)},
                         {"deepseek2.expert_group_used_count", GgufValue::Uint32(4)}};
  EXPECT_TRUE(LoadEdited("tiny-deepseek2", all_groups).ok());
  // Values of another width than keys: deepseek2's alone.
  const Status qwen3 = LoadEdited("tiny-qwen3", SetKey("qwen3.attention.value_length", GgufValue::Uint32(8)));
  EXPECT_NE(
      qwen3.message().find("attention.value_length != attention.key_length is supported for deepseek2 only"),
      std::string::npos)
      << qwen3.ToString();
}

}  // namespace
}  // namespace lockstep::testing
