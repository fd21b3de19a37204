#include "model/model_builder.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/architectures.h"
#include "model/model_config.h"
#include "model/tensor_plan.h"
#include "tensor/dequantize.h"

namespace lockstep {
namespace {

// Phi-3's longrope attention factor, as llama.cpp's converter computes it from the context ratio.
float LongRopeAttnFactor(const ModelShape& s) {
  const double scale = double(s.n_ctx) / double(s.longrope_orig_ctx);
  return scale > 1 ? float(std::sqrt(1 + std::log(scale) / std::log(double(s.longrope_orig_ctx)))) : 1.0f;
}

// general.file_type, llama.cpp's LLAMA_FTYPE_MOSTLY_* numbering.
int64_t FileTypeOf(const MakeModelOptions& o) {
  switch (o.mix) {
    case KQuantMix::kQ4KS:
      return 14;
    case KQuantMix::kQ4KM:
      return 15;
    case KQuantMix::kQ5KS:
      return 16;
    case KQuantMix::kQ5KM:
      return 17;
    case KQuantMix::kNone:
      break;
  }
  switch (o.type) {
    case TensorType::kF32:
      return 0;
    case TensorType::kF16:
      return 1;
    case TensorType::kQ4_0:
      return 2;
    case TensorType::kQ8_0:
      return 7;
    case TensorType::kQ5_0:
      return 8;
    case TensorType::kQ5_1:
      return 9;
    case TensorType::kBF16:
      return 32;
    case TensorType::kQ2_K:
      return 10;  // "mostly Q2_K"
    case TensorType::kQ3_K:
      return 11;  // "mostly Q3_K - Small", whose matrices are all Q3_K but the output
    case TensorType::kQ4_K:
      return 14;  // "mostly Q4_K"
    case TensorType::kQ5_K:
      return 16;
    case TensorType::kQ6_K:
      return 18;
    case TensorType::kIQ4_NL:
      return 25;
    case TensorType::kIQ4_XS:
      return 30;
    case TensorType::kMXFP4:
      return 38;  // "MXFP4 MoE", llama.cpp's name for gpt-oss files
    default:
      return 0;
  }
}

void SetGemma4Metadata(const ModelShape& s, GgufWriter& w) {
  const std::string a = s.architecture + ".";
  std::vector<GgufValue> pattern;
  std::vector<int32_t> kv_heads, ff;
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const bool global = Gemma4Global(s, l);
    pattern.push_back(GgufValue::Bool(!global));
    kv_heads.push_back(int32_t(global && s.n_head_kv_global > 0 ? s.n_head_kv_global : s.n_head_kv));
    ff.push_back(int32_t(Gemma4Ff(s, l)));
  }
  w.Set(a + "attention.sliding_window_pattern", GgufValue::MakeArray(GgufType::kBool, std::move(pattern)));
  w.Set(a + "attention.head_count_kv", GgufValue::Int32Array(kv_heads));
  w.Set(a + "feed_forward_length", GgufValue::Int32Array(ff));
  w.Set(a + "attention.shared_kv_layers", GgufValue::Uint32(uint32_t(s.shared_kv_layers)));
  w.Set(a + "attention.key_length_swa", GgufValue::Uint32(uint32_t(s.head_dim_local)));
  w.Set(a + "attention.value_length_swa", GgufValue::Uint32(uint32_t(s.head_dim_local)));
  w.Set(a + "rope.dimension_count_swa", GgufValue::Uint32(uint32_t(s.head_dim_local)));
  w.Set(a + "rope.freq_base_swa", GgufValue::Float32(10000.0f));
  w.Set(a + "embedding_length_per_layer_input", GgufValue::Uint32(uint32_t(s.n_embd_per_layer)));
  w.Set(a + "final_logit_softcapping", GgufValue::Float32(s.final_softcap));
}

Status CopyVocabulary(const std::string& path, GgufWriter& writer, int64_t* n_vocab) {
  auto file = GgufFile::Open(path);
  if (!file.ok()) return file.status().WithContext("--vocab-from");
  bool any = false;
  for (const auto& [key, value] : (*file)->metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) {
      writer.Set(key, value);
      any = true;
    }
  }
  auto tokens = (*file)->GetStringArray("tokenizer.ggml.tokens");
  if (!any || !tokens.ok() || tokens->empty()) {
    return InvalidArgument(path + ": no tokenizer.ggml.tokens to copy (--vocab-from)");
  }
  *n_vocab = static_cast<int64_t>(tokens->size());
  return Status::Ok();
}

// deepseek2's keys (ModelShape's deepseek2 fields).
// DeepSeek's expert keys (deepseek2, glm4moe).
void SetDeepseekExpertMetadata(const ModelShape& s, GgufWriter& w) {
  const std::string& a = s.architecture;
  w.Set(a + ".leading_dense_block_count", GgufValue::Uint32(uint32_t(s.n_layer_dense_lead)));
  w.Set(a + ".expert_shared_count", GgufValue::Uint32(uint32_t(s.n_expert_shared)));
  w.Set(a + ".expert_gating_func", GgufValue::Uint32(uint32_t(s.expert_gating)));
  w.Set(a + ".expert_weights_norm", GgufValue::Bool(s.expert_weights_norm));
  w.Set(a + ".expert_weights_scale", GgufValue::Float32(s.expert_weights_scale));
  if (s.expert_groups > 0) {
    w.Set(a + ".expert_group_count", GgufValue::Uint32(uint32_t(s.expert_groups)));
    w.Set(a + ".expert_group_used_count", GgufValue::Uint32(uint32_t(s.expert_groups_used)));
  }
}

void SetDeepseek2Metadata(const ModelShape& s, GgufWriter& w) {
  const std::string& a = s.architecture;
  if (s.q_lora_rank > 0) w.Set(a + ".attention.q_lora_rank", GgufValue::Uint32(uint32_t(s.q_lora_rank)));
  w.Set(a + ".attention.kv_lora_rank", GgufValue::Uint32(uint32_t(s.kv_lora_rank)));
  SetDeepseekExpertMetadata(s, w);
  if (s.split_kv_b) {  // llama.cpp's widths since its MLA rework: the latent cache's, and the heads' as _mla
    w.Set(a + ".attention.head_count_kv", GgufValue::Uint32(1));
    w.Set(a + ".attention.key_length", GgufValue::Uint32(uint32_t(s.kv_lora_rank + RopeDim(s))));
    w.Set(a + ".attention.value_length", GgufValue::Uint32(uint32_t(s.kv_lora_rank)));
    w.Set(a + ".attention.key_length_mla", GgufValue::Uint32(uint32_t(HeadDim(s))));
    w.Set(a + ".attention.value_length_mla", GgufValue::Uint32(uint32_t(ValueDim(s))));
  }
}

void SetModelMetadata(const MakeModelOptions& o, int64_t n_vocab, GgufWriter& w) {
  const ModelShape& s = o.shape;
  const std::string& a = s.architecture;  // the keys' prefix
  const std::string family = TextArchitecture(a);
  const int64_t head_dim = HeadDim(s);
  w.Set("general.architecture", GgufValue::String(a));
  // No shape in general.name: llama.cpp keys vocabulary rules on it (a "phi3" there makes it look up
  // Phi-3's </s>, which the built-in vocabulary lacks).
  w.Set("general.name", GgufValue::String("lockstep random weights"));
  w.Set("lockstep.shape", GgufValue::String(s.name));
  w.Set("general.file_type", GgufValue::Uint32(uint32_t(FileTypeOf(o))));
  w.Set("general.quantization_version", GgufValue::Uint32(2));
  w.Set(a + ".vocab_size", GgufValue::Uint32(uint32_t(n_vocab)));
  w.Set(a + ".context_length", GgufValue::Uint32(uint32_t(s.n_ctx)));
  w.Set(a + ".embedding_length", GgufValue::Uint32(uint32_t(s.n_embd)));
  w.Set(a + ".block_count", GgufValue::Uint32(uint32_t(s.n_layer)));
  // qwen: its converter writes Hugging Face's intermediate_size, twice the FFN's width.
  w.Set(a + ".feed_forward_length", GgufValue::Uint32(uint32_t(a == "qwen" ? 2 * s.n_ff : s.n_ff)));
  w.Set(a + ".attention.head_count", GgufValue::Uint32(uint32_t(s.n_head)));
  w.Set(a + ".attention.head_count_kv", GgufValue::Uint32(uint32_t(s.n_head_kv)));
  w.Set(a + ".attention.key_length", GgufValue::Uint32(uint32_t(head_dim)));
  w.Set(a + ".attention.value_length", GgufValue::Uint32(uint32_t(ValueDim(s))));
  w.Set(a + (UsesLayerNorm(a) ? ".attention.layer_norm_epsilon" : ".attention.layer_norm_rms_epsilon"),
        GgufValue::Float32(s.rms_eps));
  if (a == "command-r" || a == "cohere2") w.Set(a + ".logit_scale", GgufValue::Float32(s.logit_scale));
  if (a == "gptneox") w.Set(a + ".use_parallel_residual", GgufValue::Bool(s.parallel_ffn));
  if (s.clamp_kqv > 0) w.Set(a + ".attention.clamp_kqv", GgufValue::Float32(s.clamp_kqv));
  if (s.max_alibi_bias > 0) w.Set(a + ".attention.max_alibi_bias", GgufValue::Float32(s.max_alibi_bias));
  w.Set(a + ".rope.freq_base", GgufValue::Float32(s.rope_freq_base));
  w.Set(a + ".rope.dimension_count", GgufValue::Uint32(uint32_t(RopeDim(s))));
  // Phi-3 files always carry the window (0: none, Phi-4), Gemma's their own; others only when windowed.
  if (s.sliding_window > 0 || a == "phi3" || a == "gemma2" || a == "gemma3" || a == "gemma4") {
    w.Set(a + ".attention.sliding_window", GgufValue::Uint32(uint32_t(s.sliding_window)));
  }
  if (a == "granite" || a == "granitemoe" || a == "minicpm") {
    w.Set(a + ".embedding_scale", GgufValue::Float32(s.granite_embedding_scale));
    w.Set(a + ".residual_scale", GgufValue::Float32(s.granite_residual_scale));
    if (a != "minicpm") w.Set(a + ".attention.scale", GgufValue::Float32(s.granite_attention_scale));
    w.Set(a + ".logit_scale", GgufValue::Float32(s.logit_scale));
  }
  if (s.attn_temperature_scale > 0) {
    w.Set(a + ".attention.temperature_scale", GgufValue::Float32(s.attn_temperature_scale));
  }
  if (a == "gemma4") SetGemma4Metadata(s, w);  // after the common keys: replaces two with arrays
  if (a == "deci") {                           // and three here
    auto ints = [](const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); };
    w.Set(a + ".attention.head_count", GgufValue::Int32Array(ints(s.layer_heads)));
    w.Set(a + ".attention.head_count_kv", GgufValue::Int32Array(ints(s.layer_kv_heads)));
    w.Set(a + ".feed_forward_length", GgufValue::Int32Array(ints(s.layer_ff)));
  }
  if (a == "gemma2") {
    w.Set(a + ".attn_logit_softcapping", GgufValue::Float32(s.attn_softcap));
    w.Set(a + ".final_logit_softcapping", GgufValue::Float32(s.final_softcap));
  }
  if (s.yarn_factor > 0) {
    w.Set(a + ".rope.scaling.type", GgufValue::String("yarn"));
    w.Set(a + ".rope.scaling.factor", GgufValue::Float32(s.yarn_factor));
    w.Set(a + ".rope.scaling.original_context_length", GgufValue::Uint32(uint32_t(s.yarn_original_ctx)));
    if (s.yarn_log_mul > 0)
      w.Set(a + ".rope.scaling.yarn_log_multiplier", GgufValue::Float32(s.yarn_log_mul));
  }
  if (s.rope_linear_factor > 0) {
    w.Set(a + ".rope.scaling.type", GgufValue::String("linear"));
    w.Set(a + ".rope.scaling.factor", GgufValue::Float32(s.rope_linear_factor));
  }
  if (s.n_expert > 0) {
    w.Set(a + ".expert_count", GgufValue::Uint32(uint32_t(s.n_expert)));
    w.Set(a + ".expert_used_count", GgufValue::Uint32(uint32_t(s.n_expert_used)));
    // Mixtral's (llama), granitemoe's and olmoe's files give the experts' width as feed_forward_length.
    if (family != "llama" && family != "granitemoe" && family != "olmoe") {
      w.Set(a + ".expert_feed_forward_length", GgufValue::Uint32(uint32_t(s.ExpertFf())));
    }
    if (s.n_ff_shared > 0) {
      w.Set(a + ".expert_shared_feed_forward_length", GgufValue::Uint32(uint32_t(s.n_ff_shared)));
    }
  }
  if (s.kv_lora_rank > 0) SetDeepseek2Metadata(s, w);
  if (a == "glm4moe" || a == "dots1" || a == "bailingmoe2" || a == "deepseek")
    SetDeepseekExpertMetadata(s, w);
  if (a == "bailingmoe2" || a == "ernie4_5-moe") {  // their shared experts as one FFN of that many widths
    w.Set(a + ".expert_shared_feed_forward_length",
          GgufValue::Uint32(uint32_t(s.ExpertFf() * s.n_expert_shared)));
  }
  if (a == "minimax-m2") w.Set(a + ".expert_gating_func", GgufValue::Uint32(uint32_t(s.expert_gating)));
  if (a == "ernie4_5-moe") {
    w.Set(a + ".leading_dense_block_count", GgufValue::Uint32(uint32_t(s.n_layer_dense_lead)));
    w.Set(a + ".interleave_moe_layer_step", GgufValue::Uint32(1));
  }
  if (a != family) {  // a vision-language file's text: M-RoPE sections (t, h, w, unused) of the rotated pairs
    // in Qwen2-VL's proportions 16:24:24 (Qwen3-VL's interleaved 24:20:20 for qwen3vl*), and Qwen3-VL's
    // three deepstack layers, which only images reach.
    const int64_t pairs = RopeDim(s) / 2, t = family == "qwen2" ? pairs / 4 : pairs / 2;
    const std::vector<int32_t> sections = {int32_t(t), int32_t((pairs - t) / 2),
                                           int32_t(pairs - t - (pairs - t) / 2), 0};
    w.Set(a + ".rope.dimension_sections", GgufValue::Int32Array(sections));
    if (family != "qwen2") w.Set(a + ".n_deepstack_layers", GgufValue::Uint32(3));
  }
  // Gated DeltaNet and (qwen35) M-RoPE sections (t, h, w, unused) in Qwen3.5's 11:11:10; llama.cpp's
  // converter writes no full_attention_interval for qwen3next (its loader takes 4).
  if (a == "qwen35" || a == "qwen35moe" || a == "qwen3next") {
    const int64_t key_width = s.ssm_head_dim;
    w.Set(a + ".ssm.conv_kernel", GgufValue::Uint32(uint32_t(s.ssm_conv_kernel)));
    w.Set(a + ".ssm.group_count", GgufValue::Uint32(uint32_t(s.ssm_k_heads)));
    w.Set(a + ".ssm.time_step_rank", GgufValue::Uint32(uint32_t(s.ssm_v_heads)));
    w.Set(a + ".ssm.state_size", GgufValue::Uint32(uint32_t(key_width)));
    w.Set(a + ".ssm.inner_size", GgufValue::Uint32(uint32_t(s.ssm_v_heads * s.ssm_head_dim)));
    if (a != "qwen3next") {
      w.Set(a + ".full_attention_interval", GgufValue::Uint32(uint32_t(s.full_attention_interval)));
    }
  }
  if (a == "qwen35" || a == "qwen35moe") {
    const int64_t pairs = RopeDim(s) / 2, t = (pairs + 2) / 3, h = (pairs - t + 1) / 2;
    w.Set(a + ".rope.dimension_sections",
          GgufValue::Int32Array({int32_t(t), int32_t(h), int32_t(pairs - t - h), 0}));
  }
  if (IsBertEncoder(a)) {  // an encoder: LayerNorm epsilon, bidirectional, CLS pooling (as bge's files)
    w.Set(a + ".attention.layer_norm_epsilon", GgufValue::Float32(s.rms_eps));
    w.Set(a + ".attention.causal", GgufValue::Bool(false));
    w.Set(a + ".pooling_type", GgufValue::Uint32(2));
  }
  if (s.n_cls_out > 0) {
    w.Set(a + ".pooling_type", GgufValue::Uint32(4));  // rank
    std::vector<std::string> labels = {"yes", "no"};
    labels.resize(size_t(s.n_cls_out));
    for (size_t i = 2; i < labels.size(); ++i) labels[i] = "label" + std::to_string(i);
    w.Set("classifier.output_labels", GgufValue::StringArray(labels));
  }
  if (s.longrope_orig_ctx > 0) {
    w.Set(a + ".rope.scaling.original_context_length", GgufValue::Uint32(uint32_t(s.longrope_orig_ctx)));
    w.Set(a + ".rope.scaling.attn_factor", GgufValue::Float32(LongRopeAttnFactor(s)));
  }
}

// attn_kv_b's values [n_head * (nope + value)][rank] as GenerateTensor draws them for the fused tensor.
std::vector<float> KvBValues(const KvBSource& kv_b, int64_t rank, int64_t n_head, uint64_t seed,
                             float stddev) {
  std::vector<float> v(size_t(n_head * (kv_b.nope + kv_b.value) * rank));
  NormalStream normal(seed ^ HashName(kv_b.name));
  for (float& x : v) x = normal.Next(stddev);
  return v;
}

// Fills one tensor row by row into `out` (RowBytes * rows bytes).
void GenerateTensor(const PlannedTensor& t, uint64_t seed, float stddev, std::vector<std::byte>& out) {
  const int64_t n = t.dims[0];
  int64_t rows = 1;
  for (size_t i = 1; i < t.dims.size(); ++i) rows *= t.dims[i];
  const size_t row_bytes = RowBytes(t.type, n);
  out.resize(row_bytes * size_t(rows));
  NormalStream normal(seed ^ HashName(t.name));
  // A split attn_kv_b: attn_k_b [n_head][rank][nope], attn_v_b [n_head][value][rank].
  const bool keys = t.fill == Fill::kKvBKeys, split = keys || t.fill == Fill::kKvBValues;
  const int64_t rank = keys ? t.dims[1] : n, per_head = t.kv_b.nope + t.kv_b.value;
  const std::vector<float> fused =
      split ? KvBValues(t.kv_b, rank, t.dims[2], seed, stddev) : std::vector<float>();
  std::vector<float> row(n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      switch (t.fill) {
        case Fill::kOnes:
          row[i] = 1.0f;
          break;
        case Fill::kNearOne:
          row[i] = 1.0f + normal.Next(0.2f);
          break;
        case Fill::kValues:
          row[i] = t.values[i];
          break;
        case Fill::kNormal:
          row[i] = normal.Next(t.stddev > 0 ? t.stddev : stddev);
          break;
        case Fill::kKvBKeys:  // row r: head r / rank, latent r % rank
          row[i] = fused[size_t(((r / rank) * per_head + i) * rank + r % rank)];
          break;
        case Fill::kKvBValues:  // row r: head r / value, its value row r % value
          row[i] = fused[size_t(((r / t.kv_b.value) * per_head + t.kv_b.nope + r % t.kv_b.value) * rank + i)];
          break;
      }
    }
    QuantizeRow(t.type, row.data(), out.data() + size_t(r) * row_bytes, n);
  }
}

}  // namespace

std::string WeightTypeNames() {
  return "f32|f16|bf16|q8_0|q4_0|q5_0|q5_1|q2_k|q3_k|q4_k|q5_k|q6_k|iq4_nl|iq4_xs|mxfp4|q4_k_m|q4_k_s|q5_k_m|"
         "q5_k_s";
}

Status SetWeightTypes(const std::string& name, MakeModelOptions& options) {
  std::string lower = name;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  const std::string names = WeightTypeNames();
  if (lower.empty() || ("|" + names + "|").find("|" + lower + "|") == std::string::npos) {
    return InvalidArgument("weight type '" + name + "' is not supported; use one of " + names);
  }
  options.mix = lower == "q4_k_m"   ? KQuantMix::kQ4KM
                : lower == "q4_k_s" ? KQuantMix::kQ4KS
                : lower == "q5_k_m" ? KQuantMix::kQ5KM
                : lower == "q5_k_s" ? KQuantMix::kQ5KS
                                    : KQuantMix::kNone;
  if (options.mix != KQuantMix::kNone) {
    options.type = MixBaseType(options.mix);
    return Status::Ok();
  }
  LOCKSTEP_ASSIGN_OR_RETURN(options.type, ParseTensorType(lower));
  return Status::Ok();
}

bool UsesMoreBits(int64_t layer, int64_t n_layer) {
  const int64_t eighth = n_layer / 8;
  return layer < eighth || layer >= 7 * n_layer / 8 || (layer - eighth) % 3 == 2;
}

std::vector<std::pair<std::string, GgufValue>> BuiltinVocabulary(bool ascii_only) {
  // GPT-2's byte-to-unicode map: printable bytes stand for themselves, the others for U+0100 onwards.
  std::vector<std::string> byte_piece(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    const int cp = printable ? b : next++;
    std::string s;
    if (cp < 0x80) {
      s += char(cp);
    } else {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    }
    byte_piece[b] = s;
  }
  std::vector<std::string> tokens(byte_piece.begin(), byte_piece.begin() + (ascii_only ? 128 : 256));
  std::vector<int32_t> types(tokens.size(), 1);
  const std::string sp = byte_piece[' '];  // "Ġ"
  const std::vector<std::pair<std::string, std::string>> merges = {
      {sp, "t"},  {"h", "e"}, {sp, "a"},  {"i", "n"}, {sp + "t", "he"}, {"e", "r"}, {"o", "n"},
      {sp, "s"},  {"e", "d"}, {"r", "e"}, {sp, "w"},  {"o", "u"},       {"a", "n"}, {"in", "g"},
      {sp, "o"},  {sp, "b"},  {"n", "d"}, {"a", "t"}, {sp, "c"},        {"i", "s"}, {sp + "a", "nd"},
      {"o", "r"}, {sp, "h"},  {"e", "n"}, {sp, "i"},  {"l", "l"},       {"a", "s"}, {sp, "f"},
  };
  std::vector<std::string> merge_lines;
  for (const auto& [l, r] : merges) {
    merge_lines.push_back(l + " " + r);
    tokens.push_back(l + r);
    types.push_back(1);
  }
  const int32_t eos = static_cast<int32_t>(tokens.size());
  tokens.push_back("<|endoftext|>");
  types.push_back(3);
  return {
      {"tokenizer.ggml.model", GgufValue::String("gpt2")},
      {"tokenizer.ggml.pre", GgufValue::String("default")},
      {"tokenizer.ggml.tokens", GgufValue::StringArray(tokens)},
      {"tokenizer.ggml.token_type", GgufValue::Int32Array(types)},
      {"tokenizer.ggml.merges", GgufValue::StringArray(merge_lines)},
      {"tokenizer.ggml.bos_token_id", GgufValue::Uint32(uint32_t(eos))},
      {"tokenizer.ggml.eos_token_id", GgufValue::Uint32(uint32_t(eos))},
      {"tokenizer.ggml.add_bos_token", GgufValue::Bool(false)},
  };
}

Status WriteRandomModel(const MakeModelOptions& o, const std::string& path) {
  const ModelShape& s = o.shape;
  if (!CanQuantize(o.type)) {
    return InvalidArgument("cannot write weights of type " + std::string(TensorTypeName(o.type)));
  }
  if (s.n_head <= 0 || (s.head_dim <= 0 && s.n_embd % s.n_head != 0) || s.n_head_kv <= 0 ||
      s.n_head % s.n_head_kv != 0 || RopeDim(s) % 2 != 0 || RopeDim(s) > HeadDim(s)) {
    return InvalidArgument("model shape '" + s.name + "' has inconsistent head counts");
  }
  if (o.mix != KQuantMix::kNone && o.type != MixBaseType(o.mix)) {
    return InvalidArgument("the K-quant mix needs type " + std::string(TensorTypeName(MixBaseType(o.mix))) +
                           ", not " + std::string(TensorTypeName(o.type)));
  }
  // K-quant rows that do not fit their 256-element blocks fall back to q5_0 / q5_1 / q8_0 / iq4_nl, which
  // must fit then (llama.cpp would go on to f16).
  const TensorType checked = IsKQuant(o.type) ? KQuantFallback(o.type) : o.type;
  const int64_t block = GetTensorTypeTraits(checked).block_elements;
  const std::string family = TextArchitecture(s.architecture);
  if (s.n_expert < 0 || (s.n_expert > 0 && (s.n_expert_used <= 0 || s.n_expert_used > s.n_expert)) ||
      ((family == "qwen3moe" || family == "qwen2moe" || family == "gpt-oss" || family == "qwen35moe" ||
        family == "qwen3next") &&
       s.n_expert == 0) ||
      (family == "qwen2moe" || family == "qwen35moe" || family == "qwen3next") != (s.n_ff_shared > 0)) {
    return InvalidArgument("model shape '" + s.name + "' has inconsistent expert counts");
  }
  for (int64_t in :
       {s.n_embd, s.n_ff, s.ExpertFf(), s.n_ff_shared > 0 ? s.n_ff_shared : s.n_ff, s.n_head * ValueDim(s),
        s.q_lora_rank > 0 ? s.q_lora_rank : s.n_embd, s.kv_lora_rank > 0 ? s.kv_lora_rank : s.n_embd,
        s.split_kv_b ? HeadDim(s) - RopeDim(s) : s.n_embd}) {
    if (in % block != 0) {
      return InvalidArgument("model shape '" + s.name + "': row length " + std::to_string(in) +
                             " is not a multiple of the " + std::string(TensorTypeName(checked)) +
                             " block (" + std::to_string(block) + ")");
    }
  }
  if (IsBertEncoder(s.architecture) && o.vocab_from.empty()) {
    return InvalidArgument("model shape '" + s.name +
                           "' needs a WordPiece vocabulary: --vocab-from a bert GGUF (e.g. the test data's "
                           "vocab/ggml-vocab-bert-bge.gguf)");
  }
  GgufWriter writer;
  int64_t n_vocab = 0;
  // Architecture keys first, then the tokenizer (as llama.cpp's converter orders them).
  SetModelMetadata(o, 0, writer);
  if (o.vocab_from.empty()) {
    const auto vocabulary = BuiltinVocabulary(s.ascii_vocabulary);
    for (auto& [key, value] : vocabulary) writer.Set(key, value);
    n_vocab = static_cast<int64_t>(vocabulary[2].second.AsArray()->elements.size());
  } else {
    LOCKSTEP_RETURN_IF_ERROR(CopyVocabulary(o.vocab_from, writer, &n_vocab));
  }
  writer.Set(s.architecture + ".vocab_size", GgufValue::Uint32(uint32_t(n_vocab)));
  if (!s.rerank_template.empty()) {
    writer.Set("tokenizer.chat_template.rerank", GgufValue::String(s.rerank_template));
  }
  const std::vector<PlannedTensor> tensors = PlanTensors(o, n_vocab);
  for (const PlannedTensor& t : tensors)
    LOCKSTEP_RETURN_IF_ERROR(writer.DeclareTensor(t.name, t.type, t.dims));
  // Tensors are generated one at a time while the file is written, so memory stays small even for llama-1b.
  return writer.WriteFile(path, [&](size_t index, std::vector<std::byte>& data) {
    GenerateTensor(tensors[index], o.seed, s.weight_std, data);
    return Status::Ok();
  });
}

}  // namespace lockstep
