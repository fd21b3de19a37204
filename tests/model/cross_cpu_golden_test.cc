// A request's logits and tokens are the same bits on every CPU: every kernel level of every architecture
// (x86 here, aarch64 under qemu in scripts/check_arm64.sh) reproduces one recorded file,
// tests/model/testdata/cross_cpu_golden.json. Per weight type (and mixture-of-experts shape) it holds, for a
// tiny random model (make-model is deterministic), an FNV-1a hash of the bits of every prompt row's logits (a
// 64-token prompt in chunks of 24 rows: many-row tiles, the AMX and SMMLA paths) and of each of 8 greedy
// decode steps' logits (one row: the decode kernels), and the greedy tokens. That covers the int8 products,
// the float products, softmax and SwiGLU (one polynomial exp everywhere, tensor/activations.h), RMSNorm and
// RoPE. A deliberate change of the canonical arithmetic re-records the file (on any one machine):
//   LOCKSTEP_WRITE_CROSS_CPU_GOLDEN=1 build/tests/model_tests --gtest_filter='CrossCpuGolden.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/test_models.h"
#include "testing/levels.h"

namespace lockstep::testing {
namespace {

// tiny-256 in each weight type (recorded under the type's name), the mixtures of experts (routing, the
// experts' MatMuls over rows grouped by expert, their weighted sums) and other shapes (recorded as "shape
// type").
struct CrossCpuCase {
  const char* shape;
  const char* types;
};
constexpr CrossCpuCase kCases[] = {{"tiny-256", "q8_0"},
                                   {"tiny-256", "q4_0"},
                                   {"tiny-256", "q4_k_m"},
                                   {"tiny-256", "f16"},
                                   {"tiny-qwen3moe", "q8_0"},
                                   {"tiny-mixtral", "q4_k_m"},
                                   {"tiny-mixtral", "bf16"},
                                   // sinks, YaRN, biased experts, the clamped SwiGLU
                                   {"tiny-gpt-oss", "q8_0"},
                                   {"tiny-256", "q5_k_m"},
                                   // SmolLM2's 576-wide rows: llama.cpp's q5_0 (q4_k_m) and q5_1 (q5_k_m)
                                   // fallbacks beside q4_K / q5_K / q6_K
                                   {"tiny-smollm2", "q4_k_m"},
                                   {"tiny-smollm2", "q5_k_m"},
                                   // latent attention, absorbed (a query LoRA, per-head products over
                                   // the latent, multi-query attention 80 / 64 wide), sigmoid experts
                                   {"tiny-deepseek3", "q8_0"}};
constexpr int kPromptTokens = 64, kChunk = 24, kDecodeSteps = 8;

std::string GoldenPath() {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/tests/model/testdata/cross_cpu_golden.json";
}

struct Fnv1a {
  uint64_t h = 1469598103934665603ull;
  void Add(const std::vector<float>& v) {
    for (float f : v) {
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      for (int i = 0; i < 4; ++i) h = (h ^ ((bits >> (8 * i)) & 0xff)) * 1099511628211ull;
    }
  }
  std::string Hex() const {
    char s[19];
    std::snprintf(s, sizeof(s), "%016llx", static_cast<unsigned long long>(h));
    return s;
  }
};

struct LevelRun {
  std::string prompt_hash;
  std::vector<std::string> decode_hashes;
  std::vector<int32_t> tokens;
};

LevelRun RunOneLevel(const std::shared_ptr<const GgufFile>& file, const Kernels& kernels) {
  ModelLoadOptions options;
  options.kernels = &kernels;
  Result<std::unique_ptr<Model>> loaded = Model::Load(file, options);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  if (!loaded.ok()) return {};
  Model& model = **loaded;
  ThreadPool pool(2);
  const KvLayout layout = model.MakeKvLayout(KvDtype::kF16, 16);
  LocalKv kv(layout, kPromptTokens + kDecodeSteps);
  const int64_t vocab = model.config().n_vocab;
  LevelRun run;
  Fnv1a prompt;
  int32_t next = 0;
  for (int32_t start = 0; start < kPromptTokens; start += kChunk) {
    const int32_t end = std::min(kPromptTokens, start + kChunk);
    Batch batch;
    batch.sequences.push_back(kv.view());
    for (int32_t p = start; p < end; ++p) {
      batch.rows.push_back({int32_t((7 * p * p + 3 * p + 1) % vocab), p, 0, true});
    }
    std::vector<float> logits(size_t(end - start) * vocab);
    const Status status = model.Forward(batch, layout, logits, pool);
    EXPECT_TRUE(status.ok()) << status.ToString();
    prompt.Add(logits);
    next = int32_t(std::max_element(logits.end() - vocab, logits.end()) - (logits.end() - vocab));
  }
  run.prompt_hash = prompt.Hex();
  for (int step = 0; step < kDecodeSteps; ++step) {
    run.tokens.push_back(next);
    Batch batch;
    batch.sequences.push_back(kv.view());
    batch.rows.push_back({next, kPromptTokens + step, 0, true});
    std::vector<float> logits(vocab);
    const Status status = model.Forward(batch, layout, logits, pool);
    EXPECT_TRUE(status.ok()) << status.ToString();
    Fnv1a h;
    h.Add(logits);
    run.decode_hashes.push_back(h.Hex());
    next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  return run;
}

TEST(CrossCpuGolden, EveryLevelReproducesTheRecordedBits) {
  const bool write = std::getenv("LOCKSTEP_WRITE_CROSS_CPU_GOLDEN") != nullptr;
  nlohmann::json golden;
  if (!write) {
    std::ifstream in(GoldenPath());
    ASSERT_TRUE(in.good()) << "missing " << GoldenPath();
    golden = nlohmann::json::parse(in);
  }
  nlohmann::json recorded = nlohmann::json::object();
  const std::vector<Kernels> levels = RunnableKernels();
  ASSERT_FALSE(levels.empty());
  for (const CrossCpuCase& c : kCases) {
    const std::string name =
        std::string(c.shape) == "tiny-256" ? c.types : std::string(c.shape) + " " + c.types;
    const char* types = name.c_str();
    LoadedModel m = LoadModelOrDie(TinyModelPath(c.shape, c.types, 19));
    for (const Kernels& k : levels) {
      const LevelRun run = RunOneLevel(m.file, k);
      if (write && !recorded.contains(types)) {
        recorded[types] = {{"prompt_logits_fnv1a", run.prompt_hash},
                           {"decode_logits_fnv1a", run.decode_hashes},
                           {"greedy_tokens", run.tokens}};
        continue;
      }
      const nlohmann::json& want = write ? recorded[types] : golden.at("cases").at(types);
      const std::string where = std::string(types) + " at level " + LevelName(k);
      EXPECT_EQ(run.prompt_hash, want.at("prompt_logits_fnv1a").get<std::string>()) << where;
      EXPECT_EQ(run.decode_hashes, want.at("decode_logits_fnv1a").get<std::vector<std::string>>()) << where;
      EXPECT_EQ(run.tokens, want.at("greedy_tokens").get<std::vector<int32_t>>()) << where;
    }
  }
  if (write) {
    nlohmann::json out = {
        {"what", "tests/model/cross_cpu_golden_test.cc: tiny-256 (and the named shapes) seed 19, f16 KV"},
        {"cases", recorded}};
    std::ofstream(GoldenPath()) << out.dump(1) << "\n";
  }
}

}  // namespace
}  // namespace lockstep::testing
