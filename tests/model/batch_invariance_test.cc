// Batch invariance: a row's logits are bit-identical whatever other rows share the Forward call — K sequences
// batched together (mixed prefill chunks and decode rows, interleaved, different lengths) against each alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "model/test_models.h"

namespace lockstep::testing {
namespace {

struct Param {
  std::string shape;
  std::string types;  // make-model's --type
  KvDtype kv;
  int threads;
  int extra_length = 0;  // added to every sequence: windowed shapes run past their 40-position windows
};

class BatchInvarianceTest : public ::testing::TestWithParam<Param> {};

TEST_P(BatchInvarianceTest, BatchedRowsMatchSoloRuns) {
  const Param& p = GetParam();
  LoadedModel m = LoadModelOrDie(TinyModelPath(p.shape, p.types));
  ASSERT_NE(m.model, nullptr);
  Model& model = *m.model;
  const int64_t vocab = model.config().n_vocab;
  ThreadPool pool(p.threads);

  // K sequences of different lengths.
  constexpr int kSeqs = 5;
  std::mt19937 rng(42);
  std::vector<std::vector<int32_t>> seqs(kSeqs);
  for (int s = 0; s < kSeqs; ++s) {
    seqs[s].resize(6 + 7 * s + p.extra_length);
    for (int32_t& t : seqs[s]) t = int32_t(rng() % vocab);
  }
  // Solo: one row per step.
  std::vector<std::vector<std::vector<float>>> solo(kSeqs);
  for (int s = 0; s < kSeqs; ++s) solo[s] = RunSequence(model, seqs[s], 1, p.kv, pool);

  // Batched: each step every unfinished sequence contributes a chunk (sizes vary per sequence and step, so
  // prefill chunks and single decode rows mix); rows of a sequence are interleaved with other sequences'
  // rows.
  const KvLayout layout = model.MakeKvLayout(p.kv, 16);
  std::vector<std::unique_ptr<LocalKv>> kvs;
  Batch batch;
  for (int s = 0; s < kSeqs; ++s) {
    kvs.push_back(std::make_unique<LocalKv>(layout, int64_t(seqs[s].size())));
    batch.sequences.push_back(kvs.back()->view());
  }
  std::vector<size_t> done(kSeqs, 0);
  int steps = 0;
  size_t compared = 0;
  for (;; ++steps) {
    batch.rows.clear();
    std::vector<std::vector<BatchRow>> per_seq(kSeqs);
    for (int s = 0; s < kSeqs; ++s) {
      const size_t chunk = (steps + s) % 3 == 0 ? 4 + s : 1;  // prefill-like chunks and decode rows
      for (size_t i = done[s]; i < std::min(seqs[s].size(), done[s] + chunk); ++i) {
        per_seq[s].push_back({seqs[s][i], int32_t(i), s, (i + s) % 4 != 1});  // not every row wants logits
      }
    }
    // Interleave: round-robin over sequences.
    for (size_t k = 0;; ++k) {
      bool any = false;
      for (int s = kSeqs - 1; s >= 0; --s) {
        if (k < per_seq[s].size()) {
          batch.rows.push_back(per_seq[s][k]);
          any = true;
        }
      }
      if (!any) break;
    }
    if (batch.rows.empty()) break;
    std::vector<float> logits(batch.LogitRows() * vocab);
    ASSERT_TRUE(model.Forward(batch, layout, logits, pool).ok());
    size_t out = 0;
    for (const BatchRow& row : batch.rows) {
      if (!row.wants_logits) continue;
      const std::vector<float>& expected = solo[row.sequence][row.position];
      ASSERT_EQ(std::memcmp(expected.data(), logits.data() + out * vocab, vocab * sizeof(float)), 0)
          << "sequence " << row.sequence << " position " << row.position << " step " << steps;
      ++out;
      ++compared;
    }
    for (int s = 0; s < kSeqs; ++s) done[s] += per_seq[s].size();
  }
  EXPECT_GT(compared, 50u);
  EXPECT_GT(steps, 3);
}

INSTANTIATE_TEST_SUITE_P(
    Models, BatchInvarianceTest,
    ::testing::Values(
        Param{"tiny", "q8_0", KvDtype::kF16, 2}, Param{"tiny", "f32", KvDtype::kF32, 1},
        Param{"tiny", "q4_0", KvDtype::kF16, 1}, Param{"tiny-qwen2", "f16", KvDtype::kF16, 2},
        Param{"tiny-qwen2", "q8_0", KvDtype::kF32, 1}, Param{"tiny-256", "q4_k_m", KvDtype::kF16, 2},
        Param{"tiny-256", "q5_k_m", KvDtype::kF16, 2}, Param{"tiny-smollm2", "q4_k_m", KvDtype::kF16, 2},
        Param{"tiny-smollm2", "q5_k_m", KvDtype::kF16, 1}, Param{"tiny-256", "iq4_xs", KvDtype::kF16, 1},
        Param{"tiny-smollm2", "iq4_xs", KvDtype::kF16, 2}, Param{"tiny-256", "q3_k", KvDtype::kF16, 2},
        Param{"tiny-256", "q2_k", KvDtype::kF16, 1},
        // Every architecture (model/architectures.h).
        Param{"tiny-qwen3", "q8_0", KvDtype::kF16, 2}, Param{"tiny-gemma2", "f32", KvDtype::kF32, 2, 40},
        Param{"tiny-gemma3", "q8_0", KvDtype::kF16, 2, 40}, Param{"tiny-phi3", "f16", KvDtype::kF16, 2, 40},
        Param{"tiny-phi3.5", "q4_0", KvDtype::kF32, 1}, Param{"tiny-phi4-mini", "q8_0", KvDtype::kF16, 2},
        Param{"tiny-nemo", "f32", KvDtype::kF16, 2}, Param{"tiny-mistral-swa", "q4_0", KvDtype::kF16, 2, 40},
        // q8_0 KV: one scale per head (head_dim 16) and two per head (tiny-256's 64), under a window.
        Param{"tiny", "q4_0", KvDtype::kQ8_0, 1}, Param{"tiny-256", "q8_0", KvDtype::kQ8_0, 2},
        Param{"tiny-gemma2", "q8_0", KvDtype::kQ8_0, 2, 40}, Param{"tiny-gemma", "q4_0", KvDtype::kF16, 2},
        // Mixtures of experts: which rows share an expert's MatMul changes with the batch.
        Param{"tiny-qwen3moe", "q8_0", KvDtype::kF16, 2}, Param{"tiny-qwen3moe", "f32", KvDtype::kF32, 1},
        Param{"tiny-mixtral", "q4_k_m", KvDtype::kF16, 2}, Param{"tiny-mixtral", "bf16", KvDtype::kF16, 2},
        Param{"tiny-qwen2moe", "q8_0", KvDtype::kF16, 2},  // + the shared expert and its gate
        Param{"tiny-olmoe", "q4_0", KvDtype::kF16, 2}, Param{"tiny-deepseek", "q8_0", KvDtype::kF16, 2},
        // gpt-oss: sinks (decode rows split or not), biased experts, windows on the even layers.
        Param{"tiny-gpt-oss", "q8_0", KvDtype::kF16, 2, 40}, Param{"tiny-gpt-oss", "f32", KvDtype::kF32, 1},
        // deepseek2: latent attention (values narrower than keys), a dense first layer, shared experts.
        Param{"tiny-deepseek2", "q8_0", KvDtype::kF16, 2}, Param{"tiny-deepseek2", "f32", KvDtype::kQ8_0, 1},
        // + attn_k_b rebuilt at load (f32 rows beside q8_0 attn_v_b), and group-limited routing.
        Param{"tiny-deepseek3-split", "q8_0", KvDtype::kF16, 2},
        Param{"tiny-deepseek3-grouped", "q8_0", KvDtype::kF16, 2},
        // qwen35: each sequence's recurrent state advanced by its rows, interleaved with other sequences'.
        Param{"tiny-qwen35", "q8_0", KvDtype::kF16, 2}, Param{"tiny-qwen35", "f32", KvDtype::kF32, 1},
        Param{"tiny-qwen35moe", "q8_0", KvDtype::kF16, 2},
        // Gemma 4 26B-A4B: experts beside the dense FFN, the router reading its own norm.
        Param{"tiny-gemma4moe", "q8_0", KvDtype::kF16, 2, 40},
        Param{"tiny-seed-oss", "q8_0", KvDtype::kF16, 2},
        Param{"tiny-ernie4.5-moe", "q8_0", KvDtype::kF16, 2}, Param{"tiny-dots1", "q8_0", KvDtype::kF16, 2},
        Param{"tiny-bailingmoe2", "q8_0", KvDtype::kF16, 2},
        Param{"tiny-minimax-m2", "q8_0", KvDtype::kF16, 2},  // whole-projection Q/K norms, sigmoid experts
        // glm4moe: a dense first layer, then sigmoid-scored experts and a shared one.
        Param{"tiny-glm4moe", "q8_0", KvDtype::kF16, 2},
        // qwen3next: the fused projections taken apart per row.
        Param{"tiny-qwen3next", "q8_0", KvDtype::kF16, 2},
        // Cohere: the FFN reads the attention's normed input (gathered rows in the last layer's skip).
        Param{"tiny-cohere2", "q8_0", KvDtype::kF16, 2, 40},
        Param{"tiny-command-r-plus", "q4_0", KvDtype::kF16, 2}, Param{"tiny-phi2", "q8_0", KvDtype::kF16, 2},
        Param{"tiny-starcoder2", "q4_0", KvDtype::kF16, 2}, Param{"tiny-phi2-qkv", "f32", KvDtype::kF32, 1},
        Param{"tiny-stablelm2", "q8_0", KvDtype::kF16, 2},
        // GPT-NeoX: the parallel FFN's own norm, written by the attention block (gathered rows).
        Param{"tiny-gptneox", "q8_0", KvDtype::kF16, 2, 40},
        Param{"tiny-falcon-40b", "q4_0", KvDtype::kF16, 2}, Param{"tiny-nemotron", "q8_0", KvDtype::kF16, 2},
        Param{"tiny-olmo-0424", "q4_0", KvDtype::kF16, 2}, Param{"tiny-chatglm", "q8_0", KvDtype::kF16, 2},
        Param{"tiny-gpt2", "q8_0", KvDtype::kF16, 2}, Param{"tiny-starcoder", "q4_0", KvDtype::kF16, 2},
        Param{"tiny-bloom", "q8_0", KvDtype::kF16, 2}, Param{"tiny-mpt", "q4_0", KvDtype::kF16, 2},
        Param{"tiny-refact", "q8_0", KvDtype::kF16, 2}, Param{"tiny-jais", "q4_0", KvDtype::kF16, 2},
        Param{"tiny-codeshell", "q8_0", KvDtype::kF16, 2},
        // PLaMo: the parallel FFN reads attn_norm's output (gathered rows in the last layer's skip).
        Param{"tiny-plamo", "q4_0", KvDtype::kF16, 2, 40}, Param{"tiny-deci", "q4_0", KvDtype::kF16, 2},
        Param{"tiny-deci-ultra", "q8_0", KvDtype::kF16, 2},
        Param{"tiny-stablelm2-12b", "q8_0", KvDtype::kF16, 2}),
    // Names such as tiny_gemma2_f32_kv_f32_2_threads (scripts/check_arm64.sh selects by name).
    [](const ::testing::TestParamInfo<Param>& info) {
      const Param& p = info.param;
      std::string name =
          p.shape + "_" + p.types + "_kv_" + KvDtypeName(p.kv) + "_" + std::to_string(p.threads) + "_threads";
      if (p.extra_length > 0) name += "_long";
      return TestParamName(name);
    });

TEST(BatchInvariance, ChunkingAndThreadCountDoNotChangeLogits) {
  // Long enough that attention takes every path: inline on the caller (short contexts), pooled per query head
  // (few rows), pooled per KV-head group (many rows), and past the first attention part (256 positions)
  // decode rows split into parts on both threads (two KV heads, fewer than twice the threads).
  LoadedModel m = LoadModelOrDie(TinyModelPath("tiny", TensorType::kQ8_0));
  std::vector<int32_t> tokens;
  for (int i = 0; i < 300; ++i) tokens.push_back((i * 31 + 7) % int32_t(m.model->config().n_vocab));
  ThreadPool one(1), two(2);
  const auto solo = RunSequence(*m.model, tokens, 1, KvDtype::kF16, one);
  EXPECT_EQ(solo, RunSequence(*m.model, tokens, 1, KvDtype::kF16, two));
  EXPECT_EQ(solo, RunSequence(*m.model, tokens, 3, KvDtype::kF16, two));
  EXPECT_EQ(solo, RunSequence(*m.model, tokens, 50, KvDtype::kF16, two));
}

// The same for sliding windows (every layer: tiny-mistral-swa; alternating with global layers and
// soft-capped: tiny-gemma2): the window's start moves across KV blocks and attention parts (256 positions) as
// the sequence grows, in tiles of every size.
// And for the experts (tiny-qwen3moe: chunks of 50 rows share each expert's MatMul), and the recurrent
// layers (tiny-qwen35: the state carried from chunk to chunk, its heads on either thread).
TEST(BatchInvariance, WindowedChunkingAndThreadCountDoNotChangeLogits) {
  for (const char* shape : {"tiny-mistral-swa", "tiny-gemma2", "tiny-qwen3moe", "tiny-qwen35"}) {
    SCOPED_TRACE(shape);
    LoadedModel m = LoadModelOrDie(TinyModelPath(shape, TensorType::kQ8_0));
    std::vector<int32_t> tokens;
    for (int i = 0; i < 300; ++i) tokens.push_back((i * 31 + 7) % int32_t(m.model->config().n_vocab));
    ThreadPool one(1), two(2);
    const auto solo = RunSequence(*m.model, tokens, 1, KvDtype::kF16, one);
    EXPECT_EQ(solo, RunSequence(*m.model, tokens, 1, KvDtype::kF16, two));
    EXPECT_EQ(solo, RunSequence(*m.model, tokens, 7, KvDtype::kF16, two));
    EXPECT_EQ(solo, RunSequence(*m.model, tokens, 50, KvDtype::kF16, two));
  }
}

// Rows that want no logits stop after writing their K/V in the last layer (the rest of their pass is unused);
// the rows that want logits continue alone. Their logits, and every later row that reads the skipped rows'
// K/V, must be bit-identical to a run where every row wants logits (nothing skipped).
TEST(BatchInvariance, RowsWithoutLogitsSkipTheLastLayerButKeepTheirKv) {
  for (const char* types : {"q8_0", "f32"}) {
    SCOPED_TRACE(types);
    LoadedModel m = LoadModelOrDie(TinyModelPath("tiny-qwen2", types));  // QKV bias: gathered rows get it too
    ASSERT_NE(m.model, nullptr);
    Model& model = *m.model;
    const int64_t vocab = model.config().n_vocab;
    std::vector<int32_t> tokens;
    for (int i = 0; i < 48; ++i) tokens.push_back((i * 37 + 11) % int32_t(vocab));
    ThreadPool pool(2);
    const auto every_row = RunSequence(model, tokens, 1, KvDtype::kF16, pool);

    const KvLayout layout = model.MakeKvLayout(KvDtype::kF16, 16);
    LocalKv kv(layout, int64_t(tokens.size()));
    // Chunks [begin, end) and which of their rows want logits: a prompt (only its last row; 20 and 31 too,
    // so kept rows are not adjacent), a chunk with none, then rows that read both chunks' K/V.
    struct Chunk {
      int begin, end;
      std::vector<int> logit_rows;
    };
    const Chunk chunks[] = {{0, 32, {20, 31}}, {32, 40, {}}, {40, 48, {40, 41, 42, 43, 44, 45, 46, 47}}};
    size_t compared = 0;
    for (const Chunk& chunk : chunks) {
      Batch batch;
      batch.sequences.push_back(kv.view());
      for (int i = chunk.begin; i < chunk.end; ++i) {
        const bool wants =
            std::find(chunk.logit_rows.begin(), chunk.logit_rows.end(), i) != chunk.logit_rows.end();
        batch.rows.push_back({tokens[i], i, 0, wants});
      }
      std::vector<float> logits(batch.LogitRows() * vocab);
      ASSERT_TRUE(model.Forward(batch, layout, logits, pool).ok());
      for (size_t j = 0; j < chunk.logit_rows.size(); ++j) {
        const int position = chunk.logit_rows[j];
        ASSERT_EQ(std::memcmp(every_row[position].data(), logits.data() + j * vocab, vocab * sizeof(float)),
                  0)
            << "position " << position;
        ++compared;
      }
    }
    EXPECT_EQ(compared, 10u);
  }
}

}  // namespace
}  // namespace lockstep::testing
