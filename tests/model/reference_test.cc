// The fast forward pass against the naive double-precision reference (tests/model/reference_forward.h) on
// tiny random models of every architecture and every weight type.
#include <gtest/gtest.h>

#include <cmath>

#include "model/reference_forward.h"
#include "model/test_models.h"
#include "testing/testdata.h"

namespace lockstep::testing {
namespace {

struct ReferenceCase {
  std::string shape;
  std::string types;  // make-model's --type
  // max |fast - reference| relative to max |reference logit|. Float weights meet f32 activations (~1e-7
  // seen); quantized weights meet activations quantized to 8 bits per block (~0.4-0.9% seen).
  double tolerance;
  int tokens = 21;  // windowed shapes: past their 40-position windows
  // Added with f16 KV (its rounding, amplified by the model: the deeper, sharper architecture shapes more).
  double f16_kv = 5e-4;
  // Added with q8_0 KV (int8 with an f16 scale per 32 values: ~0.4 % per element at most; 0.2-2 % seen
  // in the logits, 1.7 % on tiny-gemma2's f32 weights).
  double q8_kv = 3e-2;
};

std::string Name(const ::testing::TestParamInfo<ReferenceCase>& info) {
  return TestParamName(info.param.shape + "_" + info.param.types);
}

class ReferenceTest : public ::testing::TestWithParam<ReferenceCase> {};

TEST_P(ReferenceTest, FastPathMatchesReference) {
  const ReferenceCase& c = GetParam();
  LoadedModel m = LoadModelOrDie(TinyModelPath(c.shape, c.types));
  ASSERT_NE(m.model, nullptr);
  const int64_t vocab = m.model->config().n_vocab;
  std::vector<int32_t> tokens;
  for (int i = 0; i < c.tokens; ++i) tokens.push_back(int32_t((i * 37 + 11) % vocab));
  auto reference = ReferenceForward(*m.file, tokens);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  ThreadPool pool(2);
  // Prefill in chunks of 5 then row by row: positions cross a 16-token block boundary.
  for (KvDtype dtype : {KvDtype::kF32, KvDtype::kF16, KvDtype::kQ8_0}) {
    const std::vector<std::vector<float>> fast = RunSequence(*m.model, tokens, 5, dtype, pool);
    ASSERT_EQ(fast.size(), tokens.size());
    double max_ref = 0, max_err = 0;
    for (size_t t = 0; t < tokens.size(); ++t) {
      for (int64_t v = 0; v < vocab; ++v) {
        max_ref = std::max(max_ref, std::abs((*reference)[t][v]));
        max_err = std::max(max_err, std::abs(double(fast[t][v]) - (*reference)[t][v]));
      }
    }
    const double tol = c.tolerance + (dtype == KvDtype::kF16    ? c.f16_kv
                                      : dtype == KvDtype::kQ8_0 ? c.q8_kv
                                                                : 0.0);
    std::printf("[ reference] %s %s kv %s: max |fast - reference| / max |reference| = %.2e\n",
                c.shape.c_str(), c.types.c_str(), KvDtypeName(dtype), max_err / max_ref);
    EXPECT_GT(max_ref, 0.0);
    EXPECT_LE(max_err, tol * max_ref)
        << "kv " << KvDtypeName(dtype) << " max_err " << max_err << " max_ref " << max_ref;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, ReferenceTest,
    ::testing::Values(
        ReferenceCase{"tiny", "f32", 1e-5}, ReferenceCase{"tiny", "f16", 1e-5},
        ReferenceCase{"tiny", "bf16", 1e-5}, ReferenceCase{"tiny", "q8_0", 1.5e-2},
        ReferenceCase{"tiny", "q4_0", 1.5e-2}, ReferenceCase{"tiny-qwen2", "f32", 1e-5},
        ReferenceCase{"tiny-qwen2", "f16", 1e-5}, ReferenceCase{"tiny-qwen2", "bf16", 1e-5},
        ReferenceCase{"tiny-qwen2", "q8_0", 1.5e-2}, ReferenceCase{"tiny-qwen2", "q4_0", 1.5e-2},
        // K-quants need rows of 256: tiny-256 (q4_k_m mixes q4_K and q6_K matrices, q4_k_s q4_K
        // and q5_K, q5_k_m q5_K and q6_K). Its
        // logits carry more activation-quantization error (q8_0 there: 2.2-2.8% seen).
        ReferenceCase{"tiny-256", "q4_k", 4e-2}, ReferenceCase{"tiny-256", "q6_k", 4e-2},
        ReferenceCase{"tiny-256", "q4_k_m", 4e-2}, ReferenceCase{"tiny-256", "q5_k", 4e-2},
        ReferenceCase{"tiny-256", "q5_k_m", 4e-2}, ReferenceCase{"tiny-256", "q4_k_s", 4e-2},
        // One shape per architecture difference (model/architectures.h), 26 layers for
        // Gemma 2: their errors grow more through the layers (f16 KV up to 1.1e-3, q8_0 /
        // q4_0 activations 2.7-6.7% seen).
        ReferenceCase{"tiny-qwen3", "f32", 1e-5}, ReferenceCase{"tiny-qwen3", "q8_0", 5e-2},
        ReferenceCase{"tiny-internlm2", "f32", 1e-5, 21, 8e-4},
        // StarCoder2: its peer golden is loose (mainline's f16 GELU table, peer_golden_test.cc).
        ReferenceCase{"tiny-starcoder2", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-starcoder2", "q8_0", 5e-2, 21, 8e-4},
        // GPT-NeoX: the parallel FFN from its own norm, and the sequential form.
        ReferenceCase{"tiny-gptneox", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-gptneox", "q8_0", 5e-2, 21, 8e-4},
        ReferenceCase{"tiny-gptneox-sequential", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-falcon", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-falcon-40b", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-nemotron", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-gpt2", "f32", 1e-5, 21, 8e-4}, ReferenceCase{"tiny-gpt2", "q8_0", 5e-2, 21, 8e-4},
        ReferenceCase{"tiny-starcoder", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-chatglm", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-chatglm", "q8_0", 5e-2, 21, 8e-4},
        // bloom: ALiBi (12 heads: both series of slopes), token_embd_norm.
        ReferenceCase{"tiny-bloom", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-bloom", "q8_0", 5e-2, 21, 8e-4},
        // mpt: ALiBi, no biases, a clamped attn_qkv.
        ReferenceCase{"tiny-mpt", "f32", 1e-5, 21, 8e-4}, ReferenceCase{"tiny-mpt", "q8_0", 5e-2, 21, 8e-4},
        // qwen: fused QKV with bias, NeoX; plamo: the FFN beside the attention under RMSNorm.
        ReferenceCase{"tiny-qwen", "q8_0", 5e-2, 21, 8e-4},
        ReferenceCase{"tiny-plamo", "f32", 1e-5, 21, 8e-4},
        // refact: llama's layers, multi-query, ALiBi (no key: max bias 8); Baichuan-13B: 40 layers, ALiBi.
        ReferenceCase{"tiny-refact", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-refact", "q8_0", 5e-2, 21, 8e-4},
        ReferenceCase{"tiny-baichuan-13b", "f32", 1e-5, 21, 8e-4},
        // codeshell: gpt2's layers with GQA and NeoX RoPE.
        ReferenceCase{"tiny-codeshell", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-codeshell", "q8_0", 5e-2, 21, 8e-4},
        // jais: ALiBi, 1 / head_dim, SwiGLU with biases.
        ReferenceCase{"tiny-jais", "f32", 1e-5, 21, 8e-4}, ReferenceCase{"tiny-jais", "q8_0", 5e-2, 21, 8e-4},
        // deci: layers with their own KV heads, linear attention, none, and (Ultra) without an FFN.
        ReferenceCase{"tiny-deci", "f32", 1e-5, 21, 8e-4}, ReferenceCase{"tiny-deci", "q8_0", 5e-2, 21, 8e-4},
        ReferenceCase{"tiny-deci-ultra", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-olmo", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-olmo-0424", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-olmo-0424", "q8_0", 5e-2, 21, 8e-4},
        ReferenceCase{"tiny-nemotron", "q8_0", 5e-2, 21, 8e-4},
        ReferenceCase{"tiny-falcon-40b", "q8_0", 5e-2, 21, 8e-4},
        ReferenceCase{"tiny-orion", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-orion", "q4_0", 1e-1, 21, 8e-4},
        ReferenceCase{"tiny-minicpm", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-exaone", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-gemma", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-gemma", "q4_0", 1e-1, 21, 8e-4},
        ReferenceCase{"tiny-gemma2", "f32", 1e-5, 90, 1.5e-3},
        ReferenceCase{"tiny-gemma2", "q8_0", 8e-2, 90, 1.5e-3},
        ReferenceCase{"tiny-gemma3", "f32", 1e-5, 90, 2e-3},
        ReferenceCase{"tiny-gemma3", "q4_0", 1e-1, 90, 2e-3},
        // Gemma 4: unit-RMS V heads carry KV rounding into the logits (f16 KV 9.7e-4 seen), and 8-bit
        // activations through ten layers of per-layer inputs move them 14-17%.
        ReferenceCase{"tiny-gemma4", "f32", 1e-5, 90, 3e-3, 8e-2},
        ReferenceCase{"tiny-gemma4", "q8_0", 3e-1, 90, 3e-3, 8e-2},
        // Gemma 4's experts beside the dense FFN: f32 KV 2.0e-6, f16 KV 2.5e-3 seen; q8_0 KV moves the
        // router's choices at many positions (0.42 seen, also with wider routers), so that case only runs.
        ReferenceCase{"tiny-gemma4moe", "f32", 1e-5, 90, 1e-2, 1.0},
        ReferenceCase{"tiny-phi3", "f32", 1e-5, 90, 8e-4}, ReferenceCase{"tiny-phi3", "q8_0", 5e-2, 90, 8e-4},
        ReferenceCase{"tiny-phi3.5", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-phi4-mini", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-phi4-mini", "bf16", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-nemo", "f32", 1e-5, 21, 8e-4}, ReferenceCase{"tiny-glm4", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-ministral3", "f32", 1e-5, 90, 8e-4},
        ReferenceCase{"tiny-ministral3", "q4_0", 1e-1, 90, 8e-4},
        ReferenceCase{"tiny-glm4", "q8_0", 5e-2, 21, 8e-4},
        ReferenceCase{"tiny-qwen35", "f32", 1e-5, 40, 8e-4},
        // q8_0: the random DeltaNet model is sensitive: the reference itself moves by up to 22 % of the
        // largest logit between the f32 and the q8_0 weights, as much as the fast path's int8 activations.
        ReferenceCase{"tiny-qwen35", "q8_0", 3e-1, 40, 8e-4},
        ReferenceCase{"tiny-qwen35moe", "f32", 1e-5, 40, 8e-4, 1e-1},  // q8_0 KV: 2.9e-2 seen (as other MoE)
        ReferenceCase{"tiny-glm4moe", "f32", 1e-5, 21, 8e-4, 1e-1},
        ReferenceCase{"tiny-glm4.6", "f32", 1e-5, 21, 8e-4, 1.5e-1},
        ReferenceCase{"tiny-seed-oss", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-ernie4.5-moe", "f32", 1e-5, 21, 8e-4, 1e-1},
        ReferenceCase{"tiny-dots1", "f32", 1e-5, 21, 8e-4, 3e-1},  // q8_0 KV flips router choices: 0.145
        ReferenceCase{"tiny-bailingmoe2", "f32", 1e-5, 21, 8e-4, 1.5e-1},  // q8_0 KV: 7.2e-2 seen
        // Sigmoid-scored experts behind whole-projection Q/K norms: f16 KV already flips router choices at
        // some positions (3.8e-2 seen; f32 KV 2.4e-7).
        ReferenceCase{"tiny-minimax-m2", "f32", 1e-5, 21, 1e-1, 1e-1},
        ReferenceCase{"tiny-qwen3next", "f32", 1e-5, 40, 8e-4, 1e-1},
        ReferenceCase{"tiny-mistral-swa", "f32", 1e-5, 90, 8e-4},
        // Cohere: LayerNorms, the FFN beside the attention; cohere2 past its window, Command R+ with per-head
        // Q/K LayerNorms through 64 layers.
        ReferenceCase{"tiny-cohere2", "f32", 1e-5, 90, 8e-4},
        ReferenceCase{"tiny-cohere2", "q8_0", 5e-2, 90, 8e-4},
        ReferenceCase{"tiny-command-r", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-command-r-plus", "f32", 1e-5, 21, 2e-3},
        ReferenceCase{"tiny-phi2", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-phi2-qkv", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-phi2", "q8_0", 5e-2, 21, 8e-4},
        ReferenceCase{"tiny-stablelm2", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-stablelm2-12b", "f32", 1e-5, 21, 8e-4},
        ReferenceCase{"tiny-mistral-swa", "f16", 1e-5, 90, 8e-4}),
    Name);

// Mixtures of experts: routing, the experts' 3-D tensors, every weight type (K-quant gate/up experts: rows of
// 256 and 512). Float weights with f32 KV stay within 1.3e-6 of the reference. Quantized activations and
// q8_0 KV move the router logits enough to flip a near-tied choice of expert at some positions, which the
// rest of the sequence then carries (quantized weights 2.1-4.7% seen; q8_0 KV up to 3.6% on bf16 weights and
// 12% on q6_k).
INSTANTIATE_TEST_SUITE_P(Experts, ReferenceTest,
                         ::testing::Values(ReferenceCase{"tiny-qwen3moe", "f32", 1e-5, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-qwen3moe", "bf16", 1e-5, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-qwen3moe", "q8_0", 6e-2, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-qwen3moe", "q4_k", 6e-2, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-mixtral", "f32", 1e-5, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-mixtral", "f16", 1e-5, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-mixtral", "q4_0", 6e-2, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-mixtral", "q4_k_m", 6e-2, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-mixtral", "q6_k", 6e-2, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-qwen2moe", "f32", 1e-5, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-qwen2moe", "q8_0", 6e-2, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-qwen2moe", "q4_k_m", 6e-2, 21, 8e-4, 1e-1},
                                           // olmoe (whole-width Q/K norms, weights not renormalised) and
                                           // deepseek (DeepSeek-MoE: a dense layer, shared experts).
                                           ReferenceCase{"tiny-olmoe", "f32", 1e-5, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-olmoe", "q8_0", 6e-2, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-deepseek", "f32", 1e-5, 21, 8e-4, 1e-1},
                                           ReferenceCase{"tiny-deepseek", "q8_0", 6e-2, 21, 8e-4, 1e-1},
                                           // gpt-oss, past its 40-position windows (f32 KV: 1.2e-6 seen).
                                           // Its clamped SwiGLU's outputs reach 56 beside ones near 0: 8-bit
                                           // activations of the down products (q8_0 weights) lose the small
                                           // ones (12-17% seen).
                                           ReferenceCase{"tiny-gpt-oss", "f32", 1e-5, 90, 2e-3, 1e-1},
                                           ReferenceCase{"tiny-gpt-oss", "f16", 1e-5, 90, 2e-3, 1e-1},
                                           ReferenceCase{"tiny-gpt-oss", "q8_0", 2.5e-1, 90, 2e-3, 1e-1},
                                           // deepseek2: latent attention (keys 48 wide, values 32), a
                                           // dense first layer, softmax scores not renormalised, shared
                                           // experts.
                                           ReferenceCase{"tiny-deepseek2", "f32", 1e-5, 21, 2e-3, 1e-1},
                                           ReferenceCase{"tiny-deepseek2", "q8_0", 6e-2, 21, 2e-3, 1e-1},
                                           // + a query LoRA, sigmoid scores chosen with exp_probs_b,
                                           // renormalised and scaled, YaRN acting from position 32.
                                           ReferenceCase{"tiny-deepseek3", "f32", 1e-5, 90, 2e-3, 1e-1},
                                           ReferenceCase{"tiny-deepseek3", "q8_0", 1.5e-1, 90, 2e-3, 1e-1}),
                         Name);

// DeepSeek files as llama.cpp converts them since its MLA rework (attn_kv_b split: the reference multiplies
// by attn_k_b's transposed rows itself; 7.3e-2-8.3e-2 seen at q8_0, whose attn_k_b rows are dequantized to
// f32 at load; 0.14-0.16 with each head's attn_k_b dims reversed) and with V3's group-limited routing (8
// groups, the best 4 used; q8_0 4.6e-2-6.8e-2 seen, 0.13 with the groups ignored).
INSTANTIATE_TEST_SUITE_P(
    Deepseek, ReferenceTest,
    ::testing::Values(ReferenceCase{"tiny-deepseek3-split", "f32", 1e-5, 90, 2e-3, 1e-1},
                      ReferenceCase{"tiny-deepseek3-split", "q8_0", 1.1e-1, 90, 2e-3, 1e-1},
                      ReferenceCase{"tiny-deepseek3-grouped", "f32", 1e-5, 90, 2e-3, 1e-1},
                      ReferenceCase{"tiny-deepseek3-grouped", "q8_0", 1e-1, 90, 2e-3, 1e-1}),
    Name);

}  // namespace
}  // namespace lockstep::testing

namespace lockstep::testing {
namespace {

TEST(ReferenceScaling, Llama3RopeFreqsMatchReference) {
  const std::string dir = ScratchDir("ref");
  MakeModelOptions o;
  o.shape = *FindModelShape("tiny");
  o.shape.llama3_factor = 8;
  o.shape.llama3_original_ctx = 64;  // makes every frequency band (scaled, smoothed, unscaled) appear
  o.shape.rope_freq_base = 500000;
  ASSERT_TRUE(WriteRandomModel(o, dir + "/m.gguf").ok());
  LoadedModel m = LoadModelOrDie(dir + "/m.gguf");
  ASSERT_FALSE(m.model->config().rope_freq_factors.empty());
  std::vector<int32_t> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back((i * 13 + 5) % int32_t(m.model->config().n_vocab));
  auto reference = ReferenceForward(*m.file, tokens);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  ThreadPool pool(1);
  const auto fast = RunSequence(*m.model, tokens, 16, KvDtype::kF32, pool);
  double max_ref = 0, max_err = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    for (size_t v = 0; v < fast[t].size(); ++v) {
      max_ref = std::max(max_ref, std::abs((*reference)[t][v]));
      max_err = std::max(max_err, std::abs(double(fast[t][v]) - (*reference)[t][v]));
    }
  }
  EXPECT_LE(max_err, 1e-5 * max_ref);
}

}  // namespace
}  // namespace lockstep::testing
