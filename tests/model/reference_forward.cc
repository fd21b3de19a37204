#include "model/reference_forward.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/reference_internal.h"

namespace lockstep::testing {

// The whole forward pass over its parts (reference_internal.h), in their namespace.
namespace reference {
namespace {

Result<std::vector<std::vector<double>>> Forward(const GgufFile& file, const std::vector<int32_t>& tokens,
                                                 std::vector<std::vector<double>>* embeddings) {
  LOCKSTEP_ASSIGN_OR_RETURN(ModelConfig c, ModelConfig::FromGguf(file));
  LOCKSTEP_ASSIGN_OR_RETURN(Matrix embd, Load(file, "token_embd.weight"));
  Matrix positions;  // gpt2, starcoder: learned position embeddings
  if (c.learned_positions) {
    LOCKSTEP_ASSIGN_OR_RETURN(positions, Load(file, "position_embd.weight"));
  }
  std::vector<double> embd_norm, embd_norm_b;  // bloom: token_embd_norm
  if (c.embedding_norm) {
    LOCKSTEP_ASSIGN_OR_RETURN(embd_norm, LoadVector(file, "token_embd_norm.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(embd_norm_b, LoadVector(file, "token_embd_norm.bias"));
  }
  // ALiBi (bloom): head h's slope, in double (n: the largest power of 2 <= n_head; BLOOM's and ggml's rule).
  std::vector<double> alibi;
  if (c.max_alibi_bias > 0) {
    int64_t pow2 = 1;
    while (pow2 * 2 <= c.n_head) pow2 *= 2;
    for (int64_t h = 0; h < c.n_head; ++h) {
      const double m0 = std::pow(2.0, -double(c.max_alibi_bias) / double(pow2));
      const double m1 = std::pow(2.0, -double(c.max_alibi_bias) / 2.0 / double(pow2));
      alibi.push_back(h < pow2 ? std::pow(m0, double(h + 1)) : std::pow(m1, double(2 * (h - pow2) + 1)));
    }
  }
  Matrix output;
  if (file.FindTensor("output.weight")) {
    LOCKSTEP_ASSIGN_OR_RETURN(output, Load(file, "output.weight"));
  } else {
    output = embd;
  }
  // olmo: LayerNorms without weights (ones).
  const auto load_norm = [&](const std::string& name) -> Result<std::vector<double>> {
    if (!c.norm_weights) return std::vector<double>(size_t(c.n_embd), 1.0);
    return LoadVector(file, name);
  };
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<double> out_norm, load_norm("output_norm.weight"));
  std::vector<double> out_norm_b, out_b;
  if (c.output_bias) {  // phi2
    LOCKSTEP_ASSIGN_OR_RETURN(out_b, LoadVector(file, "output.bias"));
  }
  if (c.norm_bias) {
    LOCKSTEP_ASSIGN_OR_RETURN(out_norm_b, LoadVector(file, "output_norm.bias"));
  }
  std::vector<Layer> layers(c.n_layer);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    Layer& L = layers[l];
    const std::string attn_norm = p + c.AttnNormTensor(), ffn_norm = p + c.FfnNormTensor();
    // deci: layers without attention (no attn_norm), with attn_output alone, or without an FFN
    const LayerAttention& kind = c.layers[l];
    const bool has_ffn = c.LayerFf(l) > 0;
    if (!kind.no_attention) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.attn_norm, load_norm(attn_norm + ".weight"));
    }
    if (c.norm_bias) {  // stablelm
      LOCKSTEP_ASSIGN_OR_RETURN(L.attn_norm_b, LoadVector(file, attn_norm + ".bias"));
      if (!c.parallel_ffn || c.parallel_ffn_norm) {
        LOCKSTEP_ASSIGN_OR_RETURN(L.ffn_norm_b, LoadVector(file, ffn_norm + ".bias"));
      }
    }
    if ((!c.parallel_ffn || c.parallel_ffn_norm) && has_ffn) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.ffn_norm, load_norm(ffn_norm + ".weight"));
    }
    if (c.architecture == "gpt-oss") {
      LOCKSTEP_ASSIGN_OR_RETURN(L.sinks, LoadVector(file, p + "attn_sinks.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.bo, LoadVector(file, p + "attn_output.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.router_b, LoadVector(file, p + "ffn_gate_inp.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.gate_b, Load(file, p + "ffn_gate_exps.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.up_b, Load(file, p + "ffn_up_exps.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.down_b, Load(file, p + "ffn_down_exps.bias"));
    }
    if (c.kv_lora_rank > 0) {  // deepseek2
      if (c.q_lora_rank > 0) {
        LOCKSTEP_ASSIGN_OR_RETURN(L.wq_a, Load(file, p + "attn_q_a.weight"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.q_a_norm, LoadVector(file, p + "attn_q_a_norm.weight"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.wq_b, Load(file, p + "attn_q_b.weight"));
      } else {
        LOCKSTEP_ASSIGN_OR_RETURN(L.wq, Load(file, p + "attn_q.weight"));
      }
      LOCKSTEP_ASSIGN_OR_RETURN(L.wkv_a, Load(file, p + "attn_kv_a_mqa.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.kv_a_norm, LoadVector(file, p + "attn_kv_a_norm.weight"));
      if (c.kv_b_split) {
        LOCKSTEP_ASSIGN_OR_RETURN(L.wk_b, Load(file, p + "attn_k_b.weight"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.wv_b, Load(file, p + "attn_v_b.weight"));
      } else {
        LOCKSTEP_ASSIGN_OR_RETURN(L.wkv_b, Load(file, p + "attn_kv_b.weight"));
      }
    } else if (c.layers[l].recurrent && file.FindTensor(p + "ssm_in.weight") != nullptr) {
      // qwen3next: ssm_in's rows per key head [q | k | v | z], ssm_ba's [beta | alpha], regrouped here
      // into qwen35's four matrices.
      const DeltaNetConfig& dn = c.delta_net;
      const int64_t kd = dn.head_k_dim, vw = dn.v_heads / dn.k_heads * dn.head_v_dim;
      const int64_t group = dn.v_heads / dn.k_heads;
      LOCKSTEP_ASSIGN_OR_RETURN(Matrix in, Load(file, p + "ssm_in.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(Matrix ba, Load(file, p + "ssm_ba.weight"));
      Matrix q, k, v;
      auto append = [](Matrix& to, const Matrix& from) { to.insert(to.end(), from.begin(), from.end()); };
      for (int64_t h = 0; h < dn.k_heads; ++h) {
        const int64_t base = h * (2 * kd + 2 * vw);
        append(q, RowRange(in, base, kd));
        append(k, RowRange(in, base + kd, kd));
        append(v, RowRange(in, base + 2 * kd, vw));
        append(L.dn_z, RowRange(in, base + 2 * kd + vw, vw));
        append(L.dn_beta, RowRange(ba, h * 2 * group, group));
        append(L.dn_alpha, RowRange(ba, h * 2 * group + group, group));
      }
      L.dn_qkv = q;
      append(L.dn_qkv, k);
      append(L.dn_qkv, v);
      LOCKSTEP_ASSIGN_OR_RETURN(L.dn_out, Load(file, p + "ssm_out.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.dn_conv, Load(file, p + "ssm_conv1d.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.dn_a, LoadVector(file, p + "ssm_a"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.dn_dt, LoadVector(file, p + "ssm_dt.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.dn_norm, LoadVector(file, p + "ssm_norm.weight"));
    } else if (c.layers[l].recurrent) {  // qwen35's Gated DeltaNet
      for (auto [m, name] :
           {std::pair{&L.dn_qkv, "attn_qkv.weight"}, std::pair{&L.dn_z, "attn_gate.weight"},
            std::pair{&L.dn_beta, "ssm_beta.weight"}, std::pair{&L.dn_alpha, "ssm_alpha.weight"},
            std::pair{&L.dn_out, "ssm_out.weight"}, std::pair{&L.dn_conv, "ssm_conv1d.weight"}}) {
        LOCKSTEP_ASSIGN_OR_RETURN(*m, Load(file, p + name));
      }
      LOCKSTEP_ASSIGN_OR_RETURN(L.dn_a, LoadVector(file, p + "ssm_a"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.dn_dt, LoadVector(file, p + "ssm_dt.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.dn_norm, LoadVector(file, p + "ssm_norm.weight"));
    } else if (kind.no_attention || kind.linear_attention) {  // deci: nothing, or attn_output alone (below)
    } else if (file.FindTensor(p + "attn_qkv.weight")) {      // phi3: [q | k | v]
      LOCKSTEP_ASSIGN_OR_RETURN(Matrix qkv, Load(file, p + "attn_qkv.weight"));
      L.wq = RowRange(qkv, 0, c.q_dim());
      L.wk = RowRange(qkv, c.q_dim(), c.kv_dim());
      L.wv = RowRange(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      LOCKSTEP_ASSIGN_OR_RETURN(L.wq, Load(file, p + "attn_q.weight"));
      if (c.StoresKv(l)) {  // Gemma 4's shared-KV layers have none; without attn_v, V is K's projection
        LOCKSTEP_ASSIGN_OR_RETURN(L.wk, Load(file, p + "attn_k.weight"));
        if (file.FindTensor(p + "attn_v.weight") != nullptr || !c.v_norm) {
          LOCKSTEP_ASSIGN_OR_RETURN(L.wv, Load(file, p + "attn_v.weight"));
        } else {
          L.wv = L.wk;
        }
      }
    }
    if (file.FindTensor(p + "layer_output_scale.weight") != nullptr) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.out_scale, LoadVector(file, p + "layer_output_scale.weight"));
    }
    if (c.n_embd_per_layer > 0) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.pl_gate, Load(file, p + "inp_gate.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.pl_proj, Load(file, p + "proj.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.pl_post_norm, LoadVector(file, p + "post_norm.weight"));
    }
    if (!c.layers[l].recurrent && !kind.no_attention) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.wo, Load(file, p + "attn_output.weight"));
    }
    if (!has_ffn) {
    } else if (c.dense_beside_experts) {  // Gemma 4 26B-A4B: the dense FFN, and experts of [gate | up] rows
      LOCKSTEP_ASSIGN_OR_RETURN(L.gate, Load(file, p + "ffn_gate.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.up, Load(file, p + "ffn_up.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.down, Load(file, p + "ffn_down.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.router, Load(file, p + "ffn_gate_inp.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.router_scale, LoadVector(file, p + "ffn_gate_inp.scale"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.expert_scale, LoadVector(file, p + "ffn_down_exps.scale"));
      LOCKSTEP_ASSIGN_OR_RETURN(std::vector<Matrix> gate_up,
                                LoadExperts(file, p + "ffn_gate_up_exps.weight", c.n_expert));
      for (const Matrix& m : gate_up) {
        L.expert_gate.push_back(RowRange(m, 0, m.size() / 2));
        L.expert_up.push_back(RowRange(m, m.size() / 2, m.size() / 2));
      }
      LOCKSTEP_ASSIGN_OR_RETURN(L.expert_down, LoadExperts(file, p + "ffn_down_exps.weight", c.n_expert));
      LOCKSTEP_ASSIGN_OR_RETURN(L.pre_ffn_norm_2, LoadVector(file, p + "pre_ffw_norm_2.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.post_ffn_norm_1, LoadVector(file, p + "post_ffw_norm_1.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.post_ffn_norm_2, LoadVector(file, p + "post_ffw_norm_2.weight"));
    } else if (c.FeedForwardExperts(l)) {
      if (c.expert_selection_bias) {
        LOCKSTEP_ASSIGN_OR_RETURN(L.selection_bias, LoadVector(file, p + "exp_probs_b.bias"));
      }
      LOCKSTEP_ASSIGN_OR_RETURN(L.router, Load(file, p + "ffn_gate_inp.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.expert_gate, LoadExperts(file, p + "ffn_gate_exps.weight", c.n_expert));
      LOCKSTEP_ASSIGN_OR_RETURN(L.expert_up, LoadExperts(file, p + "ffn_up_exps.weight", c.n_expert));
      LOCKSTEP_ASSIGN_OR_RETURN(L.expert_down, LoadExperts(file, p + "ffn_down_exps.weight", c.n_expert));
      if (c.n_ff_shared > 0) {
        if (c.shared_expert_gate) {
          LOCKSTEP_ASSIGN_OR_RETURN(L.shared_gate, LoadVector(file, p + "ffn_gate_inp_shexp.weight"));
        }
        LOCKSTEP_ASSIGN_OR_RETURN(L.gate, Load(file, p + "ffn_gate_shexp.weight"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.up, Load(file, p + "ffn_up_shexp.weight"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.down, Load(file, p + "ffn_down_shexp.weight"));
      }
    } else if (c.ungated_ffn) {  // phi2, starcoder2, gptneox (falcon, nemotron: no biases)
      LOCKSTEP_ASSIGN_OR_RETURN(L.up, Load(file, p + "ffn_up.weight"));
      L.b_up.assign(size_t(c.n_ff), 0.0);
      L.b_down.assign(size_t(c.n_embd), 0.0);
      if (c.ffn_bias) {
        LOCKSTEP_ASSIGN_OR_RETURN(L.b_up, LoadVector(file, p + "ffn_up.bias"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.b_down, LoadVector(file, p + "ffn_down.bias"));
      }
    } else if (file.FindTensor(p + "ffn_gate.weight")) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.gate, Load(file, p + "ffn_gate.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.up, Load(file, p + "ffn_up.weight"));
      if (c.ffn_bias) {  // jais
        LOCKSTEP_ASSIGN_OR_RETURN(L.b_gate, LoadVector(file, p + "ffn_gate.bias"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.b_up, LoadVector(file, p + "ffn_up.bias"));
        LOCKSTEP_ASSIGN_OR_RETURN(L.b_down, LoadVector(file, p + "ffn_down.bias"));
      }
    } else {  // phi3: [gate | up]
      LOCKSTEP_ASSIGN_OR_RETURN(Matrix gate_up, Load(file, p + "ffn_up.weight"));
      L.gate = RowRange(gate_up, 0, c.n_ff);
      L.up = RowRange(gate_up, c.n_ff, c.n_ff);
    }
    if (has_ffn && !c.FeedForwardExperts(l)) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.down, Load(file, p + "ffn_down.weight"));
    }
    if (c.qk_norm_per_head) {  // Command R+: [n_head][head_dim], kept flat
      for (auto [norm, name] :
           {std::pair{&L.q_norm, "attn_q_norm.weight"}, std::pair{&L.k_norm, "attn_k_norm.weight"}}) {
        LOCKSTEP_ASSIGN_OR_RETURN(Matrix heads, Load(file, p + name));
        for (const std::vector<double>& head : heads) norm->insert(norm->end(), head.begin(), head.end());
      }
    } else if (c.qk_norm && !c.layers[l].recurrent) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.q_norm, LoadVector(file, p + "attn_q_norm.weight"));
      if (c.StoresKv(l)) {
        LOCKSTEP_ASSIGN_OR_RETURN(L.k_norm, LoadVector(file, p + "attn_k_norm.weight"));
      }
    }
    if (c.post_norms) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.post_attn_norm, LoadVector(file, p + "post_attention_norm.weight"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.post_ffn_norm, LoadVector(file, p + "post_ffw_norm.weight"));
    }
    if (c.attn_output_bias && L.bo.empty()) {  // phi2, starcoder2 (gpt-oss's: above)
      LOCKSTEP_ASSIGN_OR_RETURN(L.bo, LoadVector(file, p + "attn_output.bias"));
    }
    if (c.qkv_bias && file.FindTensor(p + "attn_qkv.bias") != nullptr) {  // phi2's fused [q | k | v]
      LOCKSTEP_ASSIGN_OR_RETURN(std::vector<double> qkv, LoadVector(file, p + "attn_qkv.bias"));
      L.bq.assign(qkv.begin(), qkv.begin() + c.q_dim());
      L.bk.assign(qkv.begin() + c.q_dim(), qkv.begin() + c.q_dim() + c.kv_dim());
      L.bv.assign(qkv.begin() + c.q_dim() + c.kv_dim(), qkv.end());
    } else if (c.qkv_bias) {
      LOCKSTEP_ASSIGN_OR_RETURN(L.bq, LoadVector(file, p + "attn_q.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.bk, LoadVector(file, p + "attn_k.bias"));
      LOCKSTEP_ASSIGN_OR_RETURN(L.bv, LoadVector(file, p + "attn_v.bias"));
    }
  }

  const size_t n = tokens.size();
  Matrix x(n);
  for (size_t t = 0; t < n; ++t) {
    x[t] = embd[tokens[t]];
    if (c.learned_positions) {
      for (size_t i = 0; i < x[t].size(); ++i) x[t][i] += positions[t][i];
    }
    if (c.embedding_norm) x[t] = LayerNorm(x[t], embd_norm, embd_norm_b, c.rms_eps);
    if (c.scale_embeddings) {
      for (double& e : x[t]) e *= std::sqrt(double(c.n_embd));
    }
    if (c.embedding_multiplier != 0) {
      for (double& e : x[t]) e *= c.embedding_multiplier;
    }
  }
  // Gemma 4's per-layer inputs: [token][n_layer * n_embd_per_layer].
  Matrix per_layer(n);
  if (c.n_embd_per_layer > 0) {
    const int64_t e = c.n_embd_per_layer;
    LOCKSTEP_ASSIGN_OR_RETURN(Matrix table, Load(file, "per_layer_token_embd.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(Matrix model_proj, Load(file, "per_layer_model_proj.weight"));
    LOCKSTEP_ASSIGN_OR_RETURN(std::vector<double> proj_norm, LoadVector(file, "per_layer_proj_norm.weight"));
    for (size_t t = 0; t < n; ++t) {
      std::vector<double> proj = MatVec(model_proj, x[t]);
      for (double& value : proj) value /= std::sqrt(double(c.n_embd));  // transformers' projection scale
      per_layer[t].resize(proj.size());
      for (int64_t l = 0; l < c.n_layer; ++l) {
        const std::vector<double> slice(proj.begin() + l * e, proj.begin() + (l + 1) * e);
        const std::vector<double> normed = RmsNorm(slice, proj_norm, c.rms_eps);
        for (int64_t i = 0; i < e; ++i) {
          per_layer[t][l * e + i] =
              (normed[i] + table[tokens[t]][l * e + i] * std::sqrt(double(e))) / std::sqrt(2.0);
        }
      }
    }
  }
  // attn_norm, ffn_norm, output_norm and Q/K head norms: command-r's, cohere2's and stablelm's LayerNorm
  // (stablelm's with biases, but the Q/K ones), else RMSNorm.
  auto norm = [&](const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b) {
    return c.layer_norm ? LayerNorm(x, w, b, c.rms_eps) : RmsNorm(x, w, c.rms_eps);
  };
  auto norm_heads = [&](std::vector<double>& v, const std::vector<double>& w) {
    if (!c.layer_norm) return NormHeads(v, w, c.rms_eps);
    const size_t hd = size_t(c.head_dim);  // Command R+: each head its own weights
    for (size_t h = 0; h < v.size() / hd; ++h) {
      const std::vector<double> head(v.begin() + h * hd, v.begin() + (h + 1) * hd);
      const std::vector<double> weights(w.begin() + h * hd, w.begin() + (h + 1) * hd);
      const std::vector<double> normed = LayerNorm(head, weights, {}, c.rms_eps);
      std::copy(normed.begin(), normed.end(), v.begin() + h * hd);
    }
  };
  std::vector<Matrix> keys(c.n_layer), values(c.n_layer);  // per layer that stores them (Gemma 4)
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Layer& L = layers[l];
    const int64_t hd = c.LayerHeadDim(l), n_head_kv = c.LayerKvHeads(l);
    const int64_t group = c.n_head / n_head_kv;
    const bool stores_kv = c.StoresKv(l);
    const bool recurrent = c.layers[l].recurrent;
    const bool attends = c.Attends(l);  // deci: not its layers without attention or with linear attention
    // attn_in: attn_norm's output (Cohere's FFN reads it); ffn_in: gptneox's parallel FFN's own norm of the
    // layer's input.
    Matrix q(n), k(n), v(n), gate(n), attn_in(n), ffn_in(n);
    if (recurrent) {
      Matrix h(n);
      for (size_t t = 0; t < n; ++t) h[t] = RmsNorm(x[t], L.attn_norm, c.rms_eps);
      const Matrix o = DeltaNetReference(L, c, h);
      for (size_t t = 0; t < n; ++t) {
        for (size_t i = 0; i < o[t].size(); ++i) x[t][i] += o[t][i];
      }
    }
    for (size_t t = 0; t < n && c.kv_lora_rank > 0; ++t) {
      LatentAttention(L, c, RmsNorm(x[t], L.attn_norm, c.rms_eps), int64_t(t), q[t], k[t], v[t]);
    }
    for (size_t t = 0; t < n && c.layers[l].linear_attention; ++t) {  // deci: x += attn_output . norm(x)
      const std::vector<double> o = MatVec(L.wo, norm(x[t], L.attn_norm, L.attn_norm_b));
      for (size_t i = 0; i < o.size(); ++i) x[t][i] += o[i];
    }
    for (size_t t = 0; t < n && c.kv_lora_rank == 0 && attends; ++t) {
      const std::vector<double> h = attn_in[t] = norm(x[t], L.attn_norm, L.attn_norm_b);
      if (c.parallel_ffn_norm) ffn_in[t] = norm(x[t], L.ffn_norm, L.ffn_norm_b);
      q[t] = MatVec(L.wq, h);
      if (c.attn_output_gate) {  // qwen35: [query | gate] per head
        std::vector<double> qg = q[t];
        q[t].assign(size_t(c.q_dim()), 0.0);
        gate[t].assign(size_t(c.q_dim()), 0.0);
        for (int64_t head = 0; head < c.n_head; ++head) {
          for (int64_t i = 0; i < c.head_dim; ++i) {
            q[t][size_t(head * c.head_dim + i)] = qg[size_t(2 * head * c.head_dim + i)];
            gate[t][size_t(head * c.head_dim + i)] = qg[size_t((2 * head + 1) * c.head_dim + i)];
          }
        }
      }
      if (!stores_kv) {
        if (c.qk_norm) NormHeads(q[t], L.q_norm, c.rms_eps);
        Rotate(q[t], c.n_head, c, int64_t(t), c.layers[l].local_rope);
        continue;
      }
      k[t] = MatVec(L.wk, h);
      v[t] = MatVec(L.wv, h);
      if (c.v_norm) NormHeads(v[t], std::vector<double>(size_t(hd), 1.0), c.rms_eps);
      if (c.qkv_bias) {
        for (size_t i = 0; i < q[t].size(); ++i) q[t][i] += L.bq[i];
        for (size_t i = 0; i < k[t].size(); ++i) k[t][i] += L.bk[i];
        for (size_t i = 0; i < v[t].size(); ++i) v[t][i] += L.bv[i];
      }
      if (c.clamp_kqv > 0) {  // olmo
        for (std::vector<double>* y : {&q[t], &k[t], &v[t]}) {
          for (double& e : *y) e = std::clamp(e, -double(c.clamp_kqv), double(c.clamp_kqv));
        }
      }
      if (c.qk_norm) {
        norm_heads(q[t], L.q_norm);
        norm_heads(k[t], L.k_norm);
      }
      if (c.layers[l].rope) {
        Rotate(q[t], c.n_head, c, int64_t(t), c.layers[l].local_rope);
        Rotate(k[t], n_head_kv, c, int64_t(t), c.layers[l].local_rope);
      }
      if (c.attn_temperature_scale != 0) {  // Llama 4's (Ministral 3's) query temperature
        const double steps = std::floor(double(t) / double(c.attn_temperature_length));
        for (double& x : q[t]) x *= 1 + c.attn_temperature_scale * std::log(1 + steps);
      }
    }
    if (stores_kv) {
      keys[l] = k;
      values[l] = v;
    } else if (attends) {  // Gemma 4's shared-KV layers
      k = keys[c.layers[l].kv_from];
      v = values[c.layers[l].kv_from];
    }
    for (size_t t = 0; t < n && attends; ++t) {
      std::vector<double> att(c.LayerAttDim(l), 0.0);
      const int64_t nv = c.LayerValueDim(l);
      for (int64_t h = 0; h < c.n_head; ++h) {
        const int64_t kvh = h / group;
        // Keys in the layer's window: positions s with t - s < window.
        const int64_t window = c.layers[l].window;
        const size_t first = window > 0 && int64_t(t) >= window ? t - size_t(window) + 1 : 0;
        std::vector<double> scores(t + 1, 0.0);
        double max_score = -1e300;
        for (size_t s = first; s <= t; ++s) {
          double dot = 0;
          for (int64_t i = 0; i < hd; ++i) dot += q[t][h * hd + i] * k[s][kvh * hd + i];
          scores[s] = dot * c.attention_scale;
          if (!alibi.empty()) scores[s] += alibi[size_t(h)] * (double(s) - double(t));  // bloom
          if (c.attn_softcap > 0) scores[s] = c.attn_softcap * std::tanh(scores[s] / c.attn_softcap);
          max_score = std::max(max_score, scores[s]);
        }
        double sum = 0;
        for (size_t s = first; s <= t; ++s) sum += (scores[s] = std::exp(scores[s] - max_score));
        if (!L.sinks.empty()) sum += std::exp(L.sinks[h] - max_score);  // a score with no value
        for (size_t s = first; s <= t; ++s) {
          for (int64_t i = 0; i < nv; ++i) att[h * nv + i] += scores[s] / sum * v[s][kvh * nv + i];
        }
      }
      if (c.attn_output_gate) {
        for (size_t i = 0; i < att.size(); ++i) att[i] *= Sigmoid(gate[t][i]);
      }
      std::vector<double> o = MatVec(L.wo, att);
      for (size_t i = 0; i < L.bo.size(); ++i) o[i] += L.bo[i];
      if (c.post_norms) o = RmsNorm(o, L.post_attn_norm, c.rms_eps);
      const double residual = c.residual_multiplier != 0 ? c.residual_multiplier : 1.0;
      for (size_t i = 0; i < o.size(); ++i) x[t][i] += residual * o[i];
    }
    for (size_t t = 0; t < n && c.LayerFf(l) > 0; ++t) {  // deci: layers without an FFN
      const std::vector<double> h = c.parallel_ffn_norm ? ffn_in[t]
                                    : c.parallel_ffn    ? attn_in[t]
                                                        : norm(x[t], L.ffn_norm, L.ffn_norm_b);
      if (c.FeedForwardExperts(l) && !c.dense_beside_experts) {
        const std::vector<double> d = Experts(L, c, h);
        for (size_t i = 0; i < d.size(); ++i) x[t][i] += d[i];
        continue;
      }
      if (c.ungated_ffn) {  // phi2, starcoder2: GELU(up . h + b_up), then down + b_down (nemotron: ReLU^2)
        std::vector<double> u = MatVec(L.up, h);
        for (size_t i = 0; i < u.size(); ++i) {
          const double v = u[i] + L.b_up[i];
          u[i] = c.ffn_activation == FfnActivation::kReluSquared ? (v > 0 ? v * v : 0.0) : Gelu(v);
        }
        const std::vector<double> d = MatVec(L.down, u);
        for (size_t i = 0; i < d.size(); ++i) x[t][i] += d[i] + L.b_down[i];
        continue;
      }
      std::vector<double> g = MatVec(L.gate, h);
      std::vector<double> u = MatVec(L.up, h);
      for (size_t i = 0; i < L.b_gate.size(); ++i) {  // jais
        g[i] += L.b_gate[i];
        u[i] += L.b_up[i];
      }
      for (size_t i = 0; i < g.size(); ++i) {
        if (c.ffn_activation == FfnActivation::kGeluTanh) {
          g[i] = Gelu(g[i]) * u[i];
        } else {
          g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        }
      }
      std::vector<double> d = MatVec(L.down, g);
      for (size_t i = 0; i < L.b_down.size(); ++i) d[i] += L.b_down[i];  // jais
      if (c.dense_beside_experts) {  // Gemma 4: + the experts, each sum normed
        d = RmsNorm(d, L.post_ffn_norm_1, c.rms_eps);
        const std::vector<double> e = RmsNorm(Gemma4Experts(L, c, x[t]), L.post_ffn_norm_2, c.rms_eps);
        for (size_t i = 0; i < d.size(); ++i) d[i] += e[i];
      }
      if (c.post_norms) d = RmsNorm(d, L.post_ffn_norm, c.rms_eps);
      const double residual = c.residual_multiplier != 0 ? c.residual_multiplier : 1.0;
      for (size_t i = 0; i < d.size(); ++i) x[t][i] += residual * d[i];
      if (c.n_embd_per_layer > 0) {  // Gemma 4: x += norm(proj . (GELU(gate . x) * input))
        std::vector<double> gated = MatVec(L.pl_gate, x[t]);
        for (int64_t i = 0; i < c.n_embd_per_layer; ++i) {
          gated[i] = Gelu(gated[i]) * per_layer[t][l * c.n_embd_per_layer + i];
        }
        const std::vector<double> p = RmsNorm(MatVec(L.pl_proj, gated), L.pl_post_norm, c.rms_eps);
        for (size_t i = 0; i < p.size(); ++i) x[t][i] += p[i];
      }
      for (double& value : x[t]) value *= L.out_scale.empty() ? 1.0 : L.out_scale[0];
    }
  }
  std::vector<std::vector<double>> logits(n);
  if (embeddings != nullptr) embeddings->assign(n, {});
  for (size_t t = 0; t < n; ++t) {
    const std::vector<double> normed = norm(x[t], out_norm, out_norm_b);
    if (embeddings != nullptr) (*embeddings)[t] = normed;
    logits[t] = MatVec(output, normed);
    for (size_t i = 0; i < out_b.size(); ++i) logits[t][i] += out_b[i];
    if (c.logit_scale != 0) {
      for (double& v : logits[t]) v *= c.logit_scale;
    }
    if (c.final_softcap > 0) {
      for (double& v : logits[t]) v = c.final_softcap * std::tanh(v / c.final_softcap);
    }
  }
  return logits;
}

}  // namespace
}  // namespace reference

Result<std::vector<std::vector<double>>> ReferenceForward(const GgufFile& file,
                                                          const std::vector<int32_t>& tokens,
                                                          std::vector<std::vector<double>>* embeddings) {
  return reference::Forward(file, tokens, embeddings);
}

}  // namespace lockstep::testing
