// Config and tensor validation: missing tensors are all listed, unsupported architectures and wrong shapes
// are clear errors, missing keys name the key; bad batches are rejected.
#include <gtest/gtest.h>

#include <set>

#include "gguf/gguf_writer.h"
#include "model/model_config.h"
#include "model/test_models.h"

namespace lockstep::testing {
namespace {

using ByteEdit = FileEdit;

// The tiny model with edits, loaded.
Result<std::unique_ptr<Model>> LoadEdited(const ByteEdit& edit) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::shared_ptr<const GgufFile> file,
                            EditedFile(TinyModelPath("tiny", TensorType::kF32), edit));
  return Model::Load(file);
}

TEST(ModelErrors, UneditedLoads) { EXPECT_TRUE(LoadEdited({}).ok()); }

TEST(ModelErrors, MissingTensorsAreAllListed) {
  ByteEdit e;
  e.drop_tensors = {"blk.0.attn_q.weight", "blk.1.ffn_down.weight", "output_norm.weight",
                    "blk.1.attn_norm.weight"};
  auto r = LoadEdited(e);
  ASSERT_FALSE(r.ok());
  for (const std::string& name : e.drop_tensors)
    EXPECT_NE(r.status().message().find(name), std::string::npos) << name;
  EXPECT_NE(r.status().message().find("missing 4"), std::string::npos) << r.status().message();
}

TEST(ModelErrors, UnsupportedArchitectureListsSupported) {
  ByteEdit e;
  e.set_keys = {{"general.architecture", GgufValue::String("mamba")}};
  auto r = LoadEdited(e);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("mamba"), std::string::npos);
  EXPECT_NE(r.status().message().find("llama, qwen2"), std::string::npos) << r.status().message();
}

TEST(ModelErrors, WrongShapeNamesTensorAndShapes) {
  ByteEdit e;
  e.reshape_tensor = "blk.1.ffn_up.weight";
  auto r = LoadEdited(e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("blk.1.ffn_up.weight has shape [96, 64], expected [64, 96]"),
            std::string::npos)
      << r.status().message();
}

TEST(ModelErrors, MissingKeyIsNamed) {
  ByteEdit e;
  e.drop_keys = {"llama.embedding_length"};
  auto r = LoadEdited(e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("llama.embedding_length"), std::string::npos) << r.status().message();
}

TEST(ModelErrors, BadHeadCountsAndRopeScaling) {
  ByteEdit heads;
  heads.set_keys = {{"llama.attention.head_count_kv", GgufValue::Uint32(3)}};
  auto r = LoadEdited(heads);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("head_count_kv"), std::string::npos) << r.status().message();
  ByteEdit dynamic;
  dynamic.set_keys = {{"llama.rope.scaling.type", GgufValue::String("dynamic")}};
  r = LoadEdited(dynamic);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("'dynamic'"), std::string::npos);
  EXPECT_NE(r.status().message().find("yarn"), std::string::npos);  // among the supported ones
  ByteEdit yarn;                                                    // without its factor
  yarn.set_keys = {{"llama.rope.scaling.type", GgufValue::String("yarn")}};
  r = LoadEdited(yarn);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("rope.scaling.factor"), std::string::npos) << r.status().message();
}

TEST(ModelConfig, RopeScalingKeys) {
  ByteEdit linear;
  linear.set_keys = {{"llama.rope.scaling.type", GgufValue::String("linear")},
                     {"llama.rope.scaling.factor", GgufValue::Float32(4)}};
  auto r = LoadEdited(linear);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->config().rope_scaling, RopeScaling::kLinear);
  EXPECT_FLOAT_EQ((*r)->config().rope_scale_factor, 4.0f);

  ByteEdit llama3;
  llama3.set_keys = {{"llama.rope.scaling.type", GgufValue::String("llama3")},
                     {"llama.rope.scaling.factor", GgufValue::Float32(32)},
                     {"llama.rope.scaling.low_freq_factor", GgufValue::Float32(1)},
                     {"llama.rope.scaling.high_freq_factor", GgufValue::Float32(4)},
                     {"llama.rope.scaling.original_context_length", GgufValue::Uint32(8192)}};
  r = LoadEdited(llama3);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ModelConfig& c = (*r)->config();
  ASSERT_EQ(c.rope_freq_factors.size(), size_t(c.rope_dim / 2));
  EXPECT_FLOAT_EQ(c.rope_freq_factors.front(), 1.0f);  // high frequency: unscaled
}

TEST(ModelConfig, Llama3FactorsMatchKnownValues) {
  // Llama 3.2 1B: head_dim 64, base 500000, factor 32, low 1, high 4, original 8192.
  const std::vector<float> f = Llama3RopeFreqFactors(64, 500000.0f, 32, 1, 4, 8192);
  ASSERT_EQ(f.size(), 32u);
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[31], 32.0f);
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
}

TEST(ModelErrors, BadBatchesAreRejected) {
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny", TensorType::kF32));
  Model& model = *m.model;
  const KvLayout layout = model.MakeKvLayout(KvDtype::kF32);
  LocalKv kv(layout, 16);
  ThreadPool pool(1);
  std::vector<float> logits(model.config().n_vocab);
  Batch batch;
  batch.sequences.push_back(kv.view());
  batch.rows.push_back({int32_t(model.config().n_vocab), 0, 0, true});
  EXPECT_FALSE(model.Forward(batch, layout, logits, pool).ok());  // token out of range
  batch.rows = {{1, 16, 0, true}};
  EXPECT_EQ(model.Forward(batch, layout, logits, pool).code(), StatusCode::kOutOfRange);  // beyond its blocks
  batch.rows = {{1, 0, 3, true}};
  EXPECT_FALSE(model.Forward(batch, layout, logits, pool).ok());  // no such sequence
  batch.rows = {{1, 0, 0, true}, {2, 1, 0, true}};
  EXPECT_FALSE(model.Forward(batch, layout, logits, pool).ok());  // logits buffer too small
  KvLayout wrong = layout;
  wrong.head_dim += 1;
  batch.rows = {{1, 0, 0, true}};
  EXPECT_FALSE(model.Forward(batch, wrong, logits, pool).ok());
}

}  // namespace
}  // namespace lockstep::testing
