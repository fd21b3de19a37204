#include "model/model_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>

#include "model/architectures.h"
#include "tensor/dequantize.h"

namespace lockstep {
namespace {

std::string DimsString(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Collects every problem instead of stopping at the first.
class Binder {
 public:
  explicit Binder(const GgufFile& file) : file_(file) {}

  const GgufTensorInfo* Find(const std::string& name, const std::vector<int64_t>& dims) {
    const GgufTensorInfo* t = file_.FindTensor(name);
    if (t == nullptr) {
      missing_.push_back(name);
      return nullptr;
    }
    if (t->dims != dims) {
      wrong_.push_back(name + " has shape " + DimsString(t->dims) + ", expected " + DimsString(dims));
      return nullptr;
    }
    return t;
  }

  // out == 1 also takes a 1-D tensor [in] (llama.cpp's loader reads [in] and [in, 1] alike).
  WeightMatrix Matrix(const std::string& name, int64_t out, int64_t in) {
    const GgufTensorInfo* found = file_.FindTensor(name);
    const bool one_d = out == 1 && found != nullptr && found->dims.size() == 1;
    const GgufTensorInfo* t = ForMatMul(name, one_d ? Find(name, {in}) : Find(name, {in, out}));
    if (t == nullptr) return {};
    return WeightMatrix{t->type, in, out, t->data};
  }

  // Rows [first, first + count) of a matrix as a matrix of their own (a view: rows are contiguous).
  static WeightMatrix Rows(const WeightMatrix& m, int64_t first, int64_t count) {
    if (m.data == nullptr) return {};
    return WeightMatrix{m.type, m.in, count, m.data + size_t(first) * RowBytes(m.type, m.in)};
  }

  // The n matrices [out][in] of a 3-D tensor [in, out, n] as one matrix [n * out][in] (a view).
  WeightMatrix Stacked(const std::string& name, int64_t out, int64_t in, int64_t n) {
    const GgufTensorInfo* t = ForMatMul(name, Find(name, {in, out, n}));
    if (t == nullptr) return {};
    return WeightMatrix{t->type, in, n * out, t->data};
  }

  // Expert e of a 3-D tensor [in, out, n_expert] as a matrix of its own, for each e (a view: each expert's
  // rows are contiguous, whole blocks for every type).
  std::vector<WeightMatrix> Experts(const std::string& name, int64_t out, int64_t in, int64_t n_expert) {
    const WeightMatrix all = Stacked(name, out, in, n_expert);
    if (all.data == nullptr) return {};
    std::vector<WeightMatrix> experts;
    for (int64_t e = 0; e < n_expert; ++e) experts.push_back(Rows(all, e * out, out));
    return experts;
  }

  bool Has(const std::string& name) const { return file_.FindTensor(name) != nullptr; }

  std::vector<float> Vector(const std::string& name, int64_t n) {
    const GgufTensorInfo* t = Find(name, {n});
    if (t == nullptr) return {};
    if (!CanDequantize(t->type) || n % GetTensorTypeTraits(t->type).block_elements != 0) {
      wrong_.push_back(name + " has unsupported type " + std::string(TensorTypeName(t->type)));
      return {};
    }
    std::vector<float> v(n);
    DequantizeRow(t->type, t->data, v.data(), n);
    return v;
  }

  // A 2-D tensor [rows][n] (GGUF dims [n, rows]) dequantized whole; rows < 0: any number of rows.
  std::vector<float> Table(const std::string& name, int64_t n, int64_t rows) {
    if (rows < 0) {
      const GgufTensorInfo* t = file_.FindTensor(name);
      rows = t != nullptr && t->dims.size() == 2 && t->dims[1] > 0 ? t->dims[1] : 1;
    }
    const GgufTensorInfo* t = Find(name, {n, rows});
    if (t == nullptr) return {};
    if (!CanDequantize(t->type) || n % GetTensorTypeTraits(t->type).block_elements != 0) {
      wrong_.push_back(name + " has unsupported type " + std::string(TensorTypeName(t->type)));
      return {};
    }
    std::vector<float> v(size_t(n * rows));
    for (int64_t r = 0; r < rows; ++r) {
      DequantizeRow(t->type, t->data + size_t(r) * RowBytes(t->type, n), v.data() + r * n, n);
    }
    return v;
  }

  void Wrong(std::string message) { wrong_.push_back(std::move(message)); }

  // t when the matrix kernels take its type; else null, the problem noted.
  const GgufTensorInfo* ForMatMul(const std::string& name, const GgufTensorInfo* t) {
    if (t != nullptr && !MatMulSupports(t->type)) {
      wrong_.push_back(name + " has type " + std::string(TensorTypeName(t->type)) +
                       ", which the matrix kernels do not support");
      return nullptr;
    }
    return t;
  }

  Status Finish() const {
    if (missing_.empty() && wrong_.empty()) return Status::Ok();
    std::string msg = file_.path() + ": model tensors do not match the architecture";
    if (!missing_.empty()) {
      msg += "; missing " + std::to_string(missing_.size()) + ":";
      for (const std::string& m : missing_) msg += " " + m;
    }
    if (!wrong_.empty()) {
      msg += "; wrong " + std::to_string(wrong_.size()) + ":";
      for (size_t i = 0; i < wrong_.size(); ++i) msg += (i ? "; " : " ") + wrong_[i];
    }
    return InvalidArgument(msg);
  }

 private:
  const GgufFile& file_;
  std::vector<std::string> missing_;
  std::vector<std::string> wrong_;
};

// Gemma 4's per-layer tensors beyond gemma3's: the optional output scale, and with per-layer token inputs
// their gate [n_embd_per_layer][n_embd], projection [n_embd][n_embd_per_layer] and its post-norm.
// Gemma 4's experts' companions (ModelConfig::dense_beside_experts): the dense FFN beside them, the three
// extra norms, the router's input scale (folded with 1 / sqrt(n_embd)) and the experts' output scales.
void BindGemma4Experts(Binder& b, const ModelConfig& c, const std::string& p, int64_t n_ff,
                       LayerWeights& lw) {
  const int64_t d = c.n_embd;
  lw.w_gate = b.Matrix(p + "ffn_gate.weight", n_ff, d);
  lw.w_up = b.Matrix(p + "ffn_up.weight", n_ff, d);
  lw.w_down = b.Matrix(p + "ffn_down.weight", d, n_ff);
  lw.pre_ffn_norm_2 = b.Vector(p + "pre_ffw_norm_2.weight", d);
  lw.post_ffn_norm_1 = b.Vector(p + "post_ffw_norm_1.weight", d);
  lw.post_ffn_norm_2 = b.Vector(p + "post_ffw_norm_2.weight", d);
  lw.router_input_scale = b.Vector(p + "ffn_gate_inp.scale", d);
  const float root = 1.0f / std::sqrt(float(d));
  for (float& s : lw.router_input_scale) s *= root;
  if (b.Has(p + "ffn_down_exps.scale")) lw.expert_scale = b.Vector(p + "ffn_down_exps.scale", c.n_expert);
}

void BindGemma4Layer(Binder& b, const ModelConfig& c, const std::string& p, LayerWeights& lw) {
  if (b.Has(p + "layer_output_scale.weight")) lw.out_scale = b.Vector(p + "layer_output_scale.weight", 1);
  if (c.n_embd_per_layer == 0) return;
  lw.pl_gate = b.Matrix(p + "inp_gate.weight", c.n_embd_per_layer, c.n_embd);
  lw.pl_proj = b.Matrix(p + "proj.weight", c.n_embd, c.n_embd_per_layer);
  lw.pl_post_norm = b.Vector(p + "post_norm.weight", c.n_embd);
}

const GgufTensorInfo* BindTokenEmbedding(Binder& b, const ModelConfig& c) {
  const GgufTensorInfo* t = b.Find("token_embd.weight", {c.n_embd, c.n_vocab});
  if (t != nullptr && !CanDequantize(t->type)) {
    b.Wrong("token_embd.weight has unsupported type " + std::string(TensorTypeName(t->type)));
  }
  return t;
}

// Each head's block of `rows` rows of `cols` elements (head h's first row at row h * head_stride of
// `from`) transposed into `storage`: [n_head][cols][rows]. f32, f16 and bf16 elements move unchanged (the
// products are then the original's to the bit); other types are dequantized to f32 rows (the file's weights
// exactly, at 4 bytes each). The heads as one matrix [n_head * cols][rows].
WeightMatrix TransposeHeads(const WeightMatrix& from, int64_t n_head, int64_t head_stride, int64_t rows,
                            int64_t cols, std::vector<std::byte>& storage) {
  const bool plain =
      from.type == TensorType::kF32 || from.type == TensorType::kF16 || from.type == TensorType::kBF16;
  const TensorType type = plain ? from.type : TensorType::kF32;
  const size_t size = plain ? RowBytes(type, 1) : sizeof(float);  // one element
  storage.resize(size_t(n_head * rows * cols) * size);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t r = 0; r < rows; ++r) {
      const std::byte* at = from.data + size_t(h * head_stride + r) * RowBytes(from.type, cols);
      if (!plain) DequantizeRow(from.type, at, row.data(), cols);
      for (int64_t i = 0; i < cols; ++i) {
        std::byte* to = storage.data() + size_t((h * cols + i) * rows + r) * size;
        std::memcpy(to, plain ? at + size_t(i) * size : reinterpret_cast<const std::byte*>(&row[i]), size);
      }
    }
  }
  return WeightMatrix{type, rows, n_head * cols, storage.data()};
}

// m's type when TransposeHeads takes it (rows of `cols` elements); else false, the problem noted.
bool CanTranspose(Binder& b, const std::string& name, const WeightMatrix& m, int64_t cols) {
  if (m.data == nullptr) return false;
  const bool plain = m.type == TensorType::kF32 || m.type == TensorType::kF16 || m.type == TensorType::kBF16;
  if (!plain && (!CanDequantize(m.type) || cols % GetTensorTypeTraits(m.type).block_elements != 0)) {
    b.Wrong(name + " has unsupported type " + std::string(TensorTypeName(m.type)));
    return false;
  }
  return true;
}

// `count` matrices of `out` rows each, the first at row `first` of m and each `stride` rows after the last.
std::vector<WeightMatrix> HeadRows(const WeightMatrix& m, int64_t count, int64_t first, int64_t stride,
                                   int64_t out) {
  std::vector<WeightMatrix> heads;
  if (m.data == nullptr) return heads;
  for (int64_t h = 0; h < count; ++h) heads.push_back(Binder::Rows(m, first + h * stride, out));
  return heads;
}

// The absorbed form's per-head matrices (LayerWeights::k_b_heads, v_b_heads): views of attn_k_b and
// attn_v_b (kv_b_split), or of attn_kv_b's value rows with its k_nope rows transposed into `storage`.
void BindAbsorbed(Binder& b, const ModelConfig& c, const std::string& p, LayerWeights& lw,
                  std::vector<std::byte>& storage) {
  const int64_t nope = c.head_dim - c.rope_dim, rank = c.kv_lora_rank, nv = c.value_dim;
  if (c.kv_b_split) {
    lw.k_b_heads = HeadRows(b.Stacked(p + "attn_k_b.weight", rank, nope, c.n_head), c.n_head, 0, rank, rank);
    lw.v_b_heads = HeadRows(b.Stacked(p + "attn_v_b.weight", nv, rank, c.n_head), c.n_head, 0, nv, nv);
    return;
  }
  const std::string name = p + "attn_kv_b.weight";
  const WeightMatrix kv_b = b.Matrix(name, c.n_head * (nope + nv), rank);
  lw.v_b_heads = HeadRows(kv_b, c.n_head, nope, nope + nv, nv);
  if (!CanTranspose(b, name, kv_b, rank)) return;
  const WeightMatrix k_b = TransposeHeads(kv_b, c.n_head, nope + nv, nope, rank, storage);
  lw.k_b_heads = HeadRows(k_b, c.n_head, 0, rank, rank);
}

// Multi-head latent attention's tensors (deepseek2; ModelConfig::kv_lora_rank): the absorbed form's
// (BindAbsorbed), or attn_kv_b, or its split halves (kv_b_split: attn_k_b rebuilt into `storage`, attn_v_b
// a view).
void BindLatentAttention(Binder& b, const ModelConfig& c, const std::string& p, LayerWeights& lw,
                         std::vector<std::byte>& storage) {
  const int64_t d = c.n_embd, nope = c.head_dim - c.rope_dim;
  if (c.q_lora_rank > 0) {
    lw.wq_a = b.Matrix(p + "attn_q_a.weight", c.q_lora_rank, d);
    lw.q_a_norm = b.Vector(p + "attn_q_a_norm.weight", c.q_lora_rank);
    lw.wq_b = b.Matrix(p + "attn_q_b.weight", c.q_dim(), c.q_lora_rank);
  } else {
    lw.wq = b.Matrix(p + "attn_q.weight", c.q_dim(), d);
  }
  lw.wkv_a = b.Matrix(p + "attn_kv_a_mqa.weight", c.kv_lora_rank + c.rope_dim, d);
  lw.kv_a_norm = b.Vector(p + "attn_kv_a_norm.weight", c.kv_lora_rank);
  if (c.mla_latent_cache) {
    BindAbsorbed(b, c, p, lw, storage);
  } else if (c.kv_b_split) {
    // attn_k_b [n_head][rank][nope] (GGUF dims [nope, rank, n_head]) back into attn_kv_b's k_nope rows.
    const std::string name = p + "attn_k_b.weight";
    const WeightMatrix k_b = b.Stacked(name, c.kv_lora_rank, nope, c.n_head);
    if (CanTranspose(b, name, k_b, nope)) {
      lw.wk_b = TransposeHeads(k_b, c.n_head, c.kv_lora_rank, c.kv_lora_rank, nope, storage);
    }
    lw.wv_b = b.Stacked(p + "attn_v_b.weight", c.value_dim, c.kv_lora_rank, c.n_head);
  } else {
    lw.wkv_b = b.Matrix(p + "attn_kv_b.weight", c.n_head * (nope + c.value_dim), c.kv_lora_rank);
  }
}

// A Gated DeltaNet layer's tensors (LayerWeights' dn_*), llama.cpp's names for them.
void BindDeltaNet(Binder& b, const DeltaNetConfig& dn, int64_t d, const std::string& p, LayerWeights& lw) {
  if (dn.fused_projections) {  // qwen3next: rows grouped per key head (DeltaNet::Forward takes them apart)
    lw.dn_qkvz = b.Matrix(p + "ssm_in.weight", dn.ConvChannels() + dn.value_dim(), d);
    lw.dn_ba = b.Matrix(p + "ssm_ba.weight", 2 * dn.v_heads, d);
  } else {
    lw.dn_qkv = b.Matrix(p + "attn_qkv.weight", dn.ConvChannels(), d);
    lw.dn_z = b.Matrix(p + "attn_gate.weight", dn.value_dim(), d);
    lw.dn_beta = b.Matrix(p + "ssm_beta.weight", dn.v_heads, d);
    lw.dn_alpha = b.Matrix(p + "ssm_alpha.weight", dn.v_heads, d);
  }
  lw.dn_out = b.Matrix(p + "ssm_out.weight", d, dn.value_dim());
  lw.dn_conv = b.Table(p + "ssm_conv1d.weight", dn.conv_kernel, dn.ConvChannels());
  lw.dn_a = b.Vector(p + "ssm_a", dn.v_heads);
  lw.dn_dt_bias = b.Vector(p + "ssm_dt.bias", dn.v_heads);
  lw.dn_norm = b.Vector(p + "ssm_norm.weight", dn.head_v_dim);
}

}  // namespace

void ModelWeights::PackMatrices(int threads) {
  // In the order a forward pass reads them (one buffer, tensor/matmul.h PackWeightsTogether).
  std::vector<WeightMatrix*> matrices;
  auto add = [&](WeightMatrix& m) {
    if (CanPackWeights(m.type) && m.data != nullptr) matrices.push_back(&m);
  };
  for (LayerWeights& lw : layers) {
    for (WeightMatrix* m : {&lw.wq_a, &lw.wq_b, &lw.wkv_a, &lw.wkv_b, &lw.wk_b, &lw.wv_b}) add(*m);
    for (WeightMatrix& m : lw.k_b_heads) add(m);
    for (WeightMatrix& m : lw.v_b_heads) add(m);
    for (WeightMatrix* m : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down}) add(*m);
    add(lw.pl_gate);
    add(lw.pl_proj);
    add(lw.router);
    add(lw.shared_gate);
    for (WeightMatrix* m :
         {&lw.dn_qkv, &lw.dn_z, &lw.dn_beta, &lw.dn_alpha, &lw.dn_qkvz, &lw.dn_ba, &lw.dn_out}) {
      add(*m);
    }
    for (size_t e = 0; e < lw.expert_gate.size(); ++e) {
      for (WeightMatrix* m : {&lw.expert_gate[e], &lw.expert_up[e], &lw.expert_down[e]}) add(*m);
    }
  }
  add(per_layer_model_proj);
  add(output);
  if (matrices.empty()) return;
  if (threads <= 0) threads = std::clamp(int(std::thread::hardware_concurrency()), 1, 8);
  packed = PackWeightsTogether(std::vector<const WeightMatrix*>(matrices.begin(), matrices.end()), threads);
  for (size_t i = 0; i < matrices.size(); ++i) matrices[i]->packed = packed[i].get();
}

Result<ModelWeights> ModelWeights::Bind(const GgufFile& file, const ModelConfig& c, int pack_threads) {
  if (file.tensors().empty()) {
    return InvalidArgument(file.path() +
                           ": the file holds no tensors (a vocabulary-only GGUF?), so there is "
                           "no model to run");
  }
  if (c.n_expert > 0 && file.FindTensor("blk.0.ffn_gate.0.weight") != nullptr) {
    return Unimplemented(
        file.path() +
        ": experts stored one tensor each (blk.N.ffn_gate.E.weight, an early Mixtral "
        "conversion); lockstep reads the merged blk.N.ffn_{gate,up,down}_exps.weight: convert "
        "the model again");
  }
  if (IsBertEncoder(c.architecture)) return BindBert(file, c, pack_threads);
  Binder b(file);
  ModelWeights w;
  const int64_t d = c.n_embd;
  w.token_embd = BindTokenEmbedding(b, c);
  // olmo: LayerNorms without weights, bound as ones.
  const auto norm = [&](const std::string& name) {
    return c.norm_weights ? b.Vector(name, d) : std::vector<float>(size_t(d), 1.0f);
  };
  w.output_norm = norm("output_norm.weight");
  if (c.learned_positions) w.position_embd = b.Table("position_embd.weight", d, c.n_ctx_train);
  if (c.embedding_norm) {  // bloom
    w.embd_norm = b.Vector("token_embd_norm.weight", d);
    w.embd_norm_b = b.Vector("token_embd_norm.bias", d);
  }
  if (c.norm_bias) w.output_norm_b = b.Vector("output_norm.bias", d);
  if (c.output_bias) w.output_b = b.Vector("output.bias", c.n_vocab);
  if (file.FindTensor("output.weight") != nullptr) {
    w.output = b.Matrix("output.weight", c.n_vocab, d);
  } else {
    w.tied_output = true;
    w.output = b.Matrix("token_embd.weight", c.n_vocab, d);
  }
  w.layers.resize(c.n_layer);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& lw = w.layers[l];
    // This layer's widths (Gemma 4's differ by layer; its shared-KV layers have no K/V of their own).
    const int64_t q_dim = c.LayerQDim(l), kv_dim = c.LayerKvDim(l), head_dim = c.LayerHeadDim(l);
    const int64_t n_ff = c.LayerFf(l);
    const bool stores_kv = c.StoresKv(l);
    const LayerAttention& kind = c.layers[size_t(l)];
    if (c.pre_norms && !kind.no_attention) lw.attn_norm = norm(p + c.AttnNormTensor() + ".weight");
    if (c.norm_bias) lw.attn_norm_b = b.Vector(p + c.AttnNormTensor() + ".bias", d);
    if (c.kv_lora_rank > 0) {
      if (w.owned.empty()) w.owned.reserve(size_t(c.n_layer));
      w.owned.emplace_back();
      BindLatentAttention(b, c, p, lw, w.owned.back());
    } else if (kind.recurrent) {
      BindDeltaNet(b, c.delta_net, d, p, lw);
    } else if (kind.no_attention) {      // deci
    } else if (kind.linear_attention) {  // deci: attn_output alone, on attn_norm's output
      lw.wo = b.Matrix(p + "attn_output.weight", d, d);
    } else if (b.Has(p + "attn_qkv.weight")) {  // phi3: one [q | k | v] matrix
      const WeightMatrix qkv = b.Matrix(p + "attn_qkv.weight", c.q_dim() + 2 * c.kv_dim(), d);
      lw.wq = Binder::Rows(qkv, 0, c.q_dim());
      lw.wk = Binder::Rows(qkv, c.q_dim(), c.kv_dim());
      lw.wv = Binder::Rows(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      // qwen35: [query | gate] rows per head (attn_output_gate)
      lw.wq = b.Matrix(p + "attn_q.weight", (c.attn_output_gate ? 2 : 1) * q_dim, d);
      if (stores_kv) lw.wk = b.Matrix(p + "attn_k.weight", kv_dim, d);
      // Gemma 4 without attn_v: V is K's projection (Transformer::AttentionBlock).
      if (stores_kv && !(c.v_norm && !b.Has(p + "attn_v.weight"))) {
        lw.wv = b.Matrix(p + "attn_v.weight", kv_dim, d);
      }
    }
    const bool attention = c.Attends(l);
    if (attention && c.qkv_bias && b.Has(p + "attn_qkv.weight")) {  // phi2's fused [q | k | v] bias
      const std::vector<float> qkv = b.Vector(p + "attn_qkv.bias", c.q_dim() + 2 * c.kv_dim());
      if (!qkv.empty()) {
        lw.bq.assign(qkv.begin(), qkv.begin() + c.q_dim());
        lw.bk.assign(qkv.begin() + c.q_dim(), qkv.begin() + c.q_dim() + c.kv_dim());
        lw.bv.assign(qkv.begin() + c.q_dim() + c.kv_dim(), qkv.end());
      }
    } else if (attention && c.qkv_bias) {
      lw.bq = b.Vector(p + "attn_q.bias", c.q_dim());
      lw.bk = b.Vector(p + "attn_k.bias", c.kv_dim());
      lw.bv = b.Vector(p + "attn_v.bias", c.kv_dim());
    }
    if (attention && c.qk_norm_per_head) {  // command-r (Command R+): [n_head][head_dim]
      lw.q_norm = b.Table(p + "attn_q_norm.weight", head_dim, c.n_head);
      lw.k_norm = b.Table(p + "attn_k_norm.weight", head_dim, c.LayerKvHeads(l));
    } else if (attention && c.qk_norm) {
      lw.q_norm = b.Vector(p + "attn_q_norm.weight", c.qk_norm_whole ? q_dim : head_dim);
      if (stores_kv) lw.k_norm = b.Vector(p + "attn_k_norm.weight", c.qk_norm_whole ? kv_dim : head_dim);
    }
    if (c.attn_sinks) lw.sinks = b.Vector(p + "attn_sinks.weight", c.n_head);
    if (attention) lw.wo = b.Matrix(p + "attn_output.weight", d, c.LayerAttDim(l));
    if (c.attn_output_bias) lw.bo = b.Vector(p + "attn_output.bias", d);
    if (c.post_norms) lw.post_attn_norm = b.Vector(p + "post_attention_norm.weight", d);
    if (n_ff == 0) continue;  // deci: a layer without an FFN
    if (c.pre_norms && (!c.parallel_ffn || c.parallel_ffn_norm)) {
      lw.ffn_norm = norm(p + c.FfnNormTensor() + ".weight");
      if (c.norm_bias) lw.ffn_norm_b = b.Vector(p + c.FfnNormTensor() + ".bias", d);
    }
    if (c.FeedForwardExperts(l)) {
      const int64_t ff = c.n_ff_expert;
      lw.router = b.Matrix(p + "ffn_gate_inp.weight", c.n_expert, d);
      if (b.Has(p + "ffn_gate_up_exps.weight")) {  // Gemma 4: each expert's [gate | up] rows
        for (const WeightMatrix& gate_up : b.Experts(p + "ffn_gate_up_exps.weight", 2 * ff, d, c.n_expert)) {
          lw.expert_gate.push_back(Binder::Rows(gate_up, 0, ff));
          lw.expert_up.push_back(Binder::Rows(gate_up, ff, ff));
        }
      } else {
        lw.expert_gate = b.Experts(p + "ffn_gate_exps.weight", ff, d, c.n_expert);
        lw.expert_up = b.Experts(p + "ffn_up_exps.weight", ff, d, c.n_expert);
      }
      lw.expert_down = b.Experts(p + "ffn_down_exps.weight", d, ff, c.n_expert);
      if (c.dense_beside_experts) BindGemma4Experts(b, c, p, n_ff, lw);
      if (c.expert_biases) {
        lw.router_b = b.Vector(p + "ffn_gate_inp.bias", c.n_expert);
        lw.expert_gate_b = b.Table(p + "ffn_gate_exps.bias", ff, c.n_expert);
        lw.expert_up_b = b.Table(p + "ffn_up_exps.bias", ff, c.n_expert);
        lw.expert_down_b = b.Table(p + "ffn_down_exps.bias", d, c.n_expert);
      }
      if (c.expert_selection_bias) lw.selection_bias = b.Vector(p + "exp_probs_b.bias", c.n_expert);
      if (c.n_ff_shared > 0) {  // the shared expert (qwen2moe's gated)
        if (c.shared_expert_gate) lw.shared_gate = b.Matrix(p + "ffn_gate_inp_shexp.weight", 1, d);
        lw.w_gate = b.Matrix(p + "ffn_gate_shexp.weight", c.n_ff_shared, d);
        lw.w_up = b.Matrix(p + "ffn_up_shexp.weight", c.n_ff_shared, d);
        lw.w_down = b.Matrix(p + "ffn_down_shexp.weight", d, c.n_ff_shared);
      }
    } else if (c.fused_gate_up && !b.Has(p + "ffn_gate.weight")) {  // one [gate | up] matrix
      const WeightMatrix gate_up = b.Matrix(p + "ffn_up.weight", 2 * n_ff, d);
      lw.w_gate = Binder::Rows(gate_up, 0, n_ff);
      lw.w_up = Binder::Rows(gate_up, n_ff, n_ff);
    } else if (c.ungated_ffn) {  // phi2 (falcon: no biases)
      lw.w_up = b.Matrix(p + "ffn_up.weight", n_ff, d);
      if (c.ffn_bias) {
        lw.b_up = b.Vector(p + "ffn_up.bias", n_ff);
        lw.b_down = b.Vector(p + "ffn_down.bias", d);
      }
    } else {
      lw.w_gate = b.Matrix(p + "ffn_gate.weight", n_ff, d);
      lw.w_up = b.Matrix(p + "ffn_up.weight", n_ff, d);
      if (c.ffn_bias) {  // jais
        lw.b_gate = b.Vector(p + "ffn_gate.bias", n_ff);
        lw.b_up = b.Vector(p + "ffn_up.bias", n_ff);
        lw.b_down = b.Vector(p + "ffn_down.bias", d);
      }
    }
    if (!c.FeedForwardExperts(l)) lw.w_down = b.Matrix(p + "ffn_down.weight", d, n_ff);
    if (c.post_norms) lw.post_ffn_norm = b.Vector(p + "post_ffw_norm.weight", d);
    if (c.architecture == "gemma4") BindGemma4Layer(b, c, p, lw);
  }
  if (c.n_embd_per_layer > 0) {  // Gemma 4's per-layer token inputs
    const int64_t width = c.n_embd_per_layer * c.n_layer;
    w.per_layer_embd = b.Find("per_layer_token_embd.weight", {width, c.n_vocab});
    if (w.per_layer_embd != nullptr && !CanDequantize(w.per_layer_embd->type)) {
      b.Wrong("per_layer_token_embd.weight has unsupported type " +
              std::string(TensorTypeName(w.per_layer_embd->type)));
    }
    w.per_layer_model_proj = b.Matrix("per_layer_model_proj.weight", width, d);
    w.per_layer_proj_norm = b.Vector("per_layer_proj_norm.weight", c.n_embd_per_layer);
  }
  LOCKSTEP_RETURN_IF_ERROR(b.Finish());
  if (pack_threads >= 0) w.PackMatrices(pack_threads);
  return w;
}

// llama.cpp's tensor names for bert (its llama-arch.cpp): token_embd, token_types, position_embd,
// token_embd_norm; per layer attn_{q,k,v,output} (+ .bias), attn_output_norm, ffn_up, ffn_down (+ .bias),
// layer_output_norm (LayerNorms: weight and bias). nomic-bert: no position_embd, one attn_qkv, ffn_gate,
// no biases but the LayerNorms'. jina-bert-v2: no position_embd, ffn_gate, no ffn_up bias.
Result<ModelWeights> ModelWeights::BindBert(const GgufFile& file, const ModelConfig& c, int pack_threads) {
  Binder b(file);
  ModelWeights w;
  const int64_t d = c.n_embd;
  w.token_embd = BindTokenEmbedding(b, c);
  if (c.learned_positions) w.position_embd = b.Table("position_embd.weight", d, c.n_ctx_train);
  w.token_type0 = b.Table("token_types.weight", d, -1);
  w.token_type0.resize(w.token_type0.empty() ? 0 : size_t(d));
  w.embd_norm = b.Vector("token_embd_norm.weight", d);
  w.embd_norm_b = b.Vector("token_embd_norm.bias", d);
  w.layers.resize(c.n_layer);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& lw = w.layers[l];
    if (b.Has(p + "attn_qkv.weight")) {  // nomic-bert: one [q | k | v] matrix
      const WeightMatrix qkv = b.Matrix(p + "attn_qkv.weight", c.q_dim() + 2 * c.kv_dim(), d);
      lw.wq = Binder::Rows(qkv, 0, c.q_dim());
      lw.wk = Binder::Rows(qkv, c.q_dim(), c.kv_dim());
      lw.wv = Binder::Rows(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      lw.wq = b.Matrix(p + "attn_q.weight", c.q_dim(), d);
      lw.wk = b.Matrix(p + "attn_k.weight", c.kv_dim(), d);
      lw.wv = b.Matrix(p + "attn_v.weight", c.kv_dim(), d);
    }
    if (c.qkv_bias) {
      lw.bq = b.Vector(p + "attn_q.bias", c.q_dim());
      lw.bk = b.Vector(p + "attn_k.bias", c.kv_dim());
      lw.bv = b.Vector(p + "attn_v.bias", c.kv_dim());
    }
    lw.wo = b.Matrix(p + "attn_output.weight", d, c.q_dim());
    if (c.attn_output_bias) lw.bo = b.Vector(p + "attn_output.bias", d);
    lw.post_attn_norm = b.Vector(p + "attn_output_norm.weight", d);
    lw.post_attn_norm_b = b.Vector(p + "attn_output_norm.bias", d);
    // nomic-bert: SwiGLU; jina-bert-v2: GeGLU
    if (!c.ungated_ffn) lw.w_gate = b.Matrix(p + "ffn_gate.weight", c.n_ff, d);
    lw.w_up = b.Matrix(p + "ffn_up.weight", c.n_ff, d);
    lw.w_down = b.Matrix(p + "ffn_down.weight", d, c.n_ff);
    if (c.ffn_bias && c.ungated_ffn) lw.b_up = b.Vector(p + "ffn_up.bias", c.n_ff);
    if (c.ffn_bias) lw.b_down = b.Vector(p + "ffn_down.bias", d);  // jina-bert-v2: this one alone
    lw.post_ffn_norm = b.Vector(p + "layer_output_norm.weight", d);
    lw.post_ffn_norm_b = b.Vector(p + "layer_output_norm.bias", d);
  }
  LOCKSTEP_RETURN_IF_ERROR(b.Finish());
  if (pack_threads >= 0) w.PackMatrices(pack_threads);
  return w;
}

}  // namespace lockstep
