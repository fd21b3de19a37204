// LoRA adapters (model/lora_adapter.h): the runtime y = W·x + s·B·(A·x) against the naive reference forward
// pass of a model whose matrices have the adapter merged in (W + s·B·A, computed here in double from the
// adapter file), scale 0 against no adapter (bit-identical), rows with different scales in one batch
// against their solo runs (bit-identical), and malformed adapters (clear errors naming file and tensor).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "gguf/gguf_writer.h"
#include "model/lora_adapter.h"
#include "model/lora_writer.h"
#include "model/reference_forward.h"
#include "model/test_models.h"
#include "tensor/dequantize.h"

namespace lockstep::testing {
namespace {

std::vector<float> Floats(const GgufTensorInfo& t) {
  std::vector<float> out(size_t(t.elements()));
  const size_t row_bytes = RowBytes(t.type, t.dims[0]);
  for (int64_t r = 0; r < t.rows(); ++r) {
    DequantizeRow(t.type, t.data + size_t(r) * row_bytes, out.data() + r * t.dims[0], t.dims[0]);
  }
  return out;
}

// A copy of `model` with every matrix the adapter adapts replaced by W + s·B·A in f32, s = scale·alpha/rank.
std::string WriteMerged(const GgufFile& model, const GgufFile& adapter, float scale,
                        const std::string& path) {
  const float alpha = float(adapter.GetFloatOr("adapter.lora.alpha", 0).value());
  GgufWriter writer;
  for (const auto& [key, value] : model.metadata()) writer.Set(key, value);
  for (const GgufTensorInfo& t : model.tensors()) {
    const GgufTensorInfo* a = adapter.FindTensor(t.name + ".lora_a");
    const GgufTensorInfo* b = adapter.FindTensor(t.name + ".lora_b");
    if (a == nullptr) {
      const size_t bytes = RowBytes(t.type, t.dims[0]) * size_t(t.rows());
      EXPECT_TRUE(writer.AddTensor(t.name, t.type, t.dims, {t.data, bytes}).ok());
      continue;
    }
    const int64_t in = t.dims[0], out = t.rows(), rank = b->dims[0];
    const double s = double(scale) * alpha / double(rank);
    std::vector<float> w = Floats(t);
    const std::vector<float> fa = Floats(*a), fb = Floats(*b);
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        double ba = 0;
        for (int64_t r = 0; r < rank; ++r) ba += double(fb[o * rank + r]) * fa[r * in + i];
        w[o * in + i] = float(w[o * in + i] + s * ba);
      }
    }
    EXPECT_TRUE(writer
                    .AddTensor(t.name, TensorType::kF32, t.dims,
                               {reinterpret_cast<const std::byte*>(w.data()), w.size() * sizeof(float)})
                    .ok());
  }
  EXPECT_TRUE(writer.WriteFile(path).ok());
  return path;
}

std::string AdapterPath(const std::string& model, MakeLoraOptions options, const std::string& name) {
  const std::string path = ScratchDir("lora") + "/" + name + ".gguf";
  auto file = GgufFile::Open(model);
  EXPECT_TRUE(file.ok());
  const Status s = WriteRandomLora(**file, options, path);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return path;
}

std::unique_ptr<Model> LoadWith(const std::shared_ptr<const GgufFile>& file, std::vector<std::string> lora) {
  auto model = Model::Load(file, {.lora_paths = std::move(lora)});
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(model).value() : nullptr;
}

std::vector<int32_t> Tokens(int n, int64_t vocab, int seed = 11) {
  std::vector<int32_t> tokens;
  for (int i = 0; i < n; ++i) tokens.push_back(int32_t((i * 37 + seed) % vocab));
  return tokens;
}

int32_t Argmax(const std::vector<float>& v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

// Greedy continuation of `prompt` for `n` tokens (each step recomputes the sequence: simple and exact).
std::vector<int32_t> Greedy(Model& model, std::vector<int32_t> tokens, int n, std::span<const float> scales,
                            ThreadPool& pool) {
  std::vector<int32_t> generated;
  for (int i = 0; i < n; ++i) {
    const auto logits = RunSequence(model, tokens, 8, KvDtype::kF32, pool, scales);
    generated.push_back(Argmax(logits.back()));
    tokens.push_back(generated.back());
  }
  return generated;
}

TEST(Lora, RuntimeMatchesMergedReference) {
  for (const char* shape : {"tiny", "tiny-qwen3", "tiny-gemma2"}) {
    SCOPED_TRACE(shape);
    const std::string model_path = TinyModelPath(shape, TensorType::kF32);
    MakeLoraOptions options;
    options.rank = 4;
    options.alpha = 8;
    if (std::string(shape) == "tiny") options.targets.push_back("output");  // untied
    options.type = TensorType::kF16;
    const std::string adapter_path = AdapterPath(model_path, options, std::string("merged-") + shape);
    const float scale = 0.7f;
    std::shared_ptr<const GgufFile> file = std::move(GgufFile::Open(model_path)).value();
    std::shared_ptr<const GgufFile> adapter = std::move(GgufFile::Open(adapter_path)).value();
    const std::string merged_path =
        WriteMerged(*file, *adapter, scale, ScratchDir("lora") + "/merged-model-" + shape + ".gguf");
    std::shared_ptr<const GgufFile> merged = std::move(GgufFile::Open(merged_path)).value();

    std::unique_ptr<Model> adapted = LoadWith(file, {adapter_path});
    std::unique_ptr<Model> base = LoadWith(file, {});
    std::unique_ptr<Model> merged_model = LoadWith(merged, {});
    ASSERT_TRUE(adapted && base && merged_model);
    const int64_t vocab = adapted->config().n_vocab;
    const std::vector<int32_t> tokens = Tokens(21, vocab);
    auto reference = ReferenceForward(*merged, tokens);
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    ThreadPool pool(2);
    const float scales[] = {scale};
    const auto fast = RunSequence(*adapted, tokens, 5, KvDtype::kF32, pool, scales);
    const auto plain = RunSequence(*base, tokens, 5, KvDtype::kF32, pool);
    double max_ref = 0, max_err = 0, max_change = 0;
    for (size_t t = 0; t < tokens.size(); ++t) {
      for (int64_t v = 0; v < vocab; ++v) {
        max_ref = std::max(max_ref, std::abs((*reference)[t][v]));
        max_err = std::max(max_err, std::abs(double(fast[t][v]) - (*reference)[t][v]));
        max_change = std::max(max_change, std::abs(double(plain[t][v]) - (*reference)[t][v]));
      }
    }
    std::printf(
        "[ lora     ] %s: max |runtime - merged reference| / max |reference| = %.2e (adapter moves "
        "logits by %.2e)\n",
        shape, max_err / max_ref, max_change / max_ref);
    EXPECT_LE(max_err, 1e-4 * max_ref);
    EXPECT_GE(max_change, 1e-2 * max_ref);  // the adapter matters, so the comparison means something
    // Greedy tokens: the runtime adapter and lockstep's own forward pass on the merged weights.
    EXPECT_EQ(Greedy(*adapted, Tokens(6, vocab, 3), 12, scales, pool),
              Greedy(*merged_model, Tokens(6, vocab, 3), 12, {}, pool));
  }
}

TEST(Lora, ScaleZeroIsBitIdenticalToNoAdapter) {
  const std::string model_path = TinyModelPath("tiny", TensorType::kQ8_0);
  const std::string a = AdapterPath(model_path, {}, "zero-a");
  std::shared_ptr<const GgufFile> file = std::move(GgufFile::Open(model_path)).value();
  std::unique_ptr<Model> adapted = LoadWith(file, {a, a});
  std::unique_ptr<Model> base = LoadWith(file, {});
  ASSERT_TRUE(adapted && base);
  ThreadPool pool(2);
  const std::vector<int32_t> tokens = Tokens(30, adapted->config().n_vocab);
  const auto expected = RunSequence(*base, tokens, 7, KvDtype::kF16, pool);
  const float zeros[] = {0.0f, -0.0f};
  EXPECT_EQ(expected, RunSequence(*adapted, tokens, 7, KvDtype::kF16, pool));
  EXPECT_EQ(expected, RunSequence(*adapted, tokens, 7, KvDtype::kF16, pool, zeros));
  const float one[] = {1.0f};
  EXPECT_NE(expected, RunSequence(*adapted, tokens, 7, KvDtype::kF16, pool, one));
  // More scales than adapters: an error, not a crash.
  const float three[] = {1, 1, 1};
  const KvLayout layout = adapted->MakeKvLayout(KvDtype::kF16);
  LocalKv kv(layout, 4);
  Batch batch;
  batch.sequences.push_back(kv.view());
  batch.sequences[0].lora_scales = three;
  batch.rows.push_back({1, 0, 0, true});
  std::vector<float> logits(size_t(adapted->config().n_vocab));
  const Status s = adapted->Forward(batch, layout, logits, pool);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("3 LoRA scales; 2 adapters"), std::string::npos) << s.ToString();
}

// Sequences with different scales (two adapters: one on every target, one on attention and output only) in
// one batch, interleaved, with prefill chunks, decode rows and rows without logits (the last layer's skip):
// every row's logits are bit-identical to its sequence's solo run.
TEST(Lora, MixedScalesInOneBatchMatchSoloRuns) {
  for (const char* types : {"q8_0", "f32"}) {
    SCOPED_TRACE(types);
    const std::string model_path = TinyModelPath("tiny", types);
    MakeLoraOptions second;
    second.rank = 3;
    second.alpha = 0;
    second.targets = {"attn_q", "attn_v", "output"};
    second.type = TensorType::kBF16;
    const std::string a = AdapterPath(model_path, {}, std::string("mixed-a-") + types);
    const std::string b = AdapterPath(model_path, second, std::string("mixed-b-") + types);
    std::shared_ptr<const GgufFile> file = std::move(GgufFile::Open(model_path)).value();
    std::unique_ptr<Model> model = LoadWith(file, {a, b});
    ASSERT_TRUE(model);
    const int64_t vocab = model->config().n_vocab;
    const std::vector<std::vector<float>> scales = {{1.0f}, {0.5f, 2.0f}, {}, {0.0f, -1.0f}, {0.5f, 2.0f}};
    const int kSeqs = int(scales.size());
    std::mt19937 rng(5);
    std::vector<std::vector<int32_t>> seqs(kSeqs);
    for (int s = 0; s < kSeqs; ++s) {
      seqs[s].resize(9 + 6 * s);
      for (int32_t& t : seqs[s]) t = int32_t(rng() % vocab);
    }
    ThreadPool pool(2);
    std::vector<std::vector<std::vector<float>>> solo(kSeqs);
    for (int s = 0; s < kSeqs; ++s) solo[s] = RunSequence(*model, seqs[s], 1, KvDtype::kF16, pool, scales[s]);

    const KvLayout layout = model->MakeKvLayout(KvDtype::kF16, 16);
    std::vector<std::unique_ptr<LocalKv>> kvs;
    Batch batch;
    for (int s = 0; s < kSeqs; ++s) {
      kvs.push_back(std::make_unique<LocalKv>(layout, int64_t(seqs[s].size())));
      batch.sequences.push_back(kvs.back()->view());
      batch.sequences.back().lora_scales = scales[s];
    }
    std::vector<size_t> done(kSeqs, 0);
    size_t compared = 0;
    for (int step = 0;; ++step) {
      batch.rows.clear();
      std::vector<std::vector<BatchRow>> per_seq(kSeqs);
      for (int s = 0; s < kSeqs; ++s) {
        const size_t chunk = (step + s) % 3 == 0 ? 5 : 1;
        for (size_t i = done[s]; i < std::min(seqs[s].size(), done[s] + chunk); ++i) {
          per_seq[s].push_back({seqs[s][i], int32_t(i), s, (i + s) % 3 != 1});
        }
      }
      for (size_t k = 0;; ++k) {
        bool any = false;
        for (int s = 0; s < kSeqs; ++s) {
          if (k < per_seq[s].size()) {
            batch.rows.push_back(per_seq[s][k]);
            any = true;
          }
        }
        if (!any) break;
      }
      if (batch.rows.empty()) break;
      std::vector<float> logits(size_t(batch.LogitRows() * vocab));
      ASSERT_TRUE(model->Forward(batch, layout, logits, pool).ok());
      size_t out = 0;
      for (const BatchRow& row : batch.rows) {
        if (!row.wants_logits) continue;
        ASSERT_EQ(std::memcmp(solo[row.sequence][row.position].data(), logits.data() + out * vocab,
                              vocab * sizeof(float)),
                  0)
            << "sequence " << row.sequence << " position " << row.position << " step " << step;
        ++out;
        ++compared;
      }
      for (int s = 0; s < kSeqs; ++s) done[s] += per_seq[s].size();
    }
    EXPECT_GT(compared, 40u);
  }
}

// ---- Malformed adapters.

struct BadTensor {
  std::string name;
  TensorType type = TensorType::kF32;
  std::vector<int64_t> dims;
};

std::string WriteAdapter(const std::string& name, const std::vector<BadTensor>& tensors,
                         const std::string& general_type = "adapter",
                         const std::string& adapter_type = "lora", const std::string& arch = "llama") {
  GgufWriter w;
  w.Set("general.architecture", GgufValue::String(arch));
  if (!general_type.empty()) w.Set("general.type", GgufValue::String(general_type));
  w.Set("adapter.type", GgufValue::String(adapter_type));
  w.Set("adapter.lora.alpha", GgufValue::Float32(4));
  for (const BadTensor& t : tensors) {
    int64_t elements = 1;
    for (int64_t d : t.dims) elements *= d;
    std::vector<std::byte> data(RowBytes(t.type, t.dims[0]) * size_t(elements / t.dims[0]));
    EXPECT_TRUE(w.AddTensor(t.name, t.type, t.dims, data).ok()) << t.name;
  }
  const std::string path = ScratchDir("lora-bad") + "/" + name + ".gguf";
  EXPECT_TRUE(w.WriteFile(path).ok());
  return path;
}

TEST(Lora, MalformedAdaptersAreRefusedNamingFileAndTensor) {
  // tiny: n_embd 64, q_dim 64, kv_dim 32, n_ff 96, 2 layers.
  const std::string model_path = TinyModelPath("tiny", TensorType::kF32);
  std::shared_ptr<const GgufFile> file = std::move(GgufFile::Open(model_path)).value();
  const std::string q = "blk.0.attn_q.weight";
  struct Case {
    std::string name;
    std::string path;
    std::string expected;  // in the message, besides the file's path
  };
  const std::vector<Case> cases = {
      {"general-type", WriteAdapter("general-type", {{q + ".lora_a", TensorType::kF32, {64, 4}}}, "model"),
       "general.type is \"model\", expected \"adapter\""},
      {"no-general-type", WriteAdapter("no-general-type", {{q + ".lora_a", TensorType::kF32, {64, 4}}}, ""),
       "has no general.type (expected \"adapter\")"},
      {"adapter-type",
       WriteAdapter("adapter-type", {{q + ".lora_a", TensorType::kF32, {64, 4}}}, "adapter",
                    "control_vector"),
       "adapter.type is \"control_vector\", expected \"lora\""},
      {"architecture",
       WriteAdapter("architecture", {{q + ".lora_a", TensorType::kF32, {64, 4}}}, "adapter", "lora", "qwen2"),
       "general.architecture is \"qwen2\", the model's is \"llama\""},
      {"unknown-tensor",
       WriteAdapter("unknown-tensor", {{"blk.7.attn_q.weight.lora_a", TensorType::kF32, {64, 4}},
                                       {"blk.7.attn_q.weight.lora_b", TensorType::kF32, {4, 64}}}),
       "tensor 'blk.7.attn_q.weight' does not exist in the base model"},
      {"not-adaptable",
       WriteAdapter("not-adaptable", {{"token_embd.weight.lora_a", TensorType::kF32, {64, 4}},
                                      {"token_embd.weight.lora_b", TensorType::kF32, {4, 64}}}),
       "tensor 'token_embd.weight' is not adaptable"},
      {"shape",
       WriteAdapter("shape",
                    {{q + ".lora_a", TensorType::kF32, {96, 4}}, {q + ".lora_b", TensorType::kF32, {4, 64}}}),
       "tensor 'blk.0.attn_q.weight' lora_a [96, 4] and lora_b [4, 64] do not fit the base matrix [64, 64]"},
      {"rank",
       WriteAdapter("rank",
                    {{q + ".lora_a", TensorType::kF32, {64, 4}}, {q + ".lora_b", TensorType::kF32, {8, 64}}}),
       "tensor 'blk.0.attn_q.weight' has rank 4 in lora_a [64, 4] but 8 in lora_b [8, 64]"},
      {"half", WriteAdapter("half", {{q + ".lora_a", TensorType::kF32, {64, 4}}}),
       "tensor 'blk.0.attn_q.weight' has a .lora_a but no .lora_b"},
      {"quantized",
       WriteAdapter("quantized", {{q + ".lora_a", TensorType::kQ8_0, {64, 4}},
                                  {q + ".lora_b", TensorType::kF32, {4, 64}}}),
       "tensor 'blk.0.attn_q.weight.lora_a' has type q8_0; LoRA pairs must be F32, F16 or BF16"},
      {"suffix", WriteAdapter("suffix", {{q, TensorType::kF32, {64, 64}}}),
       "tensor 'blk.0.attn_q.weight' is neither a .lora_a nor a .lora_b tensor"},
      {"empty", WriteAdapter("empty", {{"blk.0.attn_norm.weight", TensorType::kF32, {64}}}),
       "holds no .lora_a/.lora_b pairs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto model = Model::Load(file, {.lora_paths = {c.path}});
    ASSERT_FALSE(model.ok());
    const std::string message = model.status().message();
    EXPECT_NE(message.find(c.path), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
  auto missing = Model::Load(file, {.lora_paths = {"/nonexistent/adapter.gguf"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/adapter.gguf"), std::string::npos);
  // An adapter for the tied-output model's output matrix, which it does not have.
  const std::string qwen2 = TinyModelPath("tiny-qwen2", TensorType::kF32);
  MakeLoraOptions output;
  output.targets = {"output"};
  auto qwen2_file = GgufFile::Open(qwen2);
  ASSERT_TRUE(qwen2_file.ok());
  const Status s = WriteRandomLora(**qwen2_file, output, ScratchDir("lora-bad") + "/tied.gguf");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no separate matrix output.weight"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace lockstep::testing
