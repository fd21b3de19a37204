// Mixtures of experts (model/moe.h): the configuration of qwen3moe and Mixtral-style llama files, their
// experts bound as slices of the 3-D tensors, the routing rule, and clear errors for malformed or unsupported
// expert files. (The forward pass against the reference: reference_test.cc; batch invariance:
// batch_invariance_test.cc.)
#include "model/moe.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gguf/gguf_writer.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/test_models.h"

namespace lockstep::testing {
namespace {

using Edit = FileEdit;

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
  RouteRow(logits, 6, 3, experts, weights);
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 3);
  EXPECT_EQ(experts[2], 5);
  EXPECT_FLOAT_EQ(weights[0], 1.0f / 3);
  EXPECT_FLOAT_EQ(weights[0] + weights[1] + weights[2], 1.0f);
  RouteRow(logits, 6, 2, experts, weights);  // 2 of 3 equal ones: the lower indices
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 3);
  const float spread[] = {0.0f, std::log(3.0f), -5.0f};
  RouteRow(spread, 3, 2, experts, weights);  // softmax over the chosen: 3 : 1
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 0);
  EXPECT_NEAR(weights[0], 0.75f, 1e-6);
  EXPECT_NEAR(weights[1], 0.25f, 1e-6);
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
  const std::string qwen2moe =
      Error("tiny-qwen3moe", SetKey("general.architecture", GgufValue::String("qwen2moe")));
  EXPECT_NE(qwen2moe.find("unsupported: mixture of experts ('qwen2moe' needs shared experts)"),
            std::string::npos)
      << qwen2moe;
  const std::string gpt_oss =
      Error("tiny-qwen3moe", SetKey("general.architecture", GgufValue::String("gpt-oss")));
  EXPECT_NE(gpt_oss.find("'gpt-oss' needs biased experts"), std::string::npos) << gpt_oss;
  // Experts in an architecture whose graph has none.
  const std::string qwen3 = Error("tiny-qwen3", SetKey("qwen3.expert_count", GgufValue::Uint32(8)));
  EXPECT_NE(qwen3.find("unsupported: mixture of experts ('qwen3', qwen3.expert_count = 8)"),
            std::string::npos)
      << qwen3;
  EXPECT_EQ(LoadEdited("tiny-qwen3moe", SetKey("general.architecture", GgufValue::String("qwen2moe"))).code(),
            StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace lockstep::testing
