// ModelConfig: the hyper-parameters of a decoder-only transformer, read from GGUF metadata
// (`general.architecture`, `<arch>.embedding_length`, ...) and the token embedding's shape. Everything the
// forward pass needs comes from here; nothing is hard-coded per model file. Architectures differ only in the
// fields of the "architecture differences" block below, each set by model/architectures.cc from the keys and
// conventions of llama.cpp's converter (and named where model/transformer*.cc uses it). Value type,
// immutable once parsed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"

namespace lockstep {

// How RoPE pairs the dimensions of a head: kNormal rotates adjacent pairs (x[2i], x[2i+1]) — llama.cpp's
// layout for `llama` (its converter permutes the Q/K weights for it); kNeox rotates (x[i], x[i + n_rot/2]) —
// `qwen2`, `qwen3`, `qwen3moe`, `phi3`, `gemma2`, `gemma3`.
enum class RopeMode { kNormal, kNeox };

// kLongRope: Phi-3's `longrope`/`su` scaling: per-pair divisors of theta from the rope_factors_long or
// rope_factors_short tensor, and cos/sin scaled by rope.scaling.attn_factor. kYarn: YaRN as ggml's rope
// applies it (gpt-oss; model/rope.h): per pair a mix of the interpolated (theta / factor) and the original
// theta, ramped between the correction dims of yarn_beta_fast and yarn_beta_slow at rope_orig_ctx, and
// cos/sin scaled by rope_attn_factor * (1 + 0.1 ln factor).
enum class RopeScaling { kNone, kLinear, kLlama3, kLongRope, kYarn };

// The activation of the gated feed-forward network: SiLU(gate) * up (SwiGLU), GELU(gate) * up with
// GELU's tanh approximation (GeGLU, Gemma), or gpt-oss's clamped SwiGLU (tensor/activations.h SwiGluOai:
// the gate's SiLU with alpha 1.702 times up + 1, both clamped at 7). The ungated FFN (ungated_ffn) applies
// GELU's tanh form to up for kSilu and kGeluTanh alike, or the squared ReLU (kReluSquared, nemotron).
enum class FfnActivation { kSilu, kGeluTanh, kSwiGluOai, kReluSquared };

// The most experts a mixture-of-experts layer may have (<arch>.expert_count; llama.cpp's limit).
inline constexpr int64_t kMaxExperts = 512;

// The largest attention head size accepted (attention kernels widen one head vector on the stack).
inline constexpr int64_t kMaxHeadDim = 4096;

// How one layer attends (Gemma 2 and 3 alternate windowed "local" layers with global ones).
struct LayerAttention {
  // A row at position p sees the keys at positions (p - window, p] (the `window` latest, its own
  // included, as llama.cpp's mask: p - key_position < window); 0: all of [0, p].
  int64_t window = 0;
  // RoPE with rope_freq_base_local and no scaling instead of the global RoPE (Gemma 3's local layers).
  bool local_rope = false;
  // False: Q and K are not rotated at all (SmolLM3's "NoPE" layers, every fourth one).
  bool rope = true;
  // Gemma 4: the layer's head size and KV head count (0: ModelConfig's head_dim and n_head_kv).
  int64_t head_dim = 0;
  int64_t n_head_kv = 0;
  // Gemma 4's shared-KV layers (the last <arch>.attention.shared_kv_layers): the earlier layer whose K/V
  // this one attends to, storing none of its own; -1: its own.
  int32_t kv_from = -1;
  // A Gated DeltaNet linear-attention layer instead of attention (qwen35: all but every
  // full_attention_interval-th layer; model/delta_net.h): it reads and writes its sequence's recurrent
  // state and has no K/V in the KV cache (ModelConfig::StoresKv).
  bool recurrent = false;
  // deci (model/deci_config.h): no attention at all (no attn_norm; the FFN reads the residual stream as it
  // is), or "linear attention": attn_output applied to attn_norm's output. Neither stores K/V.
  bool no_attention = false;
  bool linear_attention = false;
};

// Gated DeltaNet linear attention (qwen35; model/delta_net.h), from <arch>.ssm.* as llama.cpp names them.
// Its per-sequence state, for each recurrent layer: the short convolution's last conv_kernel - 1 inputs of
// ConvChannels() channels, and one [head_v_dim][head_k_dim] matrix per value head.
struct DeltaNetConfig {
  int64_t conv_kernel = 0;  // ssm.conv_kernel
  int64_t k_heads = 0;      // ssm.group_count: query/key heads
  int64_t v_heads = 0;      // ssm.time_step_rank: value heads (a multiple of k_heads)
  int64_t head_k_dim = 0;   // ssm.state_size
  int64_t head_v_dim = 0;   // ssm.inner_size / v_heads
  // Value head h reads query/key head h % k_heads (qwen35's separate ssm_alpha/ssm_beta files), as
  // ik_llama.cpp does; false: h / (v_heads / k_heads) (qwen3next).
  bool tiled_heads = true;
  // qwen3next: the input projections are ssm_in, per key head [q | k | v | z] (head_k_dim, head_k_dim, then
  // v_heads / k_heads value heads of v and of z), and ssm_ba, per key head [beta | alpha] of its value
  // heads; false: qwen35's attn_qkv, attn_gate, ssm_beta and ssm_alpha.
  bool fused_projections = false;

  int64_t key_dim() const { return k_heads * head_k_dim; }
  int64_t value_dim() const { return v_heads * head_v_dim; }
  int64_t ConvChannels() const { return 2 * key_dim() + value_dim(); }  // [q | k | v] of attn_qkv
  // Floats of one layer's state: the conv window, then the matrices.
  int64_t ConvFloats() const { return (conv_kernel - 1) * ConvChannels(); }
  int64_t LayerStateFloats() const { return ConvFloats() + v_heads * head_v_dim * head_k_dim; }
};

// How an embedding pools the final hidden states of a prompt (llama.cpp's pooling types, the values of
// `<arch>.pooling_type`): kMean averages every position's, kCls takes the first position's, kLast the last's;
// kRank (a reranker's file) takes the last position's and applies the model's classifier head to it
// (model/classifier.h). kNone: no pooling named (the key absent, 0, or an unknown kind).
enum class Pooling { kNone = 0, kMean = 1, kCls = 2, kLast = 3, kRank = 4 };

// "none" | "mean" | "cls" | "last" | "rank".
const char* PoolingName(Pooling pooling);

struct ModelConfig {
  std::string architecture;  // one of SupportedArchitectures(): the layers lockstep runs
  // general.architecture as the file writes it, the prefix of its keys ("<arch>.*" below): `architecture`
  // but for the text part of a vision-language file (TextArchitecture in model/architectures.h).
  std::string file_architecture;
  std::string name;         // general.name, if any
  int64_t n_vocab = 0;      // rows of token_embd
  int64_t n_ctx_train = 0;  // <arch>.context_length
  int64_t n_embd = 0;       // <arch>.embedding_length
  int64_t n_layer = 0;      // <arch>.block_count
  int64_t n_ff = 0;         // <arch>.feed_forward_length
  int64_t n_head = 0;       // <arch>.attention.head_count
  int64_t n_head_kv = 0;    // <arch>.attention.head_count_kv (default n_head)
  int64_t head_dim = 0;     // <arch>.attention.key_length (default n_embd / n_head)
  // <arch>.attention.value_length (default head_dim): the width of a value head, and of a head's attention
  // output; only deepseek2 files may make it differ from head_dim.
  int64_t value_dim = 0;
  float rms_eps = 1e-5f;  // <arch>.attention.layer_norm_rms_epsilon (bert: layer_norm_epsilon)
  // <arch>.attention.causal: false for `bert` alone (a bidirectional encoder, model/bert_encoder.h: every
  // token of a sequence attends to all of it, so a sequence is computed whole, in one forward pass).
  bool causal = true;
  bool qkv_bias = false;             // attn_{q,k,v}.bias present (qwen2, gpt-oss)
  bool attn_output_bias = false;     // attn_output.bias present (gpt-oss)
  Pooling pooling = Pooling::kNone;  // <arch>.pooling_type: what an embedding model's file says to use

  // RoPE.
  RopeMode rope_mode = RopeMode::kNormal;
  int64_t rope_dim = 0;          // <arch>.rope.dimension_count (default head_dim), rotated dims per head
  float rope_freq_base = 10000;  // <arch>.rope.freq_base
  RopeScaling rope_scaling = RopeScaling::kNone;
  float rope_scale_factor = 1;  // linear: positions divided by it; llama3: the long-wavelength factor
  float rope_low_freq_factor = 1;
  float rope_high_freq_factor = 4;
  int64_t rope_orig_ctx = 8192;  // llama3, longrope, yarn: <arch>.rope.scaling.original_context_length
  // Per rotated pair i (rope_dim / 2 entries): theta_i is divided by rope_freq_factors[i] (llama3 scaling,
  // from the `rope_freqs.weight` tensor when present, else computed from the keys; longrope: the chosen
  // factors tensor). Empty: all 1.
  std::vector<float> rope_freq_factors;
  // longrope, yarn: cos and sin are multiplied by it (so every q·k by its square),
  // <arch>.rope.scaling.attn_factor (yarn: times YaRN's own 1 + 0.1 ln factor, model/rope.h).
  float rope_attn_factor = 1;
  // yarn: <arch>.rope.scaling.yarn_{ext_factor,beta_fast,beta_slow} (llama.cpp's defaults 1, 32, 1).
  float yarn_ext_factor = 1;
  // yarn: <arch>.rope.scaling.yarn_log_multiplier, transformers' mscale_all_dim (0 when absent): YaRN's
  // magnitude is then get_mscale(factor) / get_mscale(factor, it), get_mscale(f, m) = 1 + 0.1 m ln f, as
  // transformers computes attention_factor and llama.cpp since its PR 17945 (Ministral 3 writes 1: none).
  float yarn_beta_fast = 32;
  float yarn_beta_slow = 1;
  float yarn_log_mul = 0;
  // Llama 4's query temperature (mistral3: <arch>.attention.temperature_scale beta, 0 = none): every query
  // is multiplied, after RoPE, by 1 + beta ln(1 + floor(position / attn_temperature_length)), the length
  // <arch>.attention.temperature_length or rope.scaling.original_context_length (QueryTemperature,
  // model/rope.h).
  float attn_temperature_scale = 0;
  int64_t attn_temperature_length = 0;

  // ---- Architecture differences (model/architectures.cc sets them; model/transformer*.cc apply them).
  // qwen3, gemma3: RMSNorm (rms_eps) of every head of Q and of K with attn_q_norm / attn_k_norm [head_dim],
  // after the projections and before RoPE. olmo2 (qk_norm_whole): one RMSNorm over all of Q [q_dim] and one
  // over all of K [kv_dim].
  bool qk_norm = false;
  bool qk_norm_whole = false;
  // command-r (Command R+), stablelm (StableLM 2 12B): Q/K head norms with a weight per head, attn_{q,k}_norm
  // [n_head][head_dim].
  bool qk_norm_per_head = false;
  // command-r, cohere2, stablelm, phi2, starcoder2, gptneox, orion, falcon, nemotron, olmo: LayerNorm (eps:
  // <arch>.attention.layer_norm_epsilon, kept in rms_eps) wherever the others RMSNorm: attn_norm, ffn_norm,
  // output_norm and the Q/K head norms.
  bool layer_norm = false;
  // stablelm, phi2, starcoder2, gptneox, orion, falcon, nemotron: those LayerNorms (but the Q/K ones) add a
  // bias: attn_norm.bias, ffn_norm.bias, output_norm.bias.
  bool norm_bias = false;
  // phi2, starcoder2, gptneox, falcon, nemotron: the FFN is not gated: ffn_up (+ ffn_up.bias) -> GELU (tanh
  // form; nemotron: the squared ReLU) -> ffn_down (+ ffn_down.bias; ffn_bias).
  bool ungated_ffn = false;
  // phi3, glm4, chatglm: the gated FFN's gate and up projections are one ffn_up of [gate | up] rows (as
  // llama.cpp's converter keeps them), where the file has no ffn_gate.
  bool fused_gate_up = false;
  // phi2, starcoder2, gptneox (nemotron: where the file has them): that FFN adds ffn_up.bias and
  // ffn_down.bias. jais: the gated FFN adds ffn_gate.bias and ffn_up.bias before SwiGLU, ffn_down.bias after;
  // jina-bert-v2: its GeGLU adds ffn_down.bias alone.
  bool ffn_bias = false;
  bool output_bias = false;  // phi2: output.bias added to the logits
  // command-r, cohere2, StableLM 2 12B, phi2: the FFN reads the attention's normed input (attn_norm's; no
  // ffn_norm), and the attention's and the FFN's outputs both join the residual stream (x + attention, then +
  // FFN).
  bool parallel_ffn = false;
  // gptneox with use_parallel_residual: that parallel FFN reads its own ffn_norm (with bias) of the layer's
  // input, not attn_norm's output (x + attention(attn_norm(x)) + FFN(ffn_norm(x))).
  bool parallel_ffn_norm = false;
  // falcon with attn_norm_2 (Falcon-40B): the attention reads attn_norm_2 (with its bias) and the parallel
  // FFN its own norm attn_norm (parallel_ffn_norm).
  bool attn_norm_2 = false;
  // false (olmo2): no attn_norm / ffn_norm; the residual stream goes into the attention and FFN as it is.
  bool pre_norms = true;
  // false (olmo, OLMo 1): the LayerNorms have no weight (and no bias): their tensors are absent and the
  // weights are bound as ones (x 1 is exact: llama.cpp's norm without a weight, bit for bit).
  bool norm_weights = true;
  // gpt2, starcoder: learned absolute positions: row `position` of position_embd [n_ctx_train][n_embd] is
  // added to each token's embedding, no layer rotates (positions beyond n_ctx_train are an error).
  bool learned_positions = false;
  // olmo (OLMo-7B-0424, 0724): Q, K and V clamped to [-clamp_kqv, clamp_kqv] after their projections
  // (<arch>.attention.clamp_kqv; 0 = none).
  float clamp_kqv = 0;
  // bloom: token_embd_norm (a LayerNorm with its bias) applied to the embeddings before the first layer.
  bool embedding_norm = false;
  // ALiBi (bloom, mpt, jais: <arch>.attention.max_alibi_bias; refact, Baichuan-13B: 8 unless the file says;
  // 0 = none): no layer rotates, and head h's score for the key at position j from the query at position i
  // gains slope_h * (j - i) (llama.cpp's mask -|i - j| times the slope), the slopes as ggml computes them
  // (AlibiSlopes).
  float max_alibi_bias = 0;
  // gemma2, gemma3: post_attention_norm and post_ffw_norm (RMSNorm) on the attention and FFN outputs before
  // each is added to the residual stream. (Gemma's "1 + w" norm weights: llama.cpp's converter adds the 1
  // when it writes the file, so the GGUF weights are used as they are, like every other norm.)
  bool post_norms = false;
  // gemma2, gemma3: token embeddings multiplied by sqrt(n_embd) (in f32, as llama.cpp does).
  bool scale_embeddings = false;
  // granite: token embeddings multiplied by <arch>.embedding_scale, each attention and FFN output by
  // <arch>.residual_scale before it joins the residual stream (each in f32, as llama.cpp's llama graph
  // does); 0 = none.
  float embedding_multiplier = 0;
  float residual_multiplier = 0;
  // The logits times it (in f32); 0 = none. granite: 1 / <arch>.logit_scale; command-r, cohere2:
  // <arch>.logit_scale.
  float logit_scale = 0;
  FfnActivation ffn_activation = FfnActivation::kSilu;
  // Scale of q·k before the softmax: 1 / sqrt(head_dim), except Gemma 27B (1 / sqrt(n_embd / n_head), its
  // query_pre_attn_scalar, which no GGUF key carries: llama.cpp tells the 27B by its block count).
  float attention_scale = 0;
  // gemma2: attention scores s -> cap * tanh(s / cap) before the softmax (<arch>.attn_logit_softcapping);
  // 0 = none.
  float attn_softcap = 0;
  // gemma2: logits l -> cap * tanh(l / cap) (<arch>.final_logit_softcapping); 0 = none.
  float final_softcap = 0;
  // gpt-oss: attn_sinks [n_head], one learned logit per query head joining the softmax's denominator
  // (model/attention.h AttentionRule::sinks).
  bool attn_sinks = false;
  // gpt-oss: the FFN's pre-norm is named post_attention_norm (llama.cpp's name for it in gpt-oss files).
  bool ffn_norm_is_post_attention_norm = false;
  // <arch>.attention.sliding_window (0 = none) and how each of the n_layer layers attends.
  int64_t sliding_window = 0;
  float rope_freq_base_local = 10000;  // gemma3 local layers: <arch>.rope.freq_base_swa (default 10000)
  std::vector<LayerAttention> layers;
  // Gemma 4 (model/gemma4.h): local layers' RoPE dims and head size (0: rope_dim, head_dim), per-layer FFN
  // widths (empty: n_ff on every layer; n_ff is then the widest; deci's may be 0: no FFN), V heads RMS-normed
  // without a weight, and the width of the per-layer token inputs (<arch>.embedding_length_per_layer_input;
  // 0: none).
  int64_t rope_dim_local = 0;
  int64_t head_dim_local = 0;
  std::vector<int64_t> layer_n_ff;
  bool v_norm = false;
  int64_t n_embd_per_layer = 0;
  // Mixture of experts (qwen3moe, granitemoe, qwen2moe; llama files with experts: Mixtral), model/moe.h: the
  // FFN of every layer is n_expert SwiGLU experts of width n_ff_expert, of which a router (ffn_gate_inp)
  // picks n_expert_used per row: softmax over the router logits, the top n_expert_used, their weights
  // renormalised to sum to 1 (expert_weights_norm).
  int64_t n_expert = 0;       // <arch>.expert_count; 0: a dense FFN of width n_ff
  int64_t n_expert_used = 0;  // <arch>.expert_used_count, 1..n_expert
  int64_t n_ff_expert = 0;    // <arch>.expert_feed_forward_length (default feed_forward_length: Mixtral)
  // false (qwen2moe): the chosen experts' weights are their softmax over all n_expert logits, not
  // renormalised over the chosen ones.
  bool expert_weights_norm = true;
  // gpt-oss: the router has a bias (ffn_gate_inp.bias [n_expert], added to the logits before the top
  // n_expert_used are chosen and their softmax taken) and so has every expert's gate, up and down
  // (ffn_{gate,up}_exps.bias [n_ff_expert, n_expert], ffn_down_exps.bias [n_embd, n_expert]).
  bool expert_biases = false;
  // qwen2moe: a shared expert beside the routed ones, a SwiGLU FFN of this width (ffn_{gate,up,down}_shexp,
  // bound as LayerWeights' w_gate / w_up / w_down) whose output is scaled by sigmoid(ffn_gate_inp_shexp . x)
  // (one scalar per row) and added to the experts' (<arch>.expert_shared_feed_forward_length, default
  // feed_forward_length); 0: none.
  int64_t n_ff_shared = 0;
  // false (deepseek2): the shared expert's output is added as it is (no ffn_gate_inp_shexp).
  bool shared_expert_gate = true;
  // How the router's logits choose and weigh experts (model/moe.h). kLogits (all but deepseek2): RouteRow,
  // the largest logits, weighted by their softmax. DeepSeek's (RouteScoredRow): the experts' scores are the
  // logits' softmax over all experts (kSoftmax, <arch>.expert_gating_func 1) or each logit's sigmoid
  // (kSigmoid, 2); the chosen experts are those of the largest score + exp_probs_b (expert_selection_bias:
  // the bias chooses, it does not weigh), their weights the scores, renormalised when expert_weights_norm,
  // then times expert_weights_scale (<arch>.expert_weights_scale; 1: none).
  enum class ExpertGating { kLogits, kSoftmax, kSigmoid };
  ExpertGating expert_gating = ExpertGating::kLogits;
  bool expert_selection_bias = false;
  float expert_weights_scale = 1;
  // deepseek2's group-limited routing (<arch>.expert_group_count groups of n_expert / expert_groups
  // consecutive experts, <arch>.expert_group_used_count of them used; 1 and 1: none): before the choice, each
  // group is scored from its experts' choosing scores (score + exp_probs_b) -- kSigmoid: the sum of its two
  // largest (DeepSeek-V3's noaux_tc), kSoftmax: its largest (DeepSeek-V2's group_limited_greedy) -- and only
  // the experts of the expert_groups_used best groups may be chosen.
  int64_t expert_groups = 1;
  int64_t expert_groups_used = 1;
  // deepseek2: the first <arch>.leading_dense_block_count layers have a dense FFN of width n_ff instead of
  // the experts (FeedForwardExperts(layer) is false for them).
  int64_t n_layer_dense_lead = 0;
  // Gemma 4's mixture of experts (26B-A4B; model/gemma4.h): every layer runs its dense GeGLU FFN (LayerFf,
  // from ffn_norm's input) and GeGLU experts (from pre_ffw_norm_2's) side by side, each output RMS-normed
  // (post_ffw_norm_1, post_ffw_norm_2) before their sum; the router reads the unweighted RMS norm of the
  // layer's input times ffn_gate_inp.scale / sqrt(n_embd), and each chosen expert's weight is times its
  // ffn_down_exps.scale.
  bool dense_beside_experts = false;

  // DeepSeek's multi-head latent attention (deepseek2, kv_lora_rank > 0; model/mla.h). Each head's key is
  // [k_nope (head_dim - rope_dim) | k_rope (rope_dim)], k_rope shared by all heads (attn_kv_a_mqa's last
  // rope_dim rows, rotated), k_nope and the value (value_dim) decompressed from the RMS-normed latent
  // (attn_kv_a_mqa's first kv_lora_rank rows, attn_kv_a_norm) by attn_kv_b; queries by attn_q, or through
  // q_lora_rank (attn_q_a, attn_q_a_norm, attn_q_b). n_head_kv = n_head, head_dim and value_dim: the heads'
  // widths (of the weights and the attention output).
  int64_t q_lora_rank = 0;   // <arch>.attention.q_lora_rank; 0: attn_q
  int64_t kv_lora_rank = 0;  // <arch>.attention.kv_lora_rank; 0: no latent attention
  // The absorbed form (deepseek2's default; false: the decompressed form,
  // ModelLoadOptions::decompressed_mla): the KV cache stores each row's latent once, as one KV head of
  // [k_rope | normed latent] (rope_dim + kv_lora_rank) with the normed latent (kv_lora_rank) as its value,
  // which every query head attends to with attn_kv_b's k_nope rows folded into its query and its value rows
  // applied to its output (model/mla.h).
  bool mla_latent_cache = false;
  // The file splits attn_kv_b into attn_k_b (each head's k_nope rows, transposed: [n_head][kv_lora_rank]
  // rows of head_dim - rope_dim) and attn_v_b (each head's value rows, [n_head][value_dim] rows of
  // kv_lora_rank), as llama.cpp's converter writes DeepSeek files since its MLA rework (with head_count_kv 1,
  // key_length kv_lora_rank + rope_dim and value_length kv_lora_rank for its latent cache, and the heads'
  // widths in attention.key_length_mla / value_length_mla, which head_dim and value_dim hold here).
  bool kv_b_split = false;
  // qwen35: every layer's FFN pre-norm is post_attention_norm (ffn_norm_is_post_attention_norm), the
  // recurrent layers (LayerAttention::recurrent) run Gated DeltaNet, and the attention layers have a gated
  // output: attn_q's rows are [query | gate] per head, and each head's attention output is multiplied by
  // sigmoid(gate) before attn_output. Q/K norms per head as qwen3's; partial NeoX RoPE (rope.dimension_count;
  // the M-RoPE sections of a text token all carry its position, so they rotate as one).
  bool attn_output_gate = false;
  DeltaNetConfig delta_net;

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  int64_t v_dim() const { return n_head_kv * value_dim; }  // a row's values
  int64_t att_dim() const { return n_head * value_dim; }   // a row's attention output, attn_output's input
  // Whether `layer`'s FFN is the experts (n_expert > 0 and past the leading dense layers).
  bool FeedForwardExperts(int64_t layer) const { return n_expert > 0 && layer >= n_layer_dense_lead; }
  // Layer l's head size, KV heads, Q and K/V widths and FFN width (Gemma 4's differ by layer).
  int64_t LayerHeadDim(int64_t l) const {
    return layers[size_t(l)].head_dim > 0 ? layers[size_t(l)].head_dim : head_dim;
  }
  int64_t LayerKvHeads(int64_t l) const {
    return layers[size_t(l)].n_head_kv > 0 ? layers[size_t(l)].n_head_kv : n_head_kv;
  }
  int64_t LayerQDim(int64_t l) const { return n_head * LayerHeadDim(l); }
  int64_t LayerKvDim(int64_t l) const { return LayerKvHeads(l) * LayerHeadDim(l); }
  int64_t LayerFf(int64_t l) const { return layer_n_ff.empty() ? n_ff : layer_n_ff[size_t(l)]; }
  // Layer l's value head width (deepseek2's differs from its keys'; elsewhere the layer's head size), and
  // its attention output's width (attn_output's input).
  int64_t LayerValueDim(int64_t l) const {
    return value_dim > 0 && value_dim != head_dim ? value_dim : LayerHeadDim(l);
  }
  int64_t LayerAttDim(int64_t l) const { return n_head * LayerValueDim(l); }
  // What attention runs at in layer l and the KV cache stores (model/batch.h): KV heads, key (and query
  // head) width, value width. The layer's heads; with mla_latent_cache one KV head of rope_dim +
  // kv_lora_rank key dims and kv_lora_rank value dims.
  int64_t CacheKvHeads(int64_t l) const { return mla_latent_cache ? 1 : LayerKvHeads(l); }
  int64_t CacheHeadDim(int64_t l) const {
    return mla_latent_cache ? rope_dim + kv_lora_rank : LayerHeadDim(l);
  }
  int64_t CacheValueDim(int64_t l) const { return mla_latent_cache ? kv_lora_rank : LayerValueDim(l); }
  // Whether layer l stores K/V (Gemma 4's shared-KV layers read an earlier layer's; recurrent layers keep
  // their sequence's recurrent state instead and read none, deci's layers without attention none), and for an
  // attention layer the index among the layers that store K/V, in order, of the one l reads: its layer in the
  // KV layout (model/batch.h).
  bool StoresKv(int64_t l) const { return layers[size_t(l)].kv_from < 0 && Attends(l); }
  // Whether layer l runs attention over K/V (not recurrent, not deci's attention-free or linear layers).
  bool Attends(int64_t l) const {
    const LayerAttention& layer = layers[size_t(l)];
    return !layer.recurrent && !layer.no_attention && !layer.linear_attention;
  }
  int32_t KvLayer(int64_t l) const;
  // ALiBi's slope of each of the n_head heads (ggml's soft_max: with n = the largest power of 2 <= n_head,
  // m0 = 2^(-max_alibi_bias / n), m1 = 2^(-max_alibi_bias / 2 / n), slope_h = m0^(h + 1) for h < n, else
  // m1^(2 (h - n) + 1), in f32); empty without ALiBi.
  std::vector<float> AlibiSlopes() const;
  // The widest Q, K, V and attention output of any layer, as projected and as attended (Cache*: scratch
  // sizes).
  int64_t MaxQDim() const;
  int64_t MaxKvDim() const;
  int64_t MaxVDim() const;
  int64_t MaxAttDim() const;
  // The widest window when every layer has one (all layers windowed: Mistral 7B v0.1, Phi-3-mini-4k), else
  // 0 (some layer sees every position: Gemma 2/3, or no window at all). Rows at position p and later read no
  // KV below model/attention.h's AttentionStart(kv, p, WidestWindow()): blocks wholly below it are dead.
  int64_t WidestWindow() const;
  // Layers with LayerAttention::recurrent, and the floats of one sequence's recurrent state (all of them;
  // 0 for a plain transformer).
  int64_t RecurrentLayers() const;
  int64_t RecurrentStateFloats() const { return RecurrentLayers() * delta_net.LayerStateFloats(); }
  // What rms_eps is for this file's norms: "layer_norm_eps" (LayerNorm families and encoders) or "rms_eps".
  const char* NormEpsilonName() const { return ReadsLayerNormEpsilon() ? "layer_norm_eps" : "rms_eps"; }
  // The tensors (blk.N.<name>.weight / .bias) of the attention's and the FFN's pre-norms: attn_norm and
  // ffn_norm, but post_attention_norm (ffn_norm_is_post_attention_norm) and Falcon-40B's (attn_norm_2).
  const char* AttnNormTensor() const { return attn_norm_2 ? "attn_norm_2" : "attn_norm"; }
  const char* FfnNormTensor() const {
    return attn_norm_2 ? "attn_norm" : ffn_norm_is_post_attention_norm ? "post_attention_norm" : "ffn_norm";
  }
  // Whether that epsilon comes from <arch>.attention.layer_norm_epsilon (else layer_norm_rms_epsilon).
  bool ReadsLayerNormEpsilon() const { return layer_norm || !causal; }
  // Human-readable one-line summary.
  std::string Summary() const;
  // file_architecture, and for the text of a vision-language file whose layers run it:
  // "qwen3vl (text only, qwen3's layers)".
  std::string ArchitectureLabel() const;

  // Parses the metadata of `file`. Unsupported architectures, missing or inconsistent keys give a clear
  // error naming the key.
  static Result<ModelConfig> FromGguf(const GgufFile& file);
};

// Architectures this runtime can run.
const std::vector<std::string>& SupportedArchitectures();

// llama3-style per-pair divisors of theta (as llama.cpp's converter writes `rope_freqs`), rope_dim / 2
// entries.
std::vector<float> Llama3RopeFreqFactors(int64_t rope_dim, float freq_base, float factor,
                                         float low_freq_factor, float high_freq_factor, int64_t orig_ctx);

}  // namespace lockstep
