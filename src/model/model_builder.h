// Random-weight model files in the real shapes of known models (`lockstep make-model`, tests, benchmarks).
// Weights are normal(0, weight_std) from a seeded generator (one stream per tensor, so the same seed gives
// the same file), norms are 1.0, 1-D tensors are F32 (as llama.cpp writes them), 2-D tensors are in the
// chosen weight types (MakeModelOptions). Tensor names and metadata follow llama.cpp's conventions so other
// GGUF tools load the file. The vocabulary is copied from another GGUF file (`tokenizer.*` keys; the vocab
// size follows it) or is a small built-in byte-level BPE vocabulary. Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_value.h"
#include "gguf/tensor_type.h"

namespace lockstep {

struct ModelShape {
  std::string name;  // e.g. "smollm2-135m"
  std::string architecture = "llama";
  int64_t n_embd = 64;
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t n_ff = 96;
  int64_t n_ctx = 256;
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool qkv_bias = false;
  // Per-head Q/K norms where the architecture has them optionally (glm4moe: GLM-4.5 and 4.6, not Air;
  // command-r: Command R+, stablelm: StableLM 2 12B, a weight per head, [n_head][head_dim]).
  bool qk_norm = false;
  // stablelm: no ffn_norm, the FFN beside the attention (StableLM 2 12B's parallel residual); gptneox: the
  // FFN beside the attention from its own ffn_norm (written as use_parallel_residual).
  bool parallel_ffn = false;
  // falcon: attn_norm_2 (with its bias) beside attn_norm, as Falcon-40B's files have it.
  bool attn_norm_2 = false;
  // olmo: <arch>.attention.clamp_kqv (0: the key is not written).
  float clamp_kqv = 0;
  // bloom: <arch>.attention.max_alibi_bias (0: the key is not written).
  float max_alibi_bias = 0;
  // phi2: one attn_qkv [q | k | v] (with attn_qkv.bias), as older phi-2 conversions have it.
  bool fused_qkv = false;
  bool tied_embeddings = true;
  // llama3 rope scaling (written as the rope_freqs tensor); factor 0 = none.
  float llama3_factor = 0;
  float llama3_low_freq_factor = 1;
  float llama3_high_freq_factor = 4;
  int64_t llama3_original_ctx = 8192;
  // Architecture shapes (the tensors follow the architecture: model/architectures.h).
  int64_t head_dim = 0;           // written as attention.key_length; 0: n_embd / n_head
  int64_t rope_dim = 0;           // rope.dimension_count; 0: head_dim (less: partial rotary, Phi-4-mini)
  int64_t sliding_window = 0;     // attention.sliding_window, written when > 0 (phi3, gemma: always)
  float attn_softcap = 0;         // gemma2: attn_logit_softcapping
  float final_softcap = 0;        // gemma2: final_logit_softcapping
  float rope_linear_factor = 0;   // rope.scaling.type linear with this factor (gemma3: global layers only)
  int64_t longrope_orig_ctx = 0;  // phi3: random rope_factors_long/short and attn_factor for this context
  // rope.scaling.type yarn with this factor and original_context_length (gpt-oss); factor 0 = none.
  float yarn_factor = 0;
  int64_t yarn_original_ctx = 4096;
  float yarn_log_mul = 0;            // written as rope.scaling.yarn_log_multiplier when > 0 (Ministral 3: 1)
  float attn_temperature_scale = 0;  // mistral3: attention.temperature_scale when > 0
  // granite: embedding_scale, residual_scale, attention.scale and logit_scale (written for granite and
  // granitemoe, minicpm without attention.scale; logit_scale for command-r and cohere2 too).
  float granite_embedding_scale = 0;
  float granite_residual_scale = 0;
  float granite_attention_scale = 0;
  float logit_scale = 0;
  // gpt-oss (its tensors follow the architecture): attn_sinks [n_head] and attn_output.bias; the FFN's
  // pre-norm named post_attention_norm; F32 biases of the router and of every expert's gate/up/down (the
  // gate/up ones normal(0, this), wide enough that the clamped SwiGLU's limit of 7 is reached).
  float expert_bias_std = 4.0f;
  // Mixture of experts (qwen3moe, qwen2moe, gpt-oss; llama: Mixtral) when n_expert > 0: ffn_gate_inp (F32, as
  // llama.cpp's quantizer keeps it) and ffn_{gate,up,down}_exps in place of the dense FFN; written with
  // expert_count, expert_used_count and (qwen3moe, qwen2moe) expert_feed_forward_length = n_ff_expert.
  // qwen2moe: a shared expert too, ffn_{gate,up,down}_shexp of n_ff_shared
  // (expert_shared_feed_forward_length) and its gate ffn_gate_inp_shexp (F32 [n_embd], as llama.cpp's loader
  // declares it).
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_expert = 0;                                                   // 0: n_ff
  int64_t ExpertFf() const { return n_ff_expert > 0 ? n_ff_expert : n_ff; }  // each expert's width
  int64_t n_ff_shared = 0;
  // qwen35's Gated DeltaNet layers (all but every full_attention_interval-th): ssm.conv_kernel,
  // ssm.group_count (key heads), ssm.time_step_rank (value heads), ssm.state_size (each head's width;
  // ssm.inner_size = value heads x it), and the M-RoPE sections written as rope.dimension_sections.
  int64_t ssm_conv_kernel = 4;
  int64_t ssm_k_heads = 0;
  int64_t ssm_v_heads = 0;
  int64_t ssm_head_dim = 0;
  int64_t full_attention_interval = 4;
  // Standard deviation of the router weights (larger than weight_std: the router logits then spread enough
  // that near-ties between the last chosen expert and the next are rare).
  float router_std = 0.2f;
  // Norm weights 1 + normal(0, 0.2) instead of 1, so that a norm applied to the wrong elements (or a
  // Gemma "1 + w" applied twice) changes the numbers.
  bool random_norms = false;
  // Standard deviation of the random matrix weights. The tiny architecture shapes use more than the
  // default 0.02, so that attention is sharp enough for windows and soft-caps to matter at their widths
  // and greedy continuations depend on the context.
  float weight_std = 0.02f;
  // The built-in vocabulary without the byte tokens 0x80-0xFF (all of its tokens are then valid UTF-8 on
  // their own, which llama-server's JSON needs when it lists every token's probability).
  bool ascii_vocabulary = false;
  // A reranker (llama.cpp's Qwen3-Reranker conversion) when n_cls_out > 0: cls.output.weight (F32, [n_embd,
  // n_cls_out]), <arch>.pooling_type 4 (rank), classifier.output_labels ("yes", "no", then "label2", ...),
  // and, when not empty, the prompt template tokenizer.chat_template.rerank ({query} and {document}).
  int64_t n_cls_out = 0;
  std::string rerank_template;
  // deepseek2 (model/mla.h), written with its keys: attention.value_length (0: head_dim), the latent
  // attention's ranks (attn_q_a / attn_q_a_norm / attn_q_b when q_lora_rank > 0, else attn_q;
  // attn_kv_a_mqa, attn_kv_a_norm, attn_kv_b), leading_dense_block_count dense layers first, then experts
  // with n_expert_shared ungated shared experts (ffn_*_shexp of n_expert_shared x n_ff_expert),
  // expert_gating_func (1 softmax, 2 sigmoid), expert_weights_norm and _scale, and exp_probs_b (F32
  // [n_expert], normal(0, selection_bias_std)) when selection_bias_std > 0.
  int64_t value_dim = 0;
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t n_layer_dense_lead = 0;
  int64_t n_expert_shared = 0;
  int64_t expert_gating = 1;
  bool expert_weights_norm = false;
  float expert_weights_scale = 1;
  float selection_bias_std = 0;
  // deepseek2 as llama.cpp's converter writes it since its MLA rework: attn_kv_b split into attn_k_b (each
  // head's k_nope rows transposed, [n_head][kv_lora_rank][nope]) and attn_v_b ([n_head][value][kv_lora_rank])
  // holding the values the fused attn_kv_b would (the same file's twin), with head_count_kv 1, key_length
  // kv_lora_rank + rope_dim, value_length kv_lora_rank, and the heads' widths as key_length_mla and
  // value_length_mla.
  bool split_kv_b = false;
  // deepseek2's expert_group_count and expert_group_used_count, written when expert_groups > 0.
  int64_t expert_groups = 0;
  int64_t expert_groups_used = 0;
  // gemma4 (model/gemma4.h): head_dim is the global layers' head size, head_dim_local the local ones';
  // every gemma4_global_every-th layer is global, with n_head_kv_global KV heads (written per layer) and no
  // attn_v (V = K); the last shared_kv_layers layers share earlier layers' K/V (no attn_k/v of their own,
  // their FFN twice as wide, written per layer); rope_freqs rotates a quarter of a global head
  // (proportional RoPE); per-layer token inputs of n_embd_per_layer; random layer_output_scale.
  int64_t head_dim_local = 0;
  int64_t gemma4_global_every = 5;
  int64_t n_head_kv_global = 0;
  int64_t shared_kv_layers = 0;
  int64_t n_embd_per_layer = 0;
  // deci (model/deci_config.h): per layer (n_layer entries each, written as arrays) the head count (0: no
  // attention), the KV head count (0 with heads: "linear attention", attn_output alone) and the FFN width
  // (0: no FFN); n_head, n_head_kv and n_ff hold the largest.
  std::vector<int64_t> layer_heads;
  std::vector<int64_t> layer_kv_heads;
  std::vector<int64_t> layer_ff;
};

// Shapes by name (model/model_shapes.cc): tiny (llama, GQA, untied), tiny-qwen2 (qwen2, QKV bias, tied),
// tiny-256 (llama, untied, rows of 256 and 512 elements: K-quant blocks fit), one tiny shape per
// architecture difference (tiny-qwen3, tiny-gemma2, tiny-gemma3, tiny-phi3, tiny-phi3.5, tiny-phi4-mini,
// tiny-nemo, tiny-mistral-swa, tiny-qwen3moe, tiny-mixtral, tiny-granite, tiny-granitemoe, tiny-olmo2,
// tiny-smollm3, tiny-qwen2moe, tiny-gpt-oss, tiny-glm4, tiny-gemma4, tiny-ernie4.5, tiny-qwen2.5vl,
// tiny-qwen3vl, tiny-qwen3vlmoe, tiny-mistral3, tiny-ministral3, tiny-deepseek2, tiny-deepseek3,
// tiny-deepseek3-split (tiny-deepseek3 as newer conversions split it), tiny-deepseek3-grouped (with V3's
// expert groups), tiny-qwen35, tiny-qwen35moe, tiny-qwen3next: real head counts, GQA ratios and window
// patterns, tiny widths, windows and expert counts), tiny-qwen3-reranker (tiny-qwen3 with a yes/no classifier
// head and a rerank template), tiny-bert (a bge-like bidirectional encoder; needs a WordPiece --vocab-from),
// tiny-bert-reranker (with BERT's cls + cls.output head), small-qwen3moe (Qwen3-30B-A3B's plan at a quarter
// of its width, 64 experts: for benchmarks of the expert products), small-qwen2moe (likewise
// Qwen2-57B-A14B's, with its shared expert), small-gpt-oss (gpt-oss-20b's plan at a fifth of its width), and
// real ones: stories15m, smollm2-135m, qwen2-0.5b, llama-1b, qwen3-0.6b, gemma2-2b, gemma3-1b.
Result<ModelShape> FindModelShape(const std::string& name);
std::vector<std::string> ModelShapeNames();

enum class KQuantMix { kNone, kQ4KM, kQ4KS, kQ5KM, kQ5KS };

struct MakeModelOptions {
  ModelShape shape;
  // Type of every 2-D tensor: f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k,
  // iq4_nl, iq4_xs or mxfp4. K-quant (and iq4_xs) tensors whose rows are not a multiple of 256 elements are
  // written as llama.cpp's quantizer writes them: q5_0 / q5_1 / q8_0 / iq4_nl for q4_k / q5_k / q6_k / q2_k,
  // q3_k and iq4_xs.
  TensorType type = TensorType::kF32;
  // One of llama.cpp's K-quant mixes (llama_tensor_get_type for a dense, non-Falcon model), made of `type`
  // (q4_k for q4_k_m / q4_k_s, q5_k for q5_k_m / q5_k_s) except: q6_k for the output matrix (token_embd
  // when the embeddings are tied) in every mix; q4_k_m and q5_k_m: q6_k for attn_v (and phi3's attn_qkv) and
  // ffn_down of the layers UsesMoreBits picks; q4_k_s: q5_k for attn_v of the first 4 layers and ffn_down of
  // the first eighth.
  KQuantMix mix = KQuantMix::kNone;
  std::string vocab_from;  // GGUF file whose tokenizer.* metadata is copied; "" = built-in vocab
  uint64_t seed = 1;
};

// Weight types by their make-model names: f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k,
// q6_k, iq4_nl, iq4_xs, mxfp4, and the mixes q4_k_m, q4_k_s, q5_k_m, q5_k_s (set type and mix).
// InvalidArgument naming the choices for any other name.
Status SetWeightTypes(const std::string& name, MakeModelOptions& options);
std::string WeightTypeNames();  // "f32|f16|...|q5_k_s"

// Q4_K_M's and Q5_K_M's rule for the layers whose attn_v and ffn_down get 6 bits: the first and last eighth
// of the layers and every third one between them.
bool UsesMoreBits(int64_t layer, int64_t n_layer);

// The built-in vocabulary's tokenizer.* metadata (gpt2 model, 256 byte tokens -- or the 128 ASCII ones --, a
// few merges, <|endoftext|>).
std::vector<std::pair<std::string, GgufValue>> BuiltinVocabulary(bool ascii_only = false);

// Writes the model to `path`. InvalidArgument for a type the shape cannot use (row length not a multiple of
// the block size, for K-quants of their 32-element fallback's), a mix without its base type, or an unreadable
// vocab file.
Status WriteRandomModel(const MakeModelOptions& options, const std::string& path);

}  // namespace lockstep
