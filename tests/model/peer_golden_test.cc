// lockstep against an independent implementation: the outputs of llama.cpp (c392e50) or ik_llama.cpp on
// random-weight make-model files, recorded by scripts/compare_peer.py in tests/model/testdata/peer/*.json
// (LOCKSTEP_PEER_GOLDEN_DIR overrides the folder: the script points it at what it just recorded). Each file
// names a shape, weight type and seed; the test writes the same model again (make-model is deterministic; a
// file quantized by llama.cpp's llama-quantize is named by its path, "model_file", instead), runs every
// prompt as one prefill with f32 KV and checks
//   - the last position's log-softmax against the peer's, to the architecture's tolerance below;
//   - 64 greedy tokens (prefill, then one decode row per step) equal to the peer's, greedy over the tokens
//     the file does not exclude (EOS: the peer runs with ignore_eos).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "model/test_models.h"
#include "testing/testdata.h"

namespace lockstep::testing {
namespace {

std::string GoldenDir() {
  const char* dir = std::getenv("LOCKSTEP_PEER_GOLDEN_DIR");
  return dir != nullptr ? dir : std::string(LOCKSTEP_SOURCE_DIR) + "/tests/model/testdata/peer";
}

std::vector<std::string> GoldenShapes() {
  std::vector<std::string> shapes;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(GoldenDir(), ec)) {
    if (entry.path().extension() == ".json") shapes.push_back(entry.path().stem().string());
  }
  std::sort(shapes.begin(), shapes.end());
  return shapes;
}

// Largest |lockstep - peer| allowed in a last-position log-probability, per shape (about 3x what was
// measured, scripts/compare_peer.py on the Sapphire Rapids AVX-512 machine). With f32 KV on both sides only
// float summation orders separate them (<= 3.9e-6 measured); Gemma 2 adds llama.cpp's GELU, read from an
// f16 table (6.5e-4; emulating the table in lockstep brought it to 2.8e-4, the rest is 26 layers of
// rounding); ik_llama.cpp keeps KV in f16 only and multiplies Q and the softmax weights with it in f16
// (qwen3 8.1e-5, gemma3 9.3e-5, qwen3moe 6.7e-5, smollm3 6.8e-5 on a Zen 5; gpt-oss 2.5e-5 on a Xeon with
// AVX-512 VNNI; glm4 5.0e-5, ernie4_5 1.4e-4, qwen2vl 6.4e-5, qwen3vl 1.5e-4, qwen3vlmoe 2.2e-4 on the AMX
// Xeon; deepseek2 2.4e-4 there, its 27 layers amplifying f16 roundings of V that differ by a unit; deepseek3
// 3.1e-5; qwen35 5.4e-5, qwen35moe 1.3e-4, qwen3next 1.3e-4, their DeltaNet state in f32 on both sides;
// glm4moe 1.8e-5, seed_oss 3.2e-5, minimax-m2 3.3e-5, ernie4_5-moe 1.3e-4, dots1 7.5e-5, bailingmoe2 2.4e-4
// with ik's grouped routing, -ger; cohere2 1.3e-5, command-r 5.8e-7, command-r-plus 1.5e-4, its 64 layers
// amplifying f16 roundings of V: 6.1e-5 for a one-token prompt; stablelm2 2.4e-5, stablelm2-12b 8.5e-5;
// phi2 9.4e-6, its fused attn_qkv 1.7e-5; gemma (1) 6.0e-6; internlm2 3.4e-5). gemma4 (1.4e-3) is taken with
// ik_llama.cpp's flash attention, which rounds Q and the softmax weights to f16 as well (its non-flash gemma4
// graph is wrong), and its unit-RMS V heads carry rounding into the logits almost one to one (8e-7 for a
// one-token prompt, where only the stored V is rounded).
double Tolerance(const std::string& shape) {
  // tiny-starcoder2, tiny-gpt2, tiny-starcoder, tiny-bloom, tiny-mpt, tiny-codeshell: mainline llama.cpp
  // c392e50 computes GELU through its f16 table (phi2, within 3e-5 of ik_llama.cpp, is 6.4e-4 from it;
  // ik_llama.cpp's graphs of these six are wrong or abort).
  static const std::map<std::string, double> tolerances = {
      {"tiny-gemma2", 1.5e-3},      {"tiny-qwen3", 3e-4},           {"tiny-qwen3moe", 3e-4},
      {"tiny-gemma3", 3e-4},        {"tiny-smollm3", 3e-4},         {"tiny-gpt-oss", 1e-4},
      {"tiny-glm4", 1.5e-4},        {"tiny-ernie4.5", 4e-4},        {"tiny-qwen2.5vl", 2e-4},
      {"tiny-qwen3vl", 4.5e-4},     {"tiny-qwen3vlmoe", 6.5e-4},    {"tiny-mistral3", 2.5e-4},
      {"tiny-deepseek2", 7.5e-4},   {"tiny-deepseek3", 1e-4},       {"tiny-gemma4", 4e-3},
      {"tiny-qwen35", 1.5e-4},      {"tiny-qwen35moe", 3e-4},       {"tiny-qwen3next", 4e-4},
      {"tiny-glm4moe", 6e-5},       {"tiny-glm4.6", 1.5e-4},        {"tiny-seed-oss", 1e-4},
      {"tiny-minimax-m2", 1e-4},    {"tiny-ernie4.5-moe", 4e-4},    {"tiny-dots1", 2.5e-4},
      {"tiny-bailingmoe2", 7.5e-4}, {"tiny-cohere2", 4e-5},         {"tiny-command-r-plus", 4.5e-4},
      {"tiny-stablelm2", 7.5e-5},   {"tiny-stablelm2-12b", 2.5e-4}, {"tiny-phi2", 3e-5},
      {"tiny-gemma", 2e-5},         {"tiny-internlm2", 1e-4},       {"tiny-phi2-qkv", 5e-5},
      {"tiny-gptneox", 3e-5},       {"tiny-xverse", 1e-4},          {"tiny-starcoder2", 1e-3},
      {"tiny-falcon", 5e-5},        {"tiny-falcon-40b", 5e-5},      {"tiny-gpt2", 1e-3},
      {"tiny-starcoder", 1e-3},     {"tiny-bloom", 1e-3},           {"tiny-mpt", 1e-3},
      {"tiny-codeshell", 1e-3},
  };
  auto it = tolerances.find(shape);
  return it == tolerances.end() ? 1.2e-5 : it->second;
}

// deepseek2's absorbed form (the default, model/mla.h) against the peer. The peer (ik_llama.cpp, -mla 0)
// rounds each head's decompressed K and V to f16, as lockstep's decompressed form does, which Tolerance()
// holds; the absorbed form rounds the latent instead, which leaves it nearer the exact forward pass
// (ReferenceTest, f16 KV: 9.2e-4 and 2.9e-4 of the largest logit against the decompressed form's 9.8e-4
// and 4.1e-4), but its log-probabilities differ from the peer's by both roundings: 7.2e-4 (deepseek2) and
// 5.1e-4 (deepseek3) on a Zen 5, about 3x that allowed.
double AbsorbedTolerance(const std::string& shape) { return shape == "tiny-deepseek2" ? 2e-3 : 1.5e-3; }

// Goldens of the peer's absorbed form ("form": "absorbed", <shape>-absorbed.json: ik_llama.cpp -mla 2
// without flash attention, whose cache holds [k_rope | latent] once in f16 and whose values are the latent
// read back from it, as lockstep's absorbed form): checked in that form only, to about 3x what was measured
// on a Zen 5 (tiny-deepseek2 2.6e-4, tiny-deepseek3 6.3e-5: both sides round the same latent to f16, so
// what is left is ik's f16 products of Q and of the softmax weights with it).
double PeerAbsorbedTolerance(const std::string& golden) {
  static const std::map<std::string, double> tolerances = {
      {"tiny-deepseek2-absorbed", 8e-4},
      {"tiny-deepseek3-absorbed", 2e-4},
  };
  auto it = tolerances.find(golden);
  return it == tolerances.end() ? 1.5e-3 : it->second;
}

struct Case {
  std::vector<int32_t> prompt;
  // The peer's log-softmax at the prompt's last position; NaN where it reports none (ik_llama.cpp sets
  // EOS's logit to -inf under ignore_eos, and normalises over the others).
  std::vector<double> logprobs;
  std::vector<int32_t> greedy;
};

// Log-softmax over the tokens the peer reports.
std::vector<double> LogSoftmax(const std::vector<float>& logits, const std::vector<double>& peer) {
  double max = -1e300, sum = 0;
  for (size_t t = 0; t < logits.size(); ++t) {
    if (!std::isnan(peer[t])) max = std::max(max, double(logits[t]));
  }
  for (size_t t = 0; t < logits.size(); ++t) {
    if (!std::isnan(peer[t])) sum += std::exp(double(logits[t]) - max);
  }
  std::vector<double> out;
  for (float l : logits) out.push_back(double(l) - max - std::log(sum));
  return out;
}

// Runs every case of `golden` through `model` against the peer's log-probabilities (to `tolerance`) and
// greedy tokens; `form` follows the shape's name in the report.
void CheckAgainstPeer(Model& model, const nlohmann::json& golden, const std::string& shape, double tolerance,
                      const char* form) {
  int index = 0;
  const int64_t vocab = model.config().n_vocab;
  // The peer's KV type (ik_llama.cpp keeps f16 only): lockstep stores the same, rounded alike.
  const KvDtype kv_dtype = golden.value("kv", "f32") == "f16" ? KvDtype::kF16 : KvDtype::kF32;
  std::vector<bool> excluded(size_t(vocab), false);
  for (int32_t t : golden.at("greedy_excludes").get<std::vector<int32_t>>()) excluded.at(size_t(t)) = true;
  ThreadPool pool(2);
  for (const nlohmann::json& c : golden.at("cases")) {
    Case peer{c.at("prompt").get<std::vector<int32_t>>(), {}, c.at("greedy").get<std::vector<int32_t>>()};
    for (const nlohmann::json& lp : c.at("logprobs")) {
      peer.logprobs.push_back(lp.is_null() ? std::nan("") : lp.get<double>());
    }
    ASSERT_EQ(int64_t(peer.logprobs.size()), vocab);
    const int32_t prompt_len = int32_t(peer.prompt.size());
    const KvLayout layout = model.MakeKvLayout(kv_dtype, 16);
    LocalKv kv(layout, prompt_len + int64_t(peer.greedy.size()));
    std::vector<float> logits(vocab);
    auto step = [&](const std::vector<int32_t>& tokens, int32_t position) {
      Batch batch;
      batch.sequences.push_back(kv.view());
      for (size_t i = 0; i < tokens.size(); ++i) {
        batch.rows.push_back({tokens[i], position + int32_t(i), 0, i + 1 == tokens.size()});
      }
      const Status status = model.Forward(batch, layout, logits, pool);
      EXPECT_TRUE(status.ok()) << status.ToString();
      int32_t best = -1;
      for (int32_t t = 0; t < int32_t(vocab); ++t) {
        if (!excluded[size_t(t)] && (best < 0 || logits[t] > logits[best])) best = t;
      }
      return best;
    };
    int32_t next = step(peer.prompt, 0);
    const std::vector<double> ours = LogSoftmax(logits, peer.logprobs);
    double max_diff = 0;
    int64_t compared = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      if (std::isnan(peer.logprobs[v])) continue;
      max_diff = std::max(max_diff, std::abs(ours[v] - peer.logprobs[v]));
      ++compared;
    }
    EXPECT_GE(compared, vocab - 1);
    EXPECT_LE(max_diff, tolerance) << shape << " case " << index << " (prompt of " << prompt_len << ")";
    std::vector<int32_t> greedy;
    for (size_t i = 0; i < peer.greedy.size(); ++i) {
      greedy.push_back(next);
      if (i + 1 < peer.greedy.size()) next = step({next}, prompt_len + int32_t(i));
    }
    // Quantized weights (a stated tolerance): the two sides' activation quantizations differ by about 2e-2
    // in log-probabilities, more than the top-2 margins of tiny random models, so greedy paths part early;
    // how many tokens agree is reported, not checked.
    if (!golden.contains("tolerance")) {
      EXPECT_EQ(greedy, peer.greedy) << shape << " case " << index;
    }
    size_t agree = 0;
    while (agree < greedy.size() && greedy[agree] == peer.greedy[agree]) ++agree;
    const std::string agreement = greedy == peer.greedy ? "equal"
                                                        : "DIFFERENT from token " + std::to_string(agree) +
                                                              " of " + std::to_string(greedy.size());
    std::printf(
        "[ peer     ] %s%s case %d: prompt %d, max |log-prob diff| %.3g (tolerance %.0e), greedy %s\n",
        shape.c_str(), form, index, prompt_len, max_diff, tolerance, agreement.c_str());
    ++index;
  }
  EXPECT_GE(index, 3);
}

class PeerGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PeerGoldenTest, LogitsAndGreedyTokensMatchThePeer) {
  std::ifstream in(GoldenDir() + "/" + GetParam() + ".json");
  ASSERT_TRUE(in) << "cannot read the golden file of " << GetParam();
  const nlohmann::json golden = nlohmann::json::parse(in);
  std::string path = golden.value("model_file", "");
  if (path.empty()) {
    MakeModelOptions options;
    auto shape = FindModelShape(golden.at("shape").get<std::string>());
    ASSERT_TRUE(shape.ok()) << shape.status().ToString();
    options.shape = *shape;
    ASSERT_TRUE(SetWeightTypes(golden.at("type").get<std::string>(), options).ok());
    options.seed = golden.at("seed").get<uint64_t>();
    path = ScratchDir("peer") + "/model.gguf";
    ASSERT_TRUE(WriteRandomModel(options, path).ok());
  }
  // deepseek2: both forms of latent attention (model/mla.h), or the absorbed one alone against the peer's;
  // its probe load also checks the file.
  const bool latent = LoadModelOrDie(path).model->config().kv_lora_rank > 0;
  const bool peer_absorbed = golden.value("form", "") == "absorbed";
  ASSERT_TRUE(latent || !peer_absorbed) << GetParam() << ": an absorbed-form golden of a model without MLA";
  for (const bool decompressed :
       latent && !peer_absorbed ? std::vector<bool>{true, false} : std::vector<bool>{false}) {
    auto opened = GgufFile::Open(path);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    std::shared_ptr<const GgufFile> file = std::move(*opened);
    auto loaded = Model::Load(file, {.decompressed_mla = decompressed});
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    // Quantized weights state their own (the two sides quantize activations differently).
    const double tolerance =
        golden.value("tolerance", peer_absorbed             ? PeerAbsorbedTolerance(GetParam())
                                  : decompressed || !latent ? Tolerance(GetParam())
                                                            : AbsorbedTolerance(GetParam()));
    CheckAgainstPeer(**loaded, golden, GetParam(), tolerance, decompressed ? " (decompressed)" : "");
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, PeerGoldenTest, ::testing::ValuesIn(GoldenShapes()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return TestParamName(info.param);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PeerGoldenTest);

// The committed goldens cover every supported architecture.
TEST(PeerGolden, EveryArchitectureIsChecked) {
  if (std::getenv("LOCKSTEP_PEER_GOLDEN_DIR") != nullptr) GTEST_SKIP() << "a chosen golden folder";
  std::set<std::string> covered;
  for (const std::string& name : GoldenShapes()) {
    std::ifstream in(GoldenDir() + "/" + name + ".json");
    auto s = FindModelShape(nlohmann::json::parse(in).at("shape").get<std::string>());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    covered.insert(s->architecture);
  }
  // Encoders give no logits: their goldens are vectors (peer_embeddings_golden_test.cc).
  std::error_code ec;
  const std::string embeddings = std::string(LOCKSTEP_SOURCE_DIR) + "/tests/model/testdata/peer_embeddings";
  for (const auto& entry : std::filesystem::directory_iterator(embeddings, ec)) {
    std::ifstream in(entry.path());
    auto s = FindModelShape(nlohmann::json::parse(in).at("shape").get<std::string>());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    covered.insert(s->architecture);
  }
  for (const std::string& arch : SupportedArchitectures()) EXPECT_TRUE(covered.count(arch)) << arch;
}

}  // namespace
}  // namespace lockstep::testing
