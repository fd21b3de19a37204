// The architectures' GGUF conventions (model/architectures.h): what each tiny shape's config says, the keys
// and tensors llama.cpp's converter writes, and clear errors for what is missing or not supported.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "gguf/gguf_writer.h"
#include "model/local_kv.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/test_models.h"
#include "model/transformer.h"
#include "tensor/thread_pool.h"
#include "testing/testdata.h"

namespace lockstep::testing {
namespace {

using Edit = FileEdit;

// `shape`'s f32 file with the edits, opened from memory.
std::shared_ptr<const GgufFile> Edited(const std::string& shape, const Edit& edit) {
  auto edited = EditedFile(TinyModelPath(shape, TensorType::kF32), edit);
  EXPECT_TRUE(edited.ok()) << edited.status().ToString();
  return edited.ok() ? *edited : nullptr;
}

Edit DropKeys(std::set<std::string> keys) {
  Edit e;
  e.drop_keys = std::move(keys);
  return e;
}

ModelConfig Config(const std::string& shape, const Edit& edit = Edit()) {
  auto c = ModelConfig::FromGguf(*Edited(shape, edit));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : ModelConfig{};
}

std::string ConfigError(const std::string& shape, const Edit& edit) {
  auto c = ModelConfig::FromGguf(*Edited(shape, edit));
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : c.status().ToString();
}

std::vector<int64_t> Windows(const ModelConfig& c) {
  std::vector<int64_t> w;
  for (const LayerAttention& l : c.layers) w.push_back(l.window);
  return w;
}

TEST(Architectures, Qwen3) {
  const ModelConfig c = Config("tiny-qwen3");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.q_dim(), 2 * c.n_embd);  // head_dim from key_length, not n_embd / n_head
  EXPECT_FLOAT_EQ(c.attention_scale, 1.0f / std::sqrt(16.0f));
  EXPECT_EQ(c.WidestWindow(), 0);
}

// The text of vision-language files: their own key prefix, the text model's layers.
TEST(Architectures, Qwen35) {
  const ModelConfig c = Config("tiny-qwen35");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.qk_norm && c.attn_output_gate && c.ffn_norm_is_post_attention_norm);
  std::vector<bool> recurrent;
  for (const LayerAttention& l : c.layers) recurrent.push_back(l.recurrent);
  EXPECT_EQ(recurrent, (std::vector<bool>{true, true, true, false, true, true, true, false}));
  EXPECT_EQ(c.delta_net.k_heads, 2);
  EXPECT_EQ(c.delta_net.v_heads, 4);
  EXPECT_EQ(c.delta_net.head_k_dim, 64);
  EXPECT_EQ(c.delta_net.head_v_dim, 64);
  EXPECT_EQ(c.delta_net.ConvChannels(), 2 * 128 + 256);
  EXPECT_EQ(c.RecurrentStateFloats(), 6 * (3 * 512 + 4 * 64 * 64));
  // Only the attention layers (3 and 7) store K/V: a block holds their keys and values alone.
  for (int64_t l = 0; l < c.n_layer; ++l) EXPECT_EQ(c.StoresKv(l), !recurrent[size_t(l)]) << l;
  EXPECT_EQ(c.KvLayer(3), 0);
  EXPECT_EQ(c.KvLayer(7), 1);
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-qwen35", TensorType::kF32));
  const KvLayout kv = m.model->MakeKvLayout(KvDtype::kF16, 16);
  EXPECT_EQ(kv.n_layer, 2);
  EXPECT_EQ(kv.BlockBytes(), size_t(2 * 2 * c.kv_dim() * 16) * sizeof(uint16_t));  // layers x (K, V)
  EXPECT_EQ(kv.recurrent_state_floats, c.RecurrentStateFloats());
  // full_attention_interval 2, and a multi-token-prediction block that is not run.
  const ModelConfig two =
      Config("tiny-qwen35", Edit{{},
                                 {{"qwen35.full_attention_interval", GgufValue::Uint32(2)},
                                  {"qwen35.nextn_predict_layers", GgufValue::Uint32(1)}},
                                 {},
                                 ""});
  EXPECT_EQ(two.n_layer, 7);
  EXPECT_EQ(two.RecurrentLayers(), 4);  // layers 0, 2, 4, 6
  EXPECT_NE(ConfigError("tiny-qwen35", DropKeys({"qwen35.ssm.state_size"})).find("qwen35.ssm.state_size"),
            std::string::npos);
  EXPECT_NE(
      ConfigError("tiny-qwen35", Edit{{}, {{"qwen35.ssm.time_step_rank", GgufValue::Uint32(3)}}, {}, ""})
          .find("multiple"),
      std::string::npos);
}

// Qwen3-Next: qwen35moe's layers (every fourth full attention without the key), its DeltaNet's projections
// fused per key head and its value heads grouped by key head.
TEST(Architectures, Qwen3Next) {
  const ModelConfig c = Config("tiny-qwen3next");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.qk_norm && c.attn_output_gate && c.ffn_norm_is_post_attention_norm);
  std::vector<bool> recurrent;
  for (const LayerAttention& l : c.layers) recurrent.push_back(l.recurrent);
  EXPECT_EQ(recurrent, (std::vector<bool>{true, true, true, false, true, true, true, false}));
  EXPECT_TRUE(c.delta_net.fused_projections);
  EXPECT_FALSE(c.delta_net.tiled_heads);
  EXPECT_FALSE(Config("tiny-qwen35moe").delta_net.fused_projections);
  EXPECT_EQ(c.n_expert, 8);
  EXPECT_EQ(c.n_expert_used, 2);
  EXPECT_EQ(c.n_ff_shared, 64);
  EXPECT_TRUE(c.expert_weights_norm);
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-qwen3next", TensorType::kF32));
  EXPECT_EQ(m.model->MakeKvLayout(KvDtype::kF16, 16).recurrent_state_floats, c.RecurrentStateFloats());
}

TEST(Architectures, MinimaxM2) {
  const ModelConfig c = Config("tiny-minimax-m2");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.qk_norm && c.qk_norm_whole && c.pre_norms);
  EXPECT_EQ(c.expert_gating, ModelConfig::ExpertGating::kSigmoid);
  EXPECT_TRUE(c.expert_selection_bias && c.expert_weights_norm);
  EXPECT_EQ(c.n_ff_shared, 0);
  EXPECT_EQ(Config("tiny-minimax-m2", DropKeys({"minimax-m2.expert_gating_func"})).expert_gating,
            ModelConfig::ExpertGating::kSigmoid);
  EXPECT_NE(ConfigError("tiny-minimax-m2",
                        Edit{{}, {{"minimax-m2.expert_gating_func", GgufValue::Uint32(3)}}, {}, ""})
                .find("expert_gating_func"),
            std::string::npos);
}

TEST(Architectures, Ernie45Moe) {
  const ModelConfig c = Config("tiny-ernie4.5-moe");
  EXPECT_EQ(c.rope_mode, RopeMode::kNormal);
  EXPECT_EQ(c.n_layer_dense_lead, 1);
  EXPECT_EQ(c.expert_gating, ModelConfig::ExpertGating::kSoftmax);
  EXPECT_TRUE(c.expert_selection_bias && c.expert_weights_norm);
  EXPECT_EQ(c.n_ff_shared, 64);
  EXPECT_FALSE(c.shared_expert_gate);
  EXPECT_NE(ConfigError("tiny-ernie4.5-moe",
                        Edit{{}, {{"ernie4_5-moe.interleave_moe_layer_step", GgufValue::Uint32(2)}}, {}, ""})
                .find("interleave_moe_layer_step"),
            std::string::npos);
}

TEST(Architectures, Dots1) {
  const ModelConfig c = Config("tiny-dots1");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qk_norm_whole);
  EXPECT_EQ(c.expert_gating, ModelConfig::ExpertGating::kSigmoid);
  EXPECT_TRUE(c.expert_selection_bias && c.expert_weights_norm);
  EXPECT_EQ(c.n_ff_shared, 64);
  EXPECT_FLOAT_EQ(c.expert_weights_scale, 2.5f);
}

TEST(Architectures, BailingMoe2) {
  const ModelConfig c = Config("tiny-bailingmoe2");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.expert_groups, 8);
  EXPECT_EQ(c.expert_groups_used, 4);
  EXPECT_EQ(c.n_ff_shared, 32);
  const ModelConfig wider =
      Config("tiny-bailingmoe2",
             Edit{{}, {{"bailingmoe2.expert_shared_feed_forward_length", GgufValue::Uint32(64)}}, {}, ""});
  EXPECT_EQ(wider.n_ff_shared, 64);  // the file's width wins over expert_shared_count x the experts'
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-bailingmoe2", TensorType::kF32));  // fused attn_qkv
  EXPECT_NE(m.model, nullptr);
}

TEST(Architectures, SeedOss) {
  const ModelConfig c = Config("tiny-seed-oss");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.qkv_bias && c.ffn_norm_is_post_attention_norm);
  EXPECT_FALSE(c.qk_norm || c.post_norms);
  EXPECT_EQ(c.q_dim(), 2 * c.n_embd);
}

// GLM-4.5: llama's attention with QKV bias, half-rotated NeoX heads, DeepSeek's experts after a dense layer;
// its multi-token-prediction layer is not run.
TEST(Architectures, Glm4Moe) {
  const ModelConfig c = Config("tiny-glm4moe");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.qkv_bias && c.ffn_norm_is_post_attention_norm);
  EXPECT_FALSE(c.qk_norm || c.post_norms);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_EQ(c.n_layer_dense_lead, 1);
  EXPECT_EQ(c.expert_gating, ModelConfig::ExpertGating::kSigmoid);
  EXPECT_TRUE(c.expert_selection_bias && c.expert_weights_norm);
  EXPECT_FLOAT_EQ(c.expert_weights_scale, 2.5f);
  EXPECT_EQ(c.n_ff_shared, 32);
  EXPECT_FALSE(c.shared_expert_gate);
  // Without expert_gating_func: sigmoid (GLM's); one nextn layer: three layers run.
  const ModelConfig edited = Config(
      "tiny-glm4moe",
      Edit{{"glm4moe.expert_gating_func"}, {{"glm4moe.nextn_predict_layers", GgufValue::Uint32(1)}}, {}, ""});
  EXPECT_EQ(edited.expert_gating, ModelConfig::ExpertGating::kSigmoid);
  EXPECT_EQ(edited.n_layer, 3);
  EXPECT_TRUE(Config("tiny-glm4.6").qk_norm);  // GLM-4.5 / 4.6 files have attn_q_norm
  EXPECT_NE(
      ConfigError("tiny-glm4moe", DropKeys({"glm4moe.expert_shared_count"})).find("expert_shared_count"),
      std::string::npos);
}

// Gemma 4 26B-A4B: experts beside every layer's dense FFN, with their own norms and scales bound.
TEST(Architectures, Gemma4ExpertsBesideTheDenseFfn) {
  const ModelConfig c = Config("tiny-gemma4moe");
  EXPECT_TRUE(c.dense_beside_experts);
  EXPECT_EQ(c.n_expert, 8);
  EXPECT_EQ(c.n_expert_used, 2);
  EXPECT_EQ(c.n_ff_expert, 32);
  EXPECT_EQ(c.ffn_activation, FfnActivation::kGeluTanh);
  EXPECT_FALSE(Config("tiny-gemma4").dense_beside_experts);
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-gemma4moe", TensorType::kF32));  // binds every tensor
  EXPECT_NE(m.model, nullptr);
  EXPECT_NE(ConfigError("tiny-gemma4moe", DropKeys({"gemma4.expert_feed_forward_length"}))
                .find("gemma4.expert_feed_forward_length"),
            std::string::npos);
}

TEST(Architectures, VisionLanguageFilesRunTheirText) {
  const ModelConfig q3 = Config("tiny-qwen3vl");
  EXPECT_EQ(q3.file_architecture, "qwen3vl");
  EXPECT_EQ(q3.architecture, "qwen3");
  EXPECT_EQ(q3.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_NE(q3.Summary().find("qwen3vl (text only, qwen3's layers)"), std::string::npos) << q3.Summary();
  const ModelConfig q2 = Config("tiny-qwen2.5vl");
  EXPECT_EQ(q2.architecture, "qwen2");
  EXPECT_TRUE(q2.qkv_bias);
  EXPECT_FLOAT_EQ(q2.rope_freq_base, 1000000.0f);  // read from qwen2vl.rope.freq_base
  EXPECT_EQ(Config("tiny-qwen3").file_architecture, "qwen3");
}

// Ministral 3's query temperature: its length is the YaRN original context when the file names none.
TEST(Architectures, Mistral3TemperatureLengthDefaultsToTheOriginalContext) {
  const ModelConfig c = Config("tiny-ministral3");
  EXPECT_FLOAT_EQ(c.attn_temperature_scale, 0.1f);
  EXPECT_EQ(c.attn_temperature_length, 32);
  EXPECT_EQ(c.rope_scaling, RopeScaling::kYarn);
  EXPECT_FLOAT_EQ(c.yarn_log_mul, 1.0f);
  EXPECT_EQ(Config("tiny-mistral3").attn_temperature_scale, 0.0f);  // Mistral Small: none
}

// Cohere (command-r, cohere2): LayerNorms (their epsilon key), the FFN in parallel, logits x logit_scale;
// cohere2 windows three layers of four and rotates only those; Command R+'s per-head Q/K norms come with
// their tensors.
TEST(Architectures, Cohere) {
  const ModelConfig c = Config("tiny-cohere2");
  EXPECT_EQ(c.rope_mode, RopeMode::kNormal);
  EXPECT_TRUE(c.layer_norm && c.parallel_ffn);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_FLOAT_EQ(c.logit_scale, 0.25f);
  for (size_t l = 0; l < c.layers.size(); ++l) {
    EXPECT_EQ(c.layers[l].window, l % 4 < 3 ? 24 : 0) << l;
    EXPECT_EQ(c.layers[l].rope, l % 4 < 3) << l;
  }
  EXPECT_NE(c.Summary().find("LayerNorm, parallel attention and FFN"), std::string::npos) << c.Summary();
  const ModelConfig r = Config("tiny-command-r");
  EXPECT_TRUE(r.layer_norm && r.parallel_ffn);
  EXPECT_FALSE(r.qk_norm || r.qk_norm_per_head);
  EXPECT_FLOAT_EQ(r.logit_scale, 0.0625f);
  for (const LayerAttention& layer : r.layers) EXPECT_TRUE(layer.rope && layer.window == 0);
  const ModelConfig plus = Config("tiny-command-r-plus");
  EXPECT_TRUE(plus.qk_norm && plus.qk_norm_per_head);
  EXPECT_NE(ConfigError("tiny-command-r", DropKeys({"command-r.logit_scale"}))
                .find("'command-r.logit_scale' is missing"),
            std::string::npos);
  EXPECT_NE(
      ConfigError("tiny-cohere2", DropKeys({"cohere2.attention.sliding_window"})).find("sliding_window"),
      std::string::npos);
  EXPECT_NE(ConfigError("tiny-cohere2", DropKeys({"cohere2.attention.layer_norm_epsilon"}))
                .find("layer_norm_epsilon"),
            std::string::npos);
  Edit negative;
  negative.set_keys = {{"cohere2.logit_scale", GgufValue::Float32(-1)}};
  EXPECT_NE(ConfigError("tiny-cohere2", negative).find("must be finite and > 0"), std::string::npos);
}

// stablelm: LayerNorms with biases, partial NeoX RoPE; StableLM 2 12B's per-head Q/K norms and parallel FFN
// come with their tensors (attn_q_norm present, ffn_norm absent).
TEST(Architectures, StableLm) {
  const ModelConfig c = Config("tiny-stablelm2");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_EQ(c.rope_dim, 4);
  EXPECT_TRUE(c.layer_norm && c.norm_bias && c.qkv_bias);
  EXPECT_FALSE(c.parallel_ffn || c.qk_norm);
  EXPECT_EQ(c.logit_scale, 0.0f);
  EXPECT_NE(c.Summary().find("LayerNorm with biases"), std::string::npos) << c.Summary();
  const ModelConfig big = Config("tiny-stablelm2-12b");
  EXPECT_TRUE(big.parallel_ffn && big.qk_norm && big.qk_norm_per_head);
  EXPECT_FALSE(big.qkv_bias);
}

// phi2: LayerNorms with biases, the ungated GELU FFN in parallel, biases everywhere (Q/K/V from attn_qkv.bias
// in fused files), partial NeoX RoPE.
TEST(Architectures, Phi2) {
  for (const char* shape : {"tiny-phi2", "tiny-phi2-qkv"}) {
    const ModelConfig c = Config(shape);
    EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
    EXPECT_EQ(c.rope_dim, 8);
    EXPECT_TRUE(c.layer_norm && c.norm_bias && c.parallel_ffn && c.ungated_ffn);
    EXPECT_TRUE(c.qkv_bias && c.attn_output_bias);
    EXPECT_NE(c.Summary().find("ungated GELU FFN with biases"), std::string::npos) << c.Summary();
  }
  LoadedModel fused = LoadModelOrDie(TinyModelPath("tiny-phi2-qkv", TensorType::kF32));
  const LayerWeights& w = static_cast<const Transformer&>(*fused.model).weights().layers[0];
  EXPECT_EQ(w.bq.size(), 160u);
  EXPECT_EQ(w.bk.size(), 160u);
  EXPECT_EQ(w.bv.size(), 160u);
  EXPECT_EQ(w.w_gate.data, nullptr);
}

// Gemma (1), CodeGemma: embeddings x sqrt(n_embd) and GeGLU, nothing of Gemma 2's beyond them.
// starcoder2: LayerNorms with biases, Q/K/V/O biases, the ungated GELU FFN after the attention (not beside
// it), no output bias.
TEST(Architectures, StarCoder2) {
  const ModelConfig c = Config("tiny-starcoder2");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.layer_norm && c.norm_bias && c.ungated_ffn && c.qkv_bias && c.attn_output_bias);
  EXPECT_FALSE(c.parallel_ffn || c.output_bias);
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-starcoder2", TensorType::kF32));
  const ModelWeights& w = static_cast<const Transformer&>(*m.model).weights();
  EXPECT_TRUE(w.tied_output);
  EXPECT_TRUE(w.output_b.empty());
  EXPECT_EQ(w.layers[0].ffn_norm_b.size(), 192u);
}

// nemotron: LayerNorms with biases, partial NeoX RoPE, the ungated FFN with the squared ReLU, no biases in
// the layers (the file has none), untied output.
TEST(Architectures, Nemotron) {
  const ModelConfig c = Config("tiny-nemotron");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_EQ(c.n_head_kv, 4);
  EXPECT_TRUE(c.layer_norm && c.norm_bias && c.ungated_ffn);
  EXPECT_EQ(c.ffn_activation, FfnActivation::kReluSquared);
  EXPECT_FALSE(c.ffn_bias || c.qkv_bias || c.attn_output_bias || c.parallel_ffn || c.output_bias);
  EXPECT_NE(c.Summary().find("ungated squared-ReLU FFN"), std::string::npos) << c.Summary();
  EXPECT_EQ(c.Summary().find("FFN with biases"), std::string::npos) << c.Summary();
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-nemotron", TensorType::kF32));
  const ModelWeights& w = static_cast<const Transformer&>(*m.model).weights();
  EXPECT_FALSE(w.tied_output);
  EXPECT_EQ(w.layers[0].ffn_norm_b.size(), 192u);
  EXPECT_TRUE(w.layers[0].b_up.empty() && w.layers[0].b_down.empty());
  EXPECT_EQ(w.layers[0].w_gate.data, nullptr);
}

// olmo (OLMo 1): LayerNorms without weights or biases (none in the file, ones bound), llama's layers,
// interleaved RoPE; OLMo-7B-0424: Q/K/V clamped to attention.clamp_kqv.
TEST(Architectures, Olmo) {
  const ModelConfig c = Config("tiny-olmo");
  EXPECT_EQ(c.rope_mode, RopeMode::kNormal);
  EXPECT_TRUE(c.layer_norm && c.pre_norms);
  EXPECT_FALSE(c.norm_weights || c.norm_bias || c.ungated_ffn || c.parallel_ffn || c.qkv_bias);
  EXPECT_EQ(c.clamp_kqv, 0.0f);
  EXPECT_NE(c.Summary().find("LayerNorm without weights"), std::string::npos) << c.Summary();
  const ModelConfig clamped = Config("tiny-olmo-0424");
  EXPECT_EQ(clamped.clamp_kqv, 0.5f);
  EXPECT_NE(clamped.Summary().find("Q/K/V clamped to 0.5"), std::string::npos) << clamped.Summary();
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-olmo", TensorType::kF32));
  const ModelWeights& w = static_cast<const Transformer&>(*m.model).weights();
  EXPECT_TRUE(w.tied_output);
  EXPECT_EQ(w.output_norm, std::vector<float>(128, 1.0f));
  EXPECT_EQ(w.layers[0].attn_norm, std::vector<float>(128, 1.0f));
  EXPECT_EQ(w.layers[3].ffn_norm, std::vector<float>(128, 1.0f));
  EXPECT_TRUE(w.layers[0].attn_norm_b.empty() && w.output_norm_b.empty());
  for (const float bad : {-1.0f, std::nanf("")}) {
    Edit edit;
    edit.set_keys = {{"olmo.attention.clamp_kqv", GgufValue::Float32(bad)}};
    const std::string error = ConfigError("tiny-olmo-0424", edit);
    EXPECT_NE(error.find("'olmo.attention.clamp_kqv' must be 0 (none) or positive"), std::string::npos)
        << error;
  }
}

// chatglm (GLM-4-9B): llama's layers with one attn_qkv and its bias, interleaved RoPE over half of each head,
// SwiGLU from one ffn_up [gate | up], untied output.
TEST(Architectures, ChatGlm) {
  const ModelConfig c = Config("tiny-chatglm");
  EXPECT_EQ(c.rope_mode, RopeMode::kNormal);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_TRUE(c.qkv_bias && c.fused_gate_up);
  EXPECT_TRUE(Config("tiny-glm4").fused_gate_up);  // GLM-4-0414 (glm4): the same one ffn_up
  EXPECT_FALSE(c.layer_norm || c.ungated_ffn || c.parallel_ffn || c.attn_output_bias);
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-chatglm", TensorType::kF32));
  const ModelWeights& w = static_cast<const Transformer&>(*m.model).weights();
  EXPECT_FALSE(w.tied_output);
  EXPECT_EQ(w.layers[0].bq.size(), 128u);
  EXPECT_EQ(w.layers[0].bk.size(), 32u);
  EXPECT_EQ(w.layers[0].bv.size(), 32u);
  EXPECT_NE(w.layers[0].w_gate.data, nullptr);  // the first half of ffn_up
}

// gpt2, starcoder: learned position embeddings (no layer rotates), LayerNorms with biases, the fused
// attn_qkv and its bias, attn_output bias, the ungated GELU FFN with biases; starcoder with one KV head.
TEST(Architectures, Gpt2AndStarCoder) {
  for (const char* shape : {"tiny-gpt2", "tiny-starcoder"}) {
    const ModelConfig c = Config(shape);
    EXPECT_TRUE(c.learned_positions && c.layer_norm && c.norm_bias && c.ungated_ffn && c.ffn_bias);
    EXPECT_TRUE(c.qkv_bias && c.attn_output_bias);
    EXPECT_FALSE(c.parallel_ffn);
    for (const LayerAttention& layer : c.layers) EXPECT_FALSE(layer.rope) << shape;
  }
  EXPECT_EQ(Config("tiny-starcoder").n_head_kv, 1);
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-gpt2", TensorType::kF32));
  const ModelWeights& w = static_cast<const Transformer&>(*m.model).weights();
  EXPECT_FALSE(w.tied_output);
  EXPECT_EQ(w.position_embd.size(), 1024u * 128u);
  EXPECT_EQ(w.layers[0].bq.size(), 128u);
  // A position past the table (n_ctx_train 1024) is an error, not a read past it.
  Model& model = *m.model;
  const KvLayout layout = model.MakeKvLayout(KvDtype::kF32);
  LocalKv kv(layout, 1040);
  ThreadPool pool(1);
  std::vector<float> logits(size_t(model.config().n_vocab));
  Batch batch;
  batch.sequences.push_back(kv.view());
  batch.rows = {{1, 1023, 0, true}};
  EXPECT_TRUE(model.Forward(batch, layout, logits, pool).ok());
  batch.rows = {{1, 1024, 0, true}};
  const Status past = model.Forward(batch, layout, logits, pool);
  EXPECT_EQ(past.code(), StatusCode::kOutOfRange);
  EXPECT_NE(past.ToString().find("beyond the model's position embeddings (n_ctx_train 1024)"),
            std::string::npos)
      << past.ToString();
}

// bloom: gpt2's layers with token_embd_norm and ALiBi (no position embeddings, no RoPE); the slopes as ggml
// computes them: 12 heads -> 8 of 2^-(h + 1), then 2^-0.5 to the odd powers 1, 3, 5, 7.
TEST(Architectures, BloomAlibiSlopes) {
  const ModelConfig c = Config("tiny-bloom");
  EXPECT_TRUE(c.embedding_norm && c.layer_norm && c.norm_bias && c.ungated_ffn && c.qkv_bias);
  EXPECT_FALSE(c.learned_positions);
  for (const LayerAttention& layer : c.layers) EXPECT_FALSE(layer.rope);
  EXPECT_EQ(c.max_alibi_bias, 8.0f);
  const std::vector<float> slopes = c.AlibiSlopes();
  ASSERT_EQ(slopes.size(), 12u);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(slopes[size_t(h)], std::ldexp(1.0f, -(h + 1))) << h;
  for (int h = 8; h < 12; ++h) {
    EXPECT_NEAR(slopes[size_t(h)], std::pow(2.0, -0.5 * (2 * (h - 8) + 1)), 1e-7) << h;
  }
  EXPECT_TRUE(Config("tiny").AlibiSlopes().empty());
  EXPECT_NE(ConfigError("tiny-bloom", DropKeys({"bloom.attention.max_alibi_bias"})).find("max_alibi_bias"),
            std::string::npos);
  EXPECT_NE(ConfigError("tiny-bloom",
                        Edit{{}, {{"bloom.attention.max_alibi_bias", GgufValue::Float32(-1)}}, {}, ""})
                .find("must be in (0, 64]"),
            std::string::npos);
}

// mpt: ALiBi, LayerNorms, one attn_qkv clamped where the file says; biases and learned positions where the
// file has them (MPT-7B: none).
TEST(Architectures, Mpt) {
  const ModelConfig c = Config("tiny-mpt");
  EXPECT_TRUE(c.layer_norm && c.ungated_ffn);
  EXPECT_FALSE(c.norm_bias || c.qkv_bias || c.ffn_bias || c.attn_output_bias || c.learned_positions);
  EXPECT_EQ(c.max_alibi_bias, 8.0f);
  EXPECT_EQ(c.clamp_kqv, 0.5f);
  for (const LayerAttention& layer : c.layers) EXPECT_FALSE(layer.rope);
  EXPECT_EQ(Config("tiny-mpt", DropKeys({"mpt.attention.clamp_kqv"})).clamp_kqv, 0.0f);
  EXPECT_NE(ConfigError("tiny-mpt", DropKeys({"mpt.attention.max_alibi_bias"})).find("max_alibi_bias"),
            std::string::npos);
  // Q/K LayerNorms and AWQ's activation scales are refused, not ignored.
  for (const char* name : {"blk.0.attn_q_norm.weight", "blk.0.ffn_act.scales"}) {
    Edit with;
    with.copy_tensors = {{"blk.0.attn_norm.weight", name}};
    EXPECT_NE(ConfigError("tiny-mpt", with).find(std::string("unsupported: mpt with ") + name),
              std::string::npos)
        << name;
  }
}

// codeshell: gpt2's layers (biases throughout, one attn_qkv, the ungated FFN) with GQA and NeoX RoPE.
TEST(Architectures, CodeShell) {
  const ModelConfig c = Config("tiny-codeshell");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.layer_norm && c.norm_bias && c.ungated_ffn && c.ffn_bias && c.qkv_bias && c.attn_output_bias);
  EXPECT_FALSE(c.learned_positions || c.parallel_ffn);
  EXPECT_EQ(c.max_alibi_bias, 0.0f);
  EXPECT_EQ(c.n_head_kv, 2);
  for (const LayerAttention& layer : c.layers) EXPECT_TRUE(layer.rope);
}

// jais: ALiBi (the key required), scores scaled by 1 / head_dim, SwiGLU with biases (bound for gate, up and
// down), LayerNorms with biases, one attn_qkv with its bias.
TEST(Architectures, Jais) {
  const ModelConfig c = Config("tiny-jais");
  EXPECT_TRUE(c.layer_norm && c.norm_bias && c.qkv_bias && c.attn_output_bias && c.ffn_bias);
  EXPECT_FALSE(c.ungated_ffn);
  EXPECT_EQ(c.attention_scale, 1.0f / 16);
  EXPECT_EQ(c.max_alibi_bias, 8.0f);
  for (const LayerAttention& layer : c.layers) EXPECT_FALSE(layer.rope);
  EXPECT_NE(ConfigError("tiny-jais", DropKeys({"jais.attention.max_alibi_bias"})).find("max_alibi_bias"),
            std::string::npos);
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-jais", TensorType::kF32));
  const ModelWeights& w = static_cast<const Transformer&>(*m.model).weights();
  EXPECT_EQ(w.layers[0].b_gate.size(), 352u);
  EXPECT_EQ(w.layers[0].b_up.size(), 352u);
  EXPECT_EQ(w.layers[0].b_down.size(), 160u);
  EXPECT_EQ(w.layers[0].bo.size(), 160u);
}

// qwen (the first Qwen): feed_forward_length is twice the FFN's width (odd: refused); one attn_qkv with
// its bias, NeoX. plamo: the FFN beside the attention from attn_norm's output, RMSNorm.
TEST(Architectures, QwenAndPlamo) {
  const ModelConfig qwen = Config("tiny-qwen");
  EXPECT_EQ(qwen.n_ff, 352);
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_EQ(qwen.rope_mode, RopeMode::kNeox);
  EXPECT_NE(ConfigError("tiny-qwen", Edit{{}, {{"qwen.feed_forward_length", GgufValue::Uint32(705)}}, {}, ""})
                .find("must be even"),
            std::string::npos);
  const ModelConfig plamo = Config("tiny-plamo");
  EXPECT_TRUE(plamo.parallel_ffn);
  EXPECT_FALSE(plamo.layer_norm || plamo.parallel_ffn_norm);
  EXPECT_EQ(plamo.rope_mode, RopeMode::kNormal);
}

// refact and Baichuan-13B: llama's layers with ALiBi whose max bias llama.cpp fixes at 8 (their files carry
// no key; one present is read); Baichuan's 32-layer 7B rotates, its 40-layer 13B uses ALiBi.
TEST(Architectures, RefactAndBaichuanAlibi) {
  for (const char* shape : {"tiny-refact", "tiny-baichuan-13b"}) {
    const ModelConfig c = Config(shape);
    EXPECT_FALSE(c.layer_norm || c.ungated_ffn || c.qkv_bias) << shape;
    EXPECT_EQ(c.max_alibi_bias, 8.0f) << shape;
    for (const LayerAttention& layer : c.layers) EXPECT_FALSE(layer.rope) << shape;
  }
  EXPECT_EQ(Config("tiny-refact").n_head_kv, 1);
  EXPECT_EQ(
      Config("tiny-refact", Edit{{}, {{"refact.attention.max_alibi_bias", GgufValue::Float32(4)}}, {}, ""})
          .max_alibi_bias,
      4.0f);
  EXPECT_NE(ConfigError("tiny-refact",
                        Edit{{}, {{"refact.attention.max_alibi_bias", GgufValue::Float32(0)}}, {}, ""})
                .find("must be in (0, 64]"),
            std::string::npos);
  const ModelConfig seven_b = Config("tiny-baichuan");
  EXPECT_EQ(seven_b.n_layer, 32);
  EXPECT_EQ(seven_b.max_alibi_bias, 0.0f);
  EXPECT_EQ(seven_b.rope_mode, RopeMode::kNormal);
  for (const LayerAttention& layer : seven_b.layers) EXPECT_TRUE(layer.rope);
}

// deci: head counts, KV head counts and FFN widths per layer; head_count 0 = no attention, head_count_kv 0
// = "linear attention" (attn_output alone), feed_forward_length 0 = no FFN. Only attention stores K/V.
TEST(Architectures, DeciLayersAsTheirArraysSay) {
  const ModelConfig c = Config("tiny-deci-ultra");
  ASSERT_EQ(c.n_layer, 6);
  EXPECT_EQ(c.n_head, 8);
  EXPECT_EQ(c.n_head_kv, 2);  // the largest
  EXPECT_EQ(c.layer_n_ff, (std::vector<int64_t>{256, 384, 128, 0, 320, 0}));
  std::vector<int64_t> kv_heads;
  std::string kinds;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerAttention& layer = c.layers[size_t(l)];
    kinds += layer.no_attention ? 'N' : layer.linear_attention ? 'L' : 'A';
    EXPECT_EQ(c.StoresKv(l), c.Attends(l));
    if (c.Attends(l)) kv_heads.push_back(c.LayerKvHeads(l));
  }
  EXPECT_EQ(kinds, "ALNAAN");
  EXPECT_EQ(kv_heads, (std::vector<int64_t>{2, 1, 2}));
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-deci-ultra", TensorType::kF32));
  const KvLayout layout = m.model->MakeKvLayout(KvDtype::kF32);
  EXPECT_EQ(layout.n_layer, 3);  // the attention layers', with their own KV heads
  ASSERT_EQ(layout.layer_shapes.size(), 3u);
  EXPECT_EQ(layout.layer_shapes[1].n_kv_head, 1);
  const ModelWeights& w = static_cast<const Transformer&>(*m.model).weights();
  EXPECT_TRUE(w.layers[2].attn_norm.empty() && w.layers[2].wo.data == nullptr);  // no attention
  EXPECT_EQ(w.layers[1].wq.data, nullptr);                                       // linear attention
  EXPECT_NE(w.layers[1].wo.data, nullptr);
  EXPECT_TRUE(w.layers[3].ffn_norm.empty() && w.layers[3].w_down.data == nullptr);  // no FFN
  EXPECT_NE(m.model->config().Summary().find(
                "2 layers without attention, 1 with linear attention, 2 without an FFN"),
            std::string::npos)
      << m.model->config().Summary();

  // Errors name the key and the layer.
  auto heads = [](std::vector<int32_t> v) { return GgufValue::Int32Array(std::move(v)); };
  EXPECT_NE(ConfigError("tiny-deci", Edit{{}, {{"deci.attention.head_count", heads({8, 8, 0, 4})}}, {}, ""})
                .find("same head count"),
            std::string::npos);
  EXPECT_NE(
      ConfigError("tiny-deci", Edit{{}, {{"deci.attention.head_count_kv", heads({2, 0, 1, 1})}}, {}, ""})
          .find("must be 0 where head_count is 0 (layer 2)"),
      std::string::npos);
  EXPECT_NE(ConfigError("tiny-deci", Edit{{}, {{"deci.feed_forward_length", heads({256, 384})}}, {}, ""})
                .find("expected one per layer (4)"),
            std::string::npos);
  EXPECT_NE(
      ConfigError("tiny-deci", Edit{{}, {{"deci.attention.head_count_kv", heads({4, 0, 0, 3})}}, {}, ""})
          .find("does not divide head_count"),
      std::string::npos);
  // Architectures that read one value refuse an array rather than take its largest entry.
  EXPECT_NE(ConfigError("tiny", Edit{{}, {{"llama.attention.head_count_kv", heads({2, 1})}}, {}, ""})
                .find("holds one value per layer"),
            std::string::npos);
}

// gptneox: LayerNorms with biases, the fused attn_qkv and its bias, attn_output bias, partial NeoX RoPE, the
// ungated GELU FFN with biases beside the attention from its own ffn_norm (use_parallel_residual, the
// default) or after it.
TEST(Architectures, GptNeoX) {
  const ModelConfig c = Config("tiny-gptneox");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_EQ(c.rope_dim, 4);
  EXPECT_TRUE(c.layer_norm && c.norm_bias && c.ungated_ffn && c.qkv_bias && c.attn_output_bias);
  EXPECT_TRUE(c.parallel_ffn && c.parallel_ffn_norm);
  EXPECT_FALSE(c.output_bias);
  EXPECT_NE(c.Summary().find("parallel attention and FFN (each its own norm)"), std::string::npos)
      << c.Summary();
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-gptneox", TensorType::kF32));
  const ModelWeights& w = static_cast<const Transformer&>(*m.model).weights();
  EXPECT_FALSE(w.tied_output);
  EXPECT_EQ(w.layers[0].ffn_norm.size(), 128u);
  EXPECT_EQ(w.layers[0].ffn_norm_b.size(), 128u);
  EXPECT_EQ(w.layers[0].bk.size(), 128u);  // from attn_qkv.bias
  EXPECT_EQ(w.layers[0].w_gate.data, nullptr);

  const ModelConfig sequential = Config("tiny-gptneox-sequential");
  EXPECT_FALSE(sequential.parallel_ffn || sequential.parallel_ffn_norm);
  EXPECT_EQ(sequential.Summary().find("parallel"), std::string::npos) << sequential.Summary();
  // Without the key: the Hugging Face default (parallel).
  EXPECT_TRUE(
      Config("tiny-gptneox-sequential", DropKeys({"gptneox.use_parallel_residual"})).parallel_ffn_norm);
  EXPECT_NE(
      ConfigError("tiny-gptneox", Edit{{}, {{"gptneox.use_parallel_residual", GgufValue::Uint32(1)}}, {}, ""})
          .find("gptneox.use_parallel_residual"),
      std::string::npos);
}

// falcon: LayerNorms with biases, one attn_qkv, no biases in the layers, the ungated GELU FFN beside the
// attention from attn_norm; Falcon-40B: the attention from attn_norm_2, the FFN from attn_norm.
TEST(Architectures, Falcon) {
  const ModelConfig c = Config("tiny-falcon");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.layer_norm && c.norm_bias && c.ungated_ffn && c.parallel_ffn);
  EXPECT_FALSE(c.qkv_bias || c.attn_output_bias || c.ffn_bias || c.output_bias || c.parallel_ffn_norm ||
               c.attn_norm_2);
  EXPECT_EQ(c.n_head_kv, 1);
  const ModelConfig big = Config("tiny-falcon-40b");
  EXPECT_TRUE(big.attn_norm_2 && big.parallel_ffn_norm);
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-falcon-40b", TensorType::kF32));
  const ModelWeights& w = static_cast<const Transformer&>(*m.model).weights();
  const LayerWeights& l0 = w.layers[0];
  EXPECT_TRUE(l0.b_up.empty() && l0.b_down.empty() && l0.bq.empty() && l0.bo.empty());
  // The attention's norm is attn_norm_2, the FFN's attn_norm.
  EXPECT_EQ(l0.attn_norm_b.size(), 128u);
  EXPECT_EQ(l0.ffn_norm_b.size(), 128u);
  EXPECT_NE(l0.attn_norm_b, l0.ffn_norm_b);
}

TEST(Architectures, XverseIsLlamaUnderAnotherName) {
  const ModelConfig c = Config("tiny-xverse");
  EXPECT_EQ(c.rope_mode, RopeMode::kNormal);
  EXPECT_FALSE(c.qkv_bias || c.qk_norm || c.layer_norm || c.parallel_ffn || c.post_norms);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-6f);
}

// orion: llama's layers under LayerNorms with biases (attn_norm, ffn_norm, output_norm).
TEST(Architectures, Orion) {
  const ModelConfig c = Config("tiny-orion");
  EXPECT_EQ(c.rope_mode, RopeMode::kNormal);
  EXPECT_TRUE(c.layer_norm && c.norm_bias);
  EXPECT_FALSE(c.qkv_bias || c.attn_output_bias || c.ungated_ffn || c.parallel_ffn || c.qk_norm);
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-orion", TensorType::kF32));
  const ModelWeights& w = static_cast<const Transformer&>(*m.model).weights();
  EXPECT_EQ(w.output_norm_b.size(), 128u);
  EXPECT_EQ(w.layers[0].ffn_norm_b.size(), 128u);
  EXPECT_NE(w.layers[0].w_gate.data, nullptr);
}

TEST(Architectures, ExaoneIsLlamaWithNeoxPairs) {
  const ModelConfig c = Config("tiny-exaone");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_FALSE(c.qkv_bias || c.qk_norm || c.layer_norm || c.parallel_ffn || c.post_norms);
  EXPECT_EQ(c.n_head_kv, 2);
}

// minicpm: llama's layers with granite's multipliers, but no attention.scale (1 / sqrt(head_dim)).
TEST(Architectures, MiniCpm) {
  const ModelConfig c = Config("tiny-minicpm");
  EXPECT_EQ(c.rope_mode, RopeMode::kNormal);
  EXPECT_FLOAT_EQ(c.embedding_multiplier, 12.0f);
  EXPECT_FLOAT_EQ(c.residual_multiplier, 0.2213594f);
  EXPECT_FLOAT_EQ(c.logit_scale, 1.0f / 9.0f);
  EXPECT_FLOAT_EQ(c.attention_scale, 1.0f / std::sqrt(16.0f));
  EXPECT_NE(
      ConfigError("tiny-minicpm", Edit{{}, {{"minicpm.residual_scale", GgufValue::Float32(-1)}}, {}, ""})
          .find("minicpm.residual_scale"),
      std::string::npos);
}

TEST(Architectures, InternLm2IsLlamaUnderAnotherName) {
  const ModelConfig c = Config("tiny-internlm2");
  EXPECT_EQ(c.rope_mode, RopeMode::kNormal);
  EXPECT_FALSE(c.qkv_bias || c.qk_norm || c.layer_norm || c.parallel_ffn || c.post_norms);
  EXPECT_EQ(c.n_head_kv, 2);
}

TEST(Architectures, Gemma) {
  const ModelConfig c = Config("tiny-gemma");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.scale_embeddings);
  EXPECT_EQ(c.ffn_activation, FfnActivation::kGeluTanh);
  EXPECT_FALSE(c.post_norms || c.qk_norm);
  EXPECT_EQ(c.attn_softcap, 0.0f);
  EXPECT_EQ(c.final_softcap, 0.0f);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_FLOAT_EQ(c.attention_scale, 1.0f / std::sqrt(32.0f));
  for (const LayerAttention& layer : c.layers) EXPECT_EQ(layer.window, 0);
}

TEST(Architectures, Gemma2) {
  const ModelConfig c = Config("tiny-gemma2");
  EXPECT_TRUE(c.post_norms && c.scale_embeddings && !c.qk_norm);
  EXPECT_EQ(c.ffn_activation, FfnActivation::kGeluTanh);
  EXPECT_FLOAT_EQ(c.attn_softcap, 0.5f);
  EXPECT_FLOAT_EQ(c.final_softcap, 2.0f);
  ASSERT_EQ(c.layers.size(), 26u);
  for (size_t l = 0; l < c.layers.size(); ++l) {
    EXPECT_EQ(c.layers[l].window, l % 2 == 0 ? 40 : 0) << l;  // llama.cpp: the even layers are windowed
    EXPECT_FALSE(c.layers[l].local_rope);
  }
  EXPECT_EQ(c.WidestWindow(), 0);  // global layers see everything: no KV is ever dead
  // Absent keys: llama.cpp's defaults (window 4096, caps 50 and 30).
  const ModelConfig d =
      Config("tiny-gemma2", DropKeys({"gemma2.attention.sliding_window", "gemma2.attn_logit_softcapping",
                                      "gemma2.final_logit_softcapping"}));
  EXPECT_EQ(d.sliding_window, 4096);
  EXPECT_FLOAT_EQ(d.attn_softcap, 50.0f);
  EXPECT_FLOAT_EQ(d.final_softcap, 30.0f);
  // Gemma 2 27B (46 layers) scales queries by n_embd / n_head instead of head_dim.
  EXPECT_FLOAT_EQ(c.attention_scale, 1.0f / 4.0f);
  Edit big;
  big.set_keys = {{"gemma2.block_count", GgufValue::Uint32(46)}};
  auto r = ModelConfig::FromGguf(*Edited("tiny-gemma2", big));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FLOAT_EQ(r->attention_scale, 1.0f / std::sqrt(8.0f));
}

TEST(Architectures, Gemma3) {
  const ModelConfig c = Config("tiny-gemma3");
  EXPECT_TRUE(c.post_norms && c.scale_embeddings && c.qk_norm);
  EXPECT_EQ(c.attn_softcap, 0.0f);
  EXPECT_EQ(c.final_softcap, 0.0f);
  EXPECT_FLOAT_EQ(c.rope_freq_base_local, 10000.0f);
  EXPECT_EQ(c.rope_scaling, RopeScaling::kLinear);  // global layers only
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const bool local = (l + 1) % 6 != 0;
    EXPECT_EQ(c.layers[l].window, local ? 40 : 0) << l;
    EXPECT_EQ(c.layers[l].local_rope, local) << l;
  }
  // A per-layer pattern key overrides the 5:1 default; a period N windows l % N < N - 1.
  Edit pattern;
  pattern.set_keys = {{"gemma3.attention.sliding_window_pattern", GgufValue::Uint32(3)}};
  EXPECT_EQ(Windows(Config("tiny-gemma3", pattern)),
            (std::vector<int64_t>{40, 40, 0, 40, 40, 0, 40, 40, 0, 40, 40, 0}));
  Edit wrong;
  wrong.set_keys = {{"gemma3.attention.sliding_window_pattern", GgufValue::Int32Array({1, 0})}};
  EXPECT_NE(ConfigError("tiny-gemma3", wrong).find("one per layer"), std::string::npos);
  EXPECT_NE(ConfigError("tiny-gemma3", DropKeys({"gemma3.attention.sliding_window"}))
                .find("gemma3.attention.sliding_window' is missing"),
            std::string::npos);
}

TEST(Architectures, Gemma4LayersDiffer) {
  // tiny-gemma4: 10 layers, every fifth global (32-dim heads, 1 KV head) and the rest local (16-dim, 2 KV
  // heads); the last 5 share K/V and have FFNs twice as wide.
  const ModelConfig c = Config("tiny-gemma4");
  EXPECT_TRUE(c.post_norms && c.scale_embeddings && c.qk_norm && c.v_norm);
  EXPECT_EQ(c.attention_scale, 1.0f);
  EXPECT_EQ(c.final_softcap, 2.0f);
  EXPECT_EQ(c.n_embd_per_layer, 32);
  EXPECT_EQ(c.rope_dim_local, 16);
  EXPECT_EQ(c.rope_freq_factors.size(), 16u);  // rope_freqs: the global layers' proportional RoPE
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const bool global = (l + 1) % 5 == 0;
    EXPECT_EQ(c.layers[size_t(l)].window, global ? 0 : 40) << l;
    EXPECT_EQ(c.LayerHeadDim(l), global ? 32 : 16) << l;
    EXPECT_EQ(c.LayerKvHeads(l), global ? 1 : 2) << l;
    EXPECT_EQ(c.LayerFf(l), l >= 5 ? 256 : 128) << l;
    EXPECT_EQ(c.StoresKv(l), l < 5) << l;
    // Shared layers read the last earlier layer of their kind: 3 (local) or 4 (global).
    EXPECT_EQ(c.KvLayer(l), l < 5 ? l : global ? 4 : 3) << l;
  }
  // The KV layout holds the 5 storing layers, each at its own width.
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-gemma4", TensorType::kF32));
  const KvLayout kv = m.model->MakeKvLayout(KvDtype::kF32, 16);
  ASSERT_EQ(kv.n_layer, 5);
  ASSERT_EQ(kv.layer_shapes.size(), 5u);
  EXPECT_EQ(kv.BlockBytes(), size_t(4 * 2 * 2 * 16 * 16 + 1 * 2 * 1 * 32 * 16) * sizeof(float));
  const KvLayout global = kv.Layer(4);
  EXPECT_EQ(global.head_dim, 32);
  EXPECT_EQ(global.n_kv_head, 1);
  EXPECT_EQ(global.base, size_t(4 * 2 * 2 * 16 * 16) * sizeof(float));
  EXPECT_EQ(global.ValueOffset(0, 0), global.base + size_t(32 * 16) * sizeof(float));

  Edit too_many;
  too_many.set_keys = {{"gemma4.attention.shared_kv_layers", GgufValue::Uint32(9)}};
  EXPECT_NE(ConfigError("tiny-gemma4", too_many).find("no earlier layer of its kind"), std::string::npos);
  Edit kv_heads;
  kv_heads.set_keys = {{"gemma4.attention.head_count_kv", GgufValue::Int32Array({2, 2, 2})}};
  EXPECT_NE(ConfigError("tiny-gemma4", kv_heads).find("one per layer"), std::string::npos);
  EXPECT_NE(ConfigError("tiny-gemma4", DropKeys({"gemma4.attention.sliding_window_pattern"}))
                .find("sliding_window_pattern"),
            std::string::npos);
}

TEST(Architectures, Phi3WindowsAndLongRope) {
  const ModelConfig c = Config("tiny-phi3");
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.fused_gate_up);  // one ffn_up [gate | up]
  EXPECT_FALSE(Config("tiny").fused_gate_up);
  EXPECT_EQ(Windows(c), std::vector<int64_t>(4, 40));
  EXPECT_EQ(c.WidestWindow(), 40);
  EXPECT_NE(ConfigError("tiny-phi3", DropKeys({"phi3.attention.sliding_window"})).find("sliding_window"),
            std::string::npos);
  Edit mini4k;  // an old Phi-3-mini-4k file without the key: llama.cpp's 2047
  mini4k.drop_keys = {"phi3.attention.sliding_window"};
  mini4k.set_keys = {{"phi3.block_count", GgufValue::Uint32(32)}};
  auto r = ModelConfig::FromGguf(*Edited("tiny-phi3", mini4k));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->sliding_window, 2047);

  // tiny-phi3.5: n_ctx 1024 > original 256, so the long factors, and cos/sin times the attention factor.
  const ModelConfig l = Config("tiny-phi3.5");
  EXPECT_EQ(l.rope_scaling, RopeScaling::kLongRope);
  EXPECT_EQ(l.rope_orig_ctx, 256);
  EXPECT_FLOAT_EQ(l.rope_attn_factor, float(std::sqrt(1 + std::log(4.0) / std::log(256.0))));
  auto file = Edited("tiny-phi3.5", Edit());
  std::vector<float> long_factors(4);
  const GgufTensorInfo* t = file->FindTensor("rope_factors_long.weight");
  ASSERT_NE(t, nullptr);
  std::memcpy(long_factors.data(), t->data, sizeof(float) * 4);
  EXPECT_EQ(l.rope_freq_factors, long_factors);
  Edit short_context;
  short_context.set_keys = {{"phi3.context_length", GgufValue::Uint32(256)}};
  const ModelConfig s = Config("tiny-phi3.5", short_context);
  const GgufTensorInfo* st = file->FindTensor("rope_factors_short.weight");
  EXPECT_EQ(s.rope_freq_factors[0], *reinterpret_cast<const float*>(st->data));
  Edit half;
  half.drop_tensors = {"rope_factors_short.weight"};
  EXPECT_NE(ConfigError("tiny-phi3.5", half).find("both"), std::string::npos);
  // Partial rotary (tiny-phi4-mini): 12 of 16 dims rotated; factors stored per head_dim / 2 are cut.
  const ModelConfig p = Config("tiny-phi4-mini");
  EXPECT_EQ(p.rope_dim, 12);
  EXPECT_EQ(p.rope_freq_factors.size(), 6u);
}

TEST(Architectures, PhiFusedMatricesAreViewsOfTheirRows) {
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-phi3", TensorType::kQ8_0));
  auto weights = ModelWeights::Bind(*m.file, m.model->config(), -1);
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  const LayerWeights& l = weights->layers[1];
  const GgufTensorInfo* qkv = m.file->FindTensor("blk.1.attn_qkv.weight");
  const GgufTensorInfo* up = m.file->FindTensor("blk.1.ffn_up.weight");
  ASSERT_TRUE(qkv && up);
  const size_t row = RowBytes(TensorType::kQ8_0, 256);
  EXPECT_EQ(l.wq.data, qkv->data);
  EXPECT_EQ(l.wk.data, qkv->data + 256 * row);
  EXPECT_EQ(l.wv.data, qkv->data + 512 * row);
  EXPECT_EQ(l.wv.out, 256);
  EXPECT_EQ(l.w_gate.data, up->data);  // gate rows first, as llama.cpp's phi3 graph splits ffn_up
  EXPECT_EQ(l.w_up.data, up->data + 256 * row);
}

TEST(Architectures, LlamaWindowAppliesToEveryLayer) {
  EXPECT_EQ(Windows(Config("tiny-mistral-swa")), std::vector<int64_t>(4, 40));
  EXPECT_EQ(Windows(Config("tiny-nemo")), std::vector<int64_t>(4, 0));
  EXPECT_EQ(Config("tiny-nemo").q_dim(), 256);  // Mistral Nemo: q_dim != n_embd (96)
}

TEST(Architectures, VocabularyOnlyFileSaysSo) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto file = GgufFile::Open(TestDataPath("vocab/ggml-vocab-phi-3.gguf"));
  ASSERT_TRUE(file.ok());
  auto r = Model::Load(std::shared_ptr<const GgufFile>(std::move(file).value()), {.pack_weights = false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no tensors (a vocabulary-only GGUF?)"), std::string::npos)
      << r.status().message();
}

TEST(Architectures, PoolingTypeFromTheFile) {
  EXPECT_EQ(Config("tiny").pooling, Pooling::kNone);  // no key
  const std::pair<uint32_t, Pooling> cases[] = {{0, Pooling::kNone}, {1, Pooling::kMean},
                                                {2, Pooling::kCls},  {3, Pooling::kLast},
                                                {4, Pooling::kRank}, {5, Pooling::kNone}};
  for (const auto& [value, pooling] : cases) {
    Edit edit;
    edit.set_keys = {{"qwen3.pooling_type", GgufValue::Uint32(value)}};
    EXPECT_EQ(Config("tiny-qwen3", edit).pooling, pooling) << value;  // 4: rank (a reranker)
  }
  // Bidirectional attention (encoder-style embedding models) is refused, not run causally.
  Edit bidirectional;
  bidirectional.set_keys = {{"qwen3.attention.causal", GgufValue::Bool(false)}};
  EXPECT_NE(ConfigError("tiny-qwen3", bidirectional).find("attention.causal is false"), std::string::npos);
  Edit causal;
  causal.set_keys = {{"qwen3.attention.causal", GgufValue::Bool(true)}};
  Config("tiny-qwen3", causal);
}

}  // namespace
}  // namespace lockstep::testing
