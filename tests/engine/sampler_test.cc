// Sampler: greedy, each filter, penalties, seeded determinism, distribution sanity, logprobs; StopMatcher
// across token boundaries.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

namespace lockstep {
namespace {

std::vector<float> LogitsFromProbs(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(p > 0 ? float(std::log(p)) : -1e30f);
  return l;
}

std::map<int32_t, int> Histogram(const SamplingParams& params, const std::vector<float>& logits, int n,
                                 std::vector<int32_t> history = {}) {
  Sampler s(params);
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) ++counts[s.Sample(logits, history).token];
  return counts;
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p);
  EXPECT_EQ(s.Sample(std::vector<float>{0.1f, 3.0f, -1.0f, 2.0f}, {}).token, 1);
  EXPECT_EQ(s.Sample(std::vector<float>{1.0f, 5.0f, 5.0f}, {}).token, 1);
}

// The greedy pick is the plain loop's "take i when logit i > the best so far", whatever the vocabulary size
// (block and lane remainders), ties (lowest id), where the maximum sits, NaNs and infinities.
TEST(Sampler, GreedyMatchesThePlainLoopOverLargeRows) {
  const auto plain = [](const std::vector<float>& v) {
    int32_t best = 0;
    for (int32_t i = 1; i < int32_t(v.size()); ++i) {
      if (v[i] > v[best]) best = i;
    }
    return best;
  };
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p);
  std::mt19937 rng(5);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (size_t n : {1, 2, 15, 16, 17, 255, 256, 257, 1000, 49152, 49157}) {
    for (int trial = 0; trial < 12; ++trial) {
      std::vector<float> v(n);
      // Few distinct values, so that ties (also across blocks) are common.
      std::uniform_int_distribution<int> value(-3, trial % 3 == 0 ? 3 : 40);
      for (float& x : v) x = float(value(rng)) * 0.25f;
      std::uniform_int_distribution<size_t> at(0, n - 1);
      if (trial == 1) v[at(rng)] = inf;
      if (trial == 2) v[at(rng)] = nan;
      if (trial == 3) v[0] = nan;
      if (trial == 4) std::fill(v.begin(), v.end(), -inf);
      if (trial == 5) {
        std::fill(v.begin(), v.end(), nan);
        v[at(rng)] = -1.0f;
      }
      if (trial == 6) v[0] = -0.0f, v[n - 1] = 0.0f;
      if (trial == 7) v[n - 1] = 1e30f;
      ASSERT_EQ(s.Sample(v, {}).token, plain(v)) << "n " << n << " trial " << trial;
    }
  }
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDiffers) {
  std::vector<float> logits(100);
  for (int i = 0; i < 100; ++i) logits[i] = float(std::sin(i * 0.7));
  SamplingParams p;
  p.temperature = 1.5f;
  p.seed = 1234;
  Sampler a(p), b(p);
  p.seed = 1235;
  Sampler c(p);
  std::vector<int32_t> ra, rb, rc;
  for (int i = 0; i < 200; ++i) {
    ra.push_back(a.Sample(logits, ra).token);
    rb.push_back(b.Sample(logits, rb).token);
    rc.push_back(c.Sample(logits, rc).token);
  }
  EXPECT_EQ(ra, rb);
  EXPECT_NE(ra, rc);
}

// A seeded request draws the same tokens on every CPU: the softmax weights come from tensor/activations.h's
// polynomial exp (its bits are checked on every kernel level, aarch64 under qemu included, by the tensor
// tests), never from libm, and the rest is IEEE arithmetic in a fixed order plus std::mt19937_64. The logits
// here are exact (no libm either); the draws were recorded once and must not change on any machine.
TEST(Sampler, SeededDrawsAreTheRecordedOnes) {
  std::vector<float> logits(512);
  for (int i = 0; i < 512; ++i) logits[i] = float((i * 37) % 101) / 16.0f - 3.0f;
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 200;
  p.top_p = 0.95f;
  p.min_p = 0.001f;
  p.seed = 20261201;
  Sampler s(p);
  std::vector<int32_t> drawn;
  for (int i = 0; i < 48; ++i) drawn.push_back(s.Sample(logits, {}).token);
  const std::vector<int32_t> recorded = {131, 491, 442, 139, 150, 461, 423, 229, 60,  38,  333, 494,
                                         434, 27,  292, 423, 109, 439, 316, 221, 286, 240, 262, 431,
                                         218, 352, 73,  169, 161, 371, 207, 461, 428, 54,  453, 131,
                                         330, 278, 423, 158, 349, 483, 49,  87,  319, 136, 453, 180};
  std::string all;
  for (int32_t t : drawn) all += std::to_string(t) + ", ";
  EXPECT_EQ(drawn, recorded) << "drawn: " << all;
}

TEST(Sampler, TemperatureFrequenciesMatchSoftmax) {
  const std::vector<double> probs = {0.5, 0.3, 0.15, 0.05};
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 99;
  const int n = 20000;
  auto counts = Histogram(p, LogitsFromProbs(probs), n);
  for (size_t i = 0; i < probs.size(); ++i) {
    const double sigma = std::sqrt(n * probs[i] * (1 - probs[i]));
    EXPECT_NEAR(counts[int32_t(i)], n * probs[i], 5 * sigma) << "token " << i;
  }
  // Temperature 0.5 sharpens: p_i^2 normalised.
  p.temperature = 0.5f;
  counts = Histogram(p, LogitsFromProbs(probs), n);
  double z = 0;
  for (double q : probs) z += q * q;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double q = probs[i] * probs[i] / z;
    EXPECT_NEAR(counts[int32_t(i)], n * q, 5 * std::sqrt(n * q * (1 - q)) + 1) << "token " << i;
  }
}

TEST(Sampler, TopKKeepsOnlyKBest) {
  SamplingParams p;
  p.top_k = 2;
  p.seed = 3;
  auto counts = Histogram(p, LogitsFromProbs({0.1, 0.4, 0.1, 0.3, 0.1}), 3000);
  EXPECT_EQ(std::set<int32_t>({1, 3}), [&] {
    std::set<int32_t> s;
    for (auto& [t, c] : counts) s.insert(t);
    return s;
  }());
}

TEST(Sampler, TopPKeepsSmallestSetReachingMass) {
  SamplingParams p;
  p.top_p = 0.75f;  // 0.5 + 0.3 >= 0.75
  p.seed = 4;
  auto counts = Histogram(p, LogitsFromProbs({0.3, 0.5, 0.1, 0.1}), 3000);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[1], 0);
  // Renormalised: 0.5 / 0.8 for token 1.
  EXPECT_NEAR(counts[1] / 3000.0, 0.625, 0.05);
}

TEST(Sampler, TopPOverLargeVocabularyFallsBackToFullSort) {
  // 5000 nearly equal logits: the top-1024 prefix cannot reach top_p = 0.9, so everything is sorted.
  std::vector<float> logits(5000, 0.0f);
  logits[17] = 0.01f;
  SamplingParams p;
  p.top_p = 0.9f;
  p.seed = 8;
  auto counts = Histogram(p, logits, 2000);
  int above_1024 = 0;
  for (auto& [t, c] : counts) above_1024 += t >= 1100 ? c : 0;
  EXPECT_GT(above_1024, 0);
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  SamplingParams p;
  p.min_p = 0.25f;  // keeps probs >= 0.25 * 0.6
  p.seed = 5;
  auto counts = Histogram(p, LogitsFromProbs({0.6, 0.1, 0.2, 0.1}), 3000);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[2], 0);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0f;
  Sampler s(p);
  // Token 0 (logit 3) is in history: 3 / 2 = 1.5 < 2 -> token 1 wins.
  EXPECT_EQ(s.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0}).token, 1);
  // Negative logits: -1 * 2 = -2 < -1.5.
  EXPECT_EQ(s.Sample(std::vector<float>{-1.0f, -1.5f}, std::vector<int32_t>{0}).token, 1);
  // Outside the window: no penalty.
  p.penalty_last_n = 1;
  Sampler w(p);
  EXPECT_EQ(w.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0, 1}).token, 0);
}

TEST(Sampler, FrequencyAndPresencePenalties) {
  SamplingParams p;
  p.temperature = 0;
  p.frequency_penalty = 0.5f;
  Sampler f(p);
  // Token 0 seen 3 times: 3 - 1.5 = 1.5 < 2.
  EXPECT_EQ(f.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0, 0, 0}).token, 1);
  EXPECT_EQ(f.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0}).token, 0);  // 2.5 > 2
  p.frequency_penalty = 0;
  p.presence_penalty = 1.5f;
  Sampler pr(p);
  EXPECT_EQ(pr.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0}).token, 1);
  // Counts reset between calls.
  EXPECT_EQ(pr.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{1}).token, 0);
}

TEST(Sampler, LogitBiasIsAddedAfterThePenalties) {
  SamplingParams p;
  p.temperature = 0;
  p.logprobs = true;
  p.logit_bias = {{1, 1.5f}, {7, 100.0f}};  // 7: past this vocabulary, ignored
  Sampler s(p);
  const SampleResult r = s.Sample(std::vector<float>{3.0f, 2.0f, 1.0f}, {});
  EXPECT_EQ(r.token, 1);  // 2 + 1.5 > 3
  EXPECT_NEAR(r.logprob, 2.0f - std::log(std::exp(3.0f) + std::exp(2.0f) + std::exp(1.0f)), 1e-5);  // raw
  // With the repetition penalty first: token 1 in history, 2 / 2 + 1.5 = 2.5 < 3.
  p.repetition_penalty = 2.0f;
  Sampler penalised(p);
  EXPECT_EQ(penalised.Sample(std::vector<float>{3.0f, 2.0f, 1.0f}, std::vector<int32_t>{1}).token, 0);
  // -100 bans a token in sampling too: token 0 never drawn.
  SamplingParams sampled;
  sampled.logit_bias = {{0, -100.0f}};
  const auto counts = Histogram(sampled, LogitsFromProbs({0.9, 0.05, 0.05}), 2000);
  EXPECT_EQ(counts.count(0), 0u);
  sampled.logit_bias = {{-1, 1.0f}};
  EXPECT_NE(sampled.Validate().message().find("logit_bias"), std::string::npos);
}

TEST(Sampler, LogprobsAreLogSoftmaxOfRawLogits) {
  SamplingParams p;
  p.temperature = 0;
  p.logprobs = true;
  p.top_logprobs = 2;
  Sampler s(p);
  const SampleResult r = s.Sample(LogitsFromProbs({0.2, 0.7, 0.1}), {});
  EXPECT_EQ(r.token, 1);
  EXPECT_NEAR(r.logprob, std::log(0.7), 1e-5);
  ASSERT_EQ(r.top.size(), 2u);
  EXPECT_EQ(r.top[0].token, 1);
  EXPECT_EQ(r.top[1].token, 0);
  EXPECT_NEAR(r.top[1].logprob, std::log(0.2), 1e-5);
}

TEST(Sampler, TopLogprobsKeepTheLowestIdAmongEqualLogits) {
  // Many ties and a vocabulary larger than the list: the same order as sorting (logit desc, id asc).
  std::vector<float> logits;
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) logits.push_back(float(int(rng() % 7)) * 0.5f);
  std::vector<int32_t> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  for (int32_t n : {0, 1, 5, 20}) {
    std::vector<TokenLogprob> top;
    const float lp = TokenLogprobOf(logits, 42, n, &top);
    ASSERT_EQ(top.size(), size_t(n));
    for (int32_t k = 0; k < n; ++k) {
      EXPECT_EQ(top[size_t(k)].token, order[size_t(k)]) << "rank " << k;
      EXPECT_EQ(top[size_t(k)].logprob, TokenLogprobOf(logits, order[size_t(k)], 0, nullptr));
    }
    EXPECT_LE(lp, 0.0f);
  }
}

TEST(Sampler, ValidateNamesTheField) {
  SamplingParams p;
  p.top_p = 0;
  EXPECT_NE(p.Validate().message().find("top_p"), std::string::npos);
  p = {};
  p.temperature = -1;
  EXPECT_NE(p.Validate().message().find("temperature"), std::string::npos);
  p = {};
  EXPECT_TRUE(p.Validate().ok());
}

std::string Feed(StopMatcher& m, const std::vector<std::string>& deltas, bool* stopped) {
  std::string out;
  *stopped = false;
  for (const std::string& d : deltas) {
    const StopMatcher::Output o = m.Push(d);
    out += o.text;
    if (o.stopped) {
      *stopped = true;
      return out;
    }
  }
  return out + m.Flush();
}

TEST(StopMatcher, FindsStopAcrossTokenBoundaries) {
  StopMatcher m({"</end>"});
  bool stopped;
  EXPECT_EQ(Feed(m, {"Hello <", "/e", "nd", "> more"}, &stopped), "Hello ");
  EXPECT_TRUE(stopped);
}

TEST(StopMatcher, HoldsBackOnlyPossiblePrefixes) {
  StopMatcher m({"STOP"});
  StopMatcher::Output o = m.Push("abc S");
  EXPECT_EQ(o.text, "abc ");  // "S" might start STOP
  o = m.Push("Tx");
  EXPECT_EQ(o.text, "STx");  // it did not
  EXPECT_FALSE(o.stopped);
  o = m.Push("ST");
  EXPECT_EQ(o.text, "");
  EXPECT_EQ(m.Flush(), "ST");  // end of stream: release held text
}

TEST(StopMatcher, EarliestOfSeveralStops) {
  StopMatcher m({"world", "lo w", ""});
  bool stopped;
  EXPECT_EQ(Feed(m, {"hel", "lo wor", "ld"}, &stopped), "hel");
  EXPECT_TRUE(stopped);
  StopMatcher none({});
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(Feed(none, {"a", "b"}, &stopped), "ab");
  EXPECT_FALSE(stopped);
}

TEST(StopMatcher, StopInsideOneDelta) {
  StopMatcher m({"\n\n"});
  bool stopped;
  EXPECT_EQ(Feed(m, {"line one\n\nline two"}, &stopped), "line one");
  EXPECT_TRUE(stopped);
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.Push("x").text, "");
}

TEST(StopMatcher, TailHoldsTheStopAndWhatFollowedIt) {
  StopMatcher m({"</end>"});
  EXPECT_EQ(m.Push("Hello <").text, "Hello ");  // "<" held back
  const StopMatcher::Output o = m.Push("/end> more");
  EXPECT_TRUE(o.stopped);
  EXPECT_EQ(o.text, "");
  EXPECT_EQ(o.tail, "</end> more");  // every pushed byte is in some text or in the tail
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

std::vector<uint64_t> MaskOf(size_t vocab, std::initializer_list<int32_t> ids) {
  std::vector<uint64_t> mask((vocab + 63) / 64, 0);
  for (int32_t id : ids) mask[size_t(id) / 64] |= uint64_t(1) << (id % 64);
  return mask;
}

TEST(Sampler, AllowedMaskRestrictsGreedyAndSampling) {
  std::vector<float> logits(130, 0.0f);
  logits[3] = 9.0f;    // the best token, not allowed
  logits[70] = 1.0f;   // allowed
  logits[129] = 2.0f;  // allowed, best among allowed (last word, partial)
  SamplingParams greedy;
  greedy.temperature = 0;
  Sampler g(greedy);
  const std::vector<uint64_t> mask = MaskOf(logits.size(), {5, 70, 129});
  EXPECT_EQ(g.Sample(logits, {}, mask).token, 129);
  SamplingParams warm;
  warm.temperature = 1.5f;
  warm.top_k = 2;
  warm.seed = 3;
  Sampler s(warm);
  std::map<int32_t, int> seen;
  for (int i = 0; i < 400; ++i) ++seen[s.Sample(logits, {}, mask).token];
  EXPECT_EQ(seen.size(), 2u);  // top_k over the allowed tokens only: 129 and 70
  EXPECT_GT(seen[129], seen[70]);
  EXPECT_EQ(seen.count(3), 0u);
  // Logprobs stay those of the unmasked distribution.
  SamplingParams lp = greedy;
  lp.logprobs = true;
  Sampler l(lp);
  const SampleResult r = l.Sample(logits, {}, mask);
  double z = 0;
  for (float x : logits) z += std::exp(double(x));
  EXPECT_NEAR(r.logprob, 2.0 - std::log(z), 1e-4);
}

TEST(Sampler, FullMaskSamplesLikeNoMask) {
  std::vector<float> logits(100);
  for (int i = 0; i < 100; ++i) logits[i] = float(std::cos(i * 0.37));
  SamplingParams p;
  p.seed = 11;
  p.top_p = 0.9f;
  Sampler a(p), b(p);
  std::vector<uint64_t> all((100 + 63) / 64, ~uint64_t(0));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Sample(logits, {}).token, b.Sample(logits, {}, all).token);
}

}  // namespace
}  // namespace lockstep
