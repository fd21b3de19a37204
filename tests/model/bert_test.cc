// The bert encoder (model/bert_encoder.h) on tiny-bert (bge's kind), tiny-nomic-bert (nomic-embed-text's:
// RoPE, one attn_qkv, SwiGLU, no biases) and tiny-jina-bert (jina-embeddings-v2's: ALiBi both ways, GeGLU),
// with the bge WordPiece vocabulary: every row's final hidden state
// matches a naive double-precision reference of llama.cpp's bert graph written here; a sequence's rows are
// bit-identical alone or beside others (interleaved) and at every kernel level (the attention kernels' query
// tiles and key groups, at lengths that fill none of them); batches that break the whole-sequence contract,
// or want logits, are refused.
#include <gtest/gtest.h>

#include <cmath>

#include "model/bert_encoder.h"
#include "model/local_kv.h"
#include "tensor/dequantize.h"
#include "tensor/float16.h"
#include "test_models.h"
#include "testing/levels.h"
#include "testing/testdata.h"

namespace lockstep {
namespace {

using Rows = std::vector<std::vector<double>>;

std::string TinyEncoderPath(const std::string& shape) {
  MakeModelOptions o;
  o.shape = *FindModelShape(shape);
  o.vocab_from = testing::TestDataPath("vocab/ggml-vocab-bert-bge.gguf");
  const std::string p = testing::ScratchDir(shape) + "/" + shape + ".gguf";
  const Status s = WriteRandomModel(o, p);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return p;
}

std::vector<double> Tensor(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.FindTensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  int64_t n = 1;
  for (int64_t d : t->dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  DequantizeRow(t->type, t->data, v.data(), n);
  return std::vector<double>(v.begin(), v.end());
}

// x[i] <- LayerNorm(x)[i] * w[i] + b[i].
void RefLayerNorm(std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                  double eps) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= double(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  var /= double(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
}

// y = W x + b, W [out][in] row-major.
std::vector<double> Affine(const std::vector<double>& w, const std::vector<double>& b,
                           const std::vector<double>& x) {
  std::vector<double> y(b);
  const size_t in = x.size();
  for (size_t o = 0; o < y.size(); ++o) {
    for (size_t i = 0; i < in; ++i) y[o] += w[o * in + i] * x[i];
  }
  return y;
}

// x <- NeoX RoPE of each head of x at `position` (pairs i and i + head_dim / 2, theta_i = base^(-2i/hd)).
void RefRope(std::vector<double>& x, size_t heads, size_t hd, double base, size_t position) {
  for (size_t h = 0; h < heads; ++h) {
    for (size_t i = 0; i < hd / 2; ++i) {
      const double angle = double(position) * std::pow(base, -2.0 * double(i) / double(hd));
      double& a = x[h * hd + i];
      double& b = x[h * hd + i + hd / 2];
      const double a0 = a, b0 = b;
      a = a0 * std::cos(angle) - b0 * std::sin(angle);
      b = a0 * std::sin(angle) + b0 * std::cos(angle);
    }
  }
}

// llama.cpp's CPU GELU: the tanh form of the f16-rounded input, rounded to f16.
double RefGelu(double x) {
  if (x <= -10) return 0;
  if (x >= 10) return x;
  const double h = F16ToF32(F32ToF16(float(x)));
  const double g = 0.5 * h * (1 + std::tanh(std::sqrt(2 / M_PI) * h * (1 + 0.044715 * h * h)));
  return F16ToF32(F32ToF16(float(g)));
}

// nomic-bert (no position_embd): RoPE, [q | k | v] rows of attn_qkv, SwiGLU, no biases but the LayerNorms'.
// jina-bert-v2 (no position_embd): ALiBi both ways (slope_h * -|i - j|), GELU(gate) * up, ffn_down's bias.
Rows ReferenceBert(const GgufFile& f, const ModelConfig& c, const std::vector<int32_t>& tokens) {
  const size_t d = size_t(c.n_embd), n = tokens.size(), hd = size_t(c.head_dim);
  const bool nomic = c.architecture == "nomic-bert", jina = c.architecture == "jina-bert-v2";
  const std::vector<float> slopes = c.AlibiSlopes();
  EXPECT_EQ(slopes.empty(), !jina);
  const std::vector<double> tok = Tensor(f, "token_embd.weight"), type = Tensor(f, "token_types.weight");
  const std::vector<double> pos =
      nomic || jina ? std::vector<double>(n * d) : Tensor(f, "position_embd.weight");
  Rows x(n, std::vector<double>(d));
  for (size_t p = 0; p < n; ++p) {
    for (size_t i = 0; i < d; ++i) x[p][i] = tok[size_t(tokens[p]) * d + i] + type[i] + pos[p * d + i];
    RefLayerNorm(x[p], Tensor(f, "token_embd_norm.weight"), Tensor(f, "token_embd_norm.bias"), c.rms_eps);
  }
  for (int64_t l = 0; l < c.n_layer; ++l) {
    auto w = [&](const std::string& name) { return Tensor(f, "blk." + std::to_string(l) + "." + name); };
    // nomic-bert's tensors without a bias: zeros.
    auto b = [&](const std::string& name, size_t size) {
      return nomic ? std::vector<double>(size) : w(name);
    };
    Rows q(n), k(n), v(n);
    for (size_t p = 0; p < n; ++p) {
      if (nomic) {
        const std::vector<double> qkv = Affine(w("attn_qkv.weight"), std::vector<double>(3 * d), x[p]);
        q[p].assign(qkv.begin(), qkv.begin() + long(d));
        k[p].assign(qkv.begin() + long(d), qkv.begin() + long(2 * d));
        v[p].assign(qkv.begin() + long(2 * d), qkv.end());
        RefRope(q[p], size_t(c.n_head), hd, c.rope_freq_base, p);
        RefRope(k[p], size_t(c.n_head_kv), hd, c.rope_freq_base, p);
      } else {
        q[p] = Affine(w("attn_q.weight"), w("attn_q.bias"), x[p]);
        k[p] = Affine(w("attn_k.weight"), w("attn_k.bias"), x[p]);
        v[p] = Affine(w("attn_v.weight"), w("attn_v.bias"), x[p]);
      }
    }
    Rows next(n);
    for (size_t p = 0; p < n; ++p) {
      std::vector<double> att(d, 0.0);
      for (size_t h = 0; h < size_t(c.n_head); ++h) {
        std::vector<double> s(n);
        double max = -1e300, sum = 0;
        for (size_t j = 0; j < n; ++j) {  // every position: no causal mask
          s[j] = 0;
          for (size_t e = 0; e < hd; ++e) s[j] += q[p][h * hd + e] * k[j][h * hd + e];
          s[j] /= std::sqrt(double(hd));
          if (jina) s[j] -= slopes[h] * std::abs(double(p) - double(j));
          max = std::max(max, s[j]);
        }
        for (double& e : s) sum += (e = std::exp(e - max));
        for (size_t j = 0; j < n; ++j) {
          for (size_t e = 0; e < hd; ++e) att[h * hd + e] += s[j] / sum * v[j][h * hd + e];
        }
      }
      std::vector<double> o = Affine(w("attn_output.weight"), b("attn_output.bias", d), att);
      for (size_t i = 0; i < d; ++i) o[i] += x[p][i];
      RefLayerNorm(o, w("attn_output_norm.weight"), w("attn_output_norm.bias"), c.rms_eps);
      const size_t ff = size_t(c.n_ff);
      std::vector<double> up =
          Affine(w("ffn_up.weight"), nomic || jina ? std::vector<double>(ff) : w("ffn_up.bias"), o);
      if (nomic || jina) {  // SwiGLU: silu(gate) * up; GeGLU: GELU(gate) * up
        const std::vector<double> gate = Affine(w("ffn_gate.weight"), std::vector<double>(ff), o);
        for (size_t i = 0; i < ff; ++i)
          up[i] *= nomic ? gate[i] / (1 + std::exp(-gate[i])) : RefGelu(gate[i]);
      } else {
        for (double& u : up) u = RefGelu(u);
      }
      std::vector<double> down = Affine(w("ffn_down.weight"), b("ffn_down.bias", d), up);
      for (size_t i = 0; i < d; ++i) down[i] += o[i];
      RefLayerNorm(down, w("layer_output_norm.weight"), w("layer_output_norm.bias"), c.rms_eps);
      next[p] = std::move(down);
    }
    x = std::move(next);
  }
  return x;
}

// Runs the sequences in one batch, their rows interleaved (row i of every sequence, then row i + 1, ...);
// returns every row's embedding, per sequence.
std::vector<std::vector<std::vector<float>>> RunInterleaved(Model& model,
                                                            const std::vector<std::vector<int32_t>>& seqs,
                                                            Status* status = nullptr) {
  ThreadPool pool(2);
  const KvLayout layout = model.MakeKvLayout(KvDtype::kF32);
  std::vector<std::unique_ptr<LocalKv>> kvs;
  Batch batch;
  size_t longest = 0;
  for (const auto& s : seqs) {
    kvs.push_back(std::make_unique<LocalKv>(layout, int64_t(s.size())));
    batch.sequences.push_back(kvs.back()->view());
    longest = std::max(longest, s.size());
  }
  std::vector<std::pair<size_t, size_t>> where;  // (sequence, position) of each row
  for (size_t p = 0; p < longest; ++p) {
    for (size_t s = 0; s < seqs.size(); ++s) {
      if (p >= seqs[s].size()) continue;
      batch.rows.push_back(BatchRow{seqs[s][p], int32_t(p), int32_t(s), false, true});
      where.emplace_back(s, p);
    }
  }
  const size_t d = size_t(model.config().n_embd);
  std::vector<float> out(batch.rows.size() * d);
  const Status st = model.Forward(batch, layout, ForwardOutputs{{}, out}, pool);
  if (status != nullptr) *status = st;
  EXPECT_TRUE(status != nullptr || st.ok()) << st.ToString();
  std::vector<std::vector<std::vector<float>>> result(seqs.size());
  for (size_t s = 0; s < seqs.size(); ++s) result[s].resize(seqs[s].size());
  for (size_t r = 0; r < where.size(); ++r) {
    result[where[r].first][where[r].second].assign(out.begin() + r * d, out.begin() + (r + 1) * d);
  }
  return result;
}

class BertTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    LOCKSTEP_REQUIRE_TESTDATA();
    m_ = testing::LoadModelOrDie(TinyEncoderPath(GetParam()));
  }
  testing::LoadedModel m_;
};

TEST_P(BertTest, ConfigIsABidirectionalEncoderWithClsPooling) {
  const ModelConfig& c = m_.model->config();
  const bool nomic = GetParam() == "tiny-nomic-bert", jina = GetParam() == "tiny-jina-bert";
  EXPECT_EQ(c.architecture, nomic ? "nomic-bert" : jina ? "jina-bert-v2" : "bert");
  EXPECT_EQ(c.learned_positions, !nomic && !jina);
  EXPECT_EQ(c.ungated_ffn, !nomic && !jina);
  EXPECT_EQ(c.qkv_bias, !nomic);
  EXPECT_EQ(c.max_alibi_bias, jina ? 8.0f : 0.0f);
  for (const LayerAttention& layer : c.layers) EXPECT_EQ(layer.rope, nomic);
  if (nomic) {
    EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  }
  EXPECT_FALSE(c.causal);
  EXPECT_EQ(c.pooling, Pooling::kCls);
  EXPECT_EQ(c.n_vocab, 30522);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-12f);
  EXPECT_NE(dynamic_cast<BertEncoder*>(m_.model.get()), nullptr);
}

TEST_P(BertTest, MatchesTheNaiveReference) {
  const std::vector<int32_t> tokens = {101, 7592, 1010, 2088, 999, 2023, 2003, 1037, 3231, 102};
  const Rows want = ReferenceBert(*m_.file, m_.model->config(), tokens);
  const auto got = RunInterleaved(*m_.model, {tokens})[0];
  double max_err = 0, max_ref = 0;
  for (size_t p = 0; p < tokens.size(); ++p) {
    for (size_t i = 0; i < want[p].size(); ++i) {
      max_err = std::max(max_err, std::abs(double(got[p][i]) - want[p][i]));
      max_ref = std::max(max_ref, std::abs(want[p][i]));
    }
  }
  EXPECT_GT(max_ref, 0.5);  // LayerNorm outputs: values of order 1
  // f32 against double; a GELU input on the other side of an f16 rounding boundary costs ~1e-3 of it.
  EXPECT_LT(max_err, 2e-3) << "max |diff| " << max_err;
}

TEST_P(BertTest, RowsAreTheSameAloneOrInterleavedWithOthers) {
  const std::vector<int32_t> a = {101, 7592, 2088, 102}, b = {101, 2023, 2003, 1037, 3231, 1012, 102};
  const auto alone_a = RunInterleaved(*m_.model, {a})[0];
  const auto alone_b = RunInterleaved(*m_.model, {b})[0];
  const auto both = RunInterleaved(*m_.model, {b, a, a});
  EXPECT_EQ(both[0], alone_b);
  EXPECT_EQ(both[1], alone_a);
  EXPECT_EQ(both[2], alone_a);
  // Bidirectional: a later token changes an earlier row.
  const auto longer = RunInterleaved(*m_.model, {{101, 7592, 2088, 999, 102}})[0];
  EXPECT_NE(longer[1], alone_a[1]);
}

TEST_P(BertTest, RefusesPartialSequencesAndLogits) {
  ThreadPool pool(1);
  const KvLayout layout = m_.model->MakeKvLayout(KvDtype::kF32);
  LocalKv kv(layout, 16);
  Batch batch;
  batch.sequences.push_back(kv.view());
  batch.rows.push_back(BatchRow{7592, 3, 0, false, true});  // starts at position 3
  std::vector<float> out(size_t(m_.model->config().n_embd));
  Status s = m_.model->Forward(batch, layout, ForwardOutputs{{}, out}, pool);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("whole"), std::string::npos) << s.ToString();
  batch.rows[0] = BatchRow{7592, 0, 0, true, false};
  std::vector<float> logits(size_t(m_.model->config().n_vocab));
  s = m_.model->Forward(batch, layout, ForwardOutputs{logits, {}}, pool);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not logits"), std::string::npos) << s.ToString();
  batch.rows[0] = BatchRow{7592, 512, 0, false, true};
  s = m_.model->Forward(batch, layout, ForwardOutputs{{}, out}, pool);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.ToString();
}

TEST_P(BertTest, LongRowsMatchTheReferenceAloneBesideOthersAndAtEveryLevel) {
  // 41 rows: six query tiles of the attention (8 rows), the last partial; three key groups (16), the last
  // partial. Beside them a sequence of 19 rows.
  std::vector<int32_t> longer = {101}, other = {101};
  for (int i = 0; i < 39; ++i) longer.push_back(1996 + (i * 37) % 4000);
  for (int i = 0; i < 17; ++i) other.push_back(2500 + (i * 53) % 3000);
  longer.push_back(102);
  other.push_back(102);
  const Rows want = ReferenceBert(*m_.file, m_.model->config(), longer);
  const auto alone = RunInterleaved(*m_.model, {longer})[0];
  double max_err = 0;
  for (size_t p = 0; p < longer.size(); ++p) {
    for (size_t i = 0; i < want[p].size(); ++i) {
      max_err = std::max(max_err, std::abs(double(alone[p][i]) - want[p][i]));
    }
  }
  EXPECT_LT(max_err, 2e-3) << "max |diff| " << max_err;
  EXPECT_EQ(RunInterleaved(*m_.model, {other, longer})[1], alone);
  for (const Kernels& kernels : testing::RunnableKernels()) {
    ModelLoadOptions options;
    options.kernels = &kernels;
    Result<std::unique_ptr<Model>> model = Model::Load(m_.file, options);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    EXPECT_EQ(RunInterleaved(**model, {longer, other})[0], alone) << kernels.name();
  }
}

// jina-bert-v2 variants with Q/K LayerNorms or a second attention norm are refused, not run without them.
TEST(JinaBert, RefusesQkNormsAndASecondAttentionNorm) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string path = TinyEncoderPath("tiny-jina-bert");
  for (const char* name : {"blk.0.attn_q_norm.weight", "blk.0.attn_norm_2.weight"}) {
    testing::FileEdit edit;
    edit.copy_tensors = {{"blk.0.attn_output_norm.weight", name}};
    auto file = testing::EditedFile(path, edit);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto config = ModelConfig::FromGguf(**file);
    ASSERT_FALSE(config.ok()) << name;
    EXPECT_EQ(config.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(config.status().message().find(std::string("unsupported: jina-bert-v2 with ") + name),
              std::string::npos)
        << config.status().ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(Encoders, BertTest,
                         ::testing::Values("tiny-bert", "tiny-nomic-bert", "tiny-jina-bert"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return testing::TestParamName(info.param);
                         });

}  // namespace
}  // namespace lockstep
