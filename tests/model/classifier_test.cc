// The classifier head (model/classifier.h): a reranker file's cls.output.weight is loaded as it is stored and
// applied as a plain dot product with each row; a token head holds the output matrix's rows of its tokens;
// a wrong shape or a missing head are told apart; BERT's head (tiny-bert-reranker) applies its dense cls
// layer and tanh before cls.output.
#include "model/classifier.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "model/test_models.h"
#include "tensor/dequantize.h"
#include "testing/testdata.h"

namespace lockstep::testing {
namespace {

// Rows of an f32 [rows][n] tensor as stored.
std::vector<float> StoredRows(const GgufTensorInfo& t, int64_t rows, int64_t n) {
  std::vector<float> out(size_t(rows * n));
  std::memcpy(out.data(), t.data, out.size() * sizeof(float));
  return out;
}

std::vector<float> RandomHidden(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> h(static_cast<size_t>(n));
  for (float& x : h) x = normal(gen);
  return h;
}

TEST(Classifier, FileHeadIsTheStoredRows) {
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-qwen3-reranker", TensorType::kF32));
  const Classifier* head = m.model->classifier();
  ASSERT_NE(head, nullptr);
  const int64_t d = m.model->config().n_embd;
  ASSERT_EQ(head->n_cls, 2);
  ASSERT_EQ(head->n_embd, d);
  EXPECT_TRUE(head->bias.empty());
  EXPECT_EQ(head->softcap, 0.0f);
  EXPECT_EQ(head->labels, (std::vector<std::string>{"yes", "no"}));
  const std::vector<float> stored = StoredRows(*m.file->FindTensor("cls.output.weight"), 2, d);
  EXPECT_EQ(head->weight, stored);
  const std::vector<float> hidden = RandomHidden(d, 3);
  float out[2];
  head->Apply(hidden, out);
  for (int64_t c = 0; c < 2; ++c) {
    double want = 0;
    for (int64_t k = 0; k < d; ++k) want += double(stored[size_t(c * d + k)]) * double(hidden[size_t(k)]);
    EXPECT_EQ(out[c], float(want)) << c;  // the same sum in the same order
  }
}

TEST(Classifier, TokenHeadIsTheOutputRows) {
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny", TensorType::kF32));
  EXPECT_EQ(m.model->classifier(), nullptr);  // a plain model has none
  auto ranked = Model::Load(m.file, {.classifier_tokens = {'y', 'n', 'm'}});
  ASSERT_TRUE(ranked.ok()) << ranked.status().ToString();
  const Classifier* head = (*ranked)->classifier();
  ASSERT_NE(head, nullptr);
  EXPECT_TRUE(head->from_tokens);
  const int64_t d = m.model->config().n_embd;
  const int64_t n_vocab = m.model->config().n_vocab;
  const std::vector<float> output = StoredRows(*m.file->FindTensor("output.weight"), n_vocab, d);
  const int32_t tokens[] = {'y', 'n', 'm'};
  for (int64_t c = 0; c < 3; ++c) {
    const std::vector<float> row(output.begin() + tokens[c] * d, output.begin() + (tokens[c] + 1) * d);
    EXPECT_EQ(std::vector<float>(head->weight.begin() + c * d, head->weight.begin() + (c + 1) * d), row) << c;
  }
}

TEST(Classifier, BertHeadIsDenseTanhThenOutput) {
  LOCKSTEP_REQUIRE_TESTDATA();
  MakeModelOptions o;
  o.shape = *FindModelShape("tiny-bert-reranker");
  o.vocab_from = TestDataPath("vocab/ggml-vocab-bert-bge.gguf");
  const std::string path = ScratchDir("bert-reranker") + "/tiny-bert-reranker.gguf";
  ASSERT_TRUE(WriteRandomModel(o, path).ok());
  LoadedModel m = LoadModelOrDie(path);
  EXPECT_EQ(m.model->config().pooling, Pooling::kRank);
  const Classifier* head = m.model->classifier();
  ASSERT_NE(head, nullptr);
  const int64_t d = m.model->config().n_embd;
  ASSERT_EQ(head->n_cls, 1);
  const std::vector<float> dense = StoredRows(*m.file->FindTensor("cls.weight"), d, d);
  const std::vector<float> dense_b = StoredRows(*m.file->FindTensor("cls.bias"), 1, d);
  const std::vector<float> out_w = StoredRows(*m.file->FindTensor("cls.output.weight"), 1, d);
  const std::vector<float> out_b = StoredRows(*m.file->FindTensor("cls.output.bias"), 1, 1);
  const std::vector<float> hidden = RandomHidden(d, 5);
  double want = out_b[0];
  for (int64_t r = 0; r < d; ++r) {
    double z = dense_b[size_t(r)];
    for (int64_t k = 0; k < d; ++k) z += double(dense[size_t(r * d + k)]) * hidden[size_t(k)];
    want += double(out_w[size_t(r)]) * std::tanh(z);
  }
  float got = 0;
  head->Apply(hidden, std::span<float>(&got, 1));
  EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, std::abs(want)));
  // A dense layer without its bias is refused naming both.
  FileEdit no_bias;
  no_bias.drop_tensors = {"cls.bias"};
  auto file = EditedFile(path, no_bias);
  ASSERT_TRUE(file.ok());
  auto r = Model::Load(*file, {.pack_weights = false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cls.bias"), std::string::npos) << r.status().message();
}

TEST(Classifier, BadHeadsAreRefusedNamingTheTensor) {
  const std::string path = TinyModelPath("tiny-qwen3-reranker", TensorType::kF32);
  FileEdit transposed;
  transposed.reshape_tensor = "cls.output.weight";
  auto file = EditedFile(path, transposed);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto r = Model::Load(*file, {.pack_weights = false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cls.output.weight has shape [2, 128]"), std::string::npos)
      << r.status().message();
  // Without the head the same file loads, and cannot rank.
  FileEdit headless;
  headless.drop_tensors = {"cls.output.weight"};
  auto plain = EditedFile(path, headless);
  ASSERT_TRUE(plain.ok());
  auto loaded = Model::Load(*plain, {.pack_weights = false});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ((*loaded)->classifier(), nullptr);
  EXPECT_EQ((*loaded)->config().pooling, Pooling::kRank);
}

}  // namespace
}  // namespace lockstep::testing
