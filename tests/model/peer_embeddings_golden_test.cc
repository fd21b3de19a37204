// lockstep's encoder embeddings (bert, nomic-bert) against llama.cpp c392e50's (llama-server --embedding
// --pooling cls), recorded by scripts/compare_peer_embeddings.py in tests/model/testdata/peer_embeddings/
// <shape>.json: each case's text tokenizes to the peer's ids (WordPiece, [CLS] ... [SEP]) and its
// unit-length CLS vector is within the tolerance of the peer's.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/local_kv.h"
#include "model/test_models.h"
#include "testing/testdata.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::testing {
namespace {

// Largest |lockstep - peer| allowed in a component of a unit vector: about 3x the largest measured, 1.29e-5
// for tiny-bert (compare_peer_embeddings.py on a Zen 5, recorded as measured_max_diff; both sides round GELU
// through f16, so what is left is float summation order, and now and then a GELU input on the other side of
// an f16 rounding boundary). On a Zen 3: tiny-nomic-bert (SwiGLU in f32) 8.9e-8, tiny-jina-bert (GeGLU
// through the same f16 table) 9.4e-6.
constexpr double kTolerance = 4e-5;

std::vector<float> ClsVector(Model& model, const std::vector<int32_t>& ids) {
  ThreadPool pool(2);
  const KvLayout layout = model.MakeKvLayout(KvDtype::kF32);
  LocalKv kv(layout, int64_t(ids.size()));
  Batch batch;
  batch.sequences.push_back(kv.view());
  for (size_t p = 0; p < ids.size(); ++p) batch.rows.push_back({ids[p], int32_t(p), 0, false, p == 0});
  std::vector<float> out(size_t(model.config().n_embd));
  const Status s = model.Forward(batch, layout, ForwardOutputs{{}, out}, pool);
  EXPECT_TRUE(s.ok()) << s.ToString();
  double norm = 0;
  for (float v : out) norm += double(v) * v;
  for (float& v : out) v = float(v / std::sqrt(norm));
  return out;
}

class PeerEmbeddingsGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PeerEmbeddingsGoldenTest, MatchesLlamaCpp) {
  LOCKSTEP_REQUIRE_TESTDATA();
  const std::string path =
      std::string(LOCKSTEP_SOURCE_DIR) + "/tests/model/testdata/peer_embeddings/" + GetParam() + ".json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const nlohmann::json golden = nlohmann::json::parse(in);
  MakeModelOptions o;
  o.shape = *FindModelShape(golden["shape"].get<std::string>());
  o.seed = golden["seed"].get<uint64_t>();
  o.vocab_from = TestDataPath("vocab/ggml-vocab-bert-bge.gguf");
  EXPECT_EQ(o.shape.name, GetParam());
  const std::string model_path = ScratchDir("peer-embeddings") + "/" + GetParam() + ".gguf";
  ASSERT_TRUE(WriteRandomModel(o, model_path).ok());
  LoadedModel m = LoadModelOrDie(model_path);
  auto tokenizer = Tokenizer::FromGguf(*m.file);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  ASSERT_GE(golden["cases"].size(), 5u);
  double worst = 0;
  for (const auto& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
    auto ours = (*tokenizer)->Encode(text, /*add_bos=*/true, /*parse_special=*/true);
    ASSERT_TRUE(ours.ok()) << ours.status().ToString();
    EXPECT_EQ(*ours, ids) << text;
    const std::vector<float> want = c["embedding"].get<std::vector<float>>();
    const std::vector<float> got = ClsVector(*m.model, ids);
    ASSERT_EQ(got.size(), want.size());
    double diff = 0;
    for (size_t i = 0; i < got.size(); ++i) diff = std::max(diff, std::abs(double(got[i]) - want[i]));
    EXPECT_LE(diff, kTolerance) << text;
    worst = std::max(worst, diff);
  }
  std::cout << GetParam() << ": largest |lockstep - llama.cpp| " << worst << " (recorded "
            << golden["measured_max_diff"].get<double>() << ")\n";
}

INSTANTIATE_TEST_SUITE_P(Encoders, PeerEmbeddingsGoldenTest,
                         ::testing::Values("tiny-bert", "tiny-nomic-bert", "tiny-jina-bert"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return TestParamName(info.param);
                         });

}  // namespace
}  // namespace lockstep::testing
