// DRY (engine/dry_penalty.h) on fabricated token histories: a repeat of L tokens costs the token that would
// extend it exactly multiplier * base^(L - allowed_length); the longest repeat counts; single-token and
// two-token sequence breakers stop a match; the dry_penalty_last_n window bounds it; the Z-algorithm agrees
// with a brute-force count on random histories; and in the Sampler, DRY off changes no draw while DRY on
// changes a greedy choice.
#include "engine/dry_penalty.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/sampler.h"

namespace lockstep {
namespace {

constexpr int32_t kDryVocab = 32;

DryParams DryOn(float multiplier = 0.8f, float base = 1.75f, int32_t allowed = 2, int32_t last_n = -1) {
  DryParams p;
  p.multiplier = multiplier;
  p.base = base;
  p.allowed_length = allowed;
  p.penalty_last_n = last_n;
  return p;
}

// The logits after DRY, from a row of distinct values (so a change is visible on every token).
std::vector<float> DryLogits(const DryParams& params, const std::vector<int32_t>& history) {
  std::vector<float> logits(kDryVocab);
  for (int32_t t = 0; t < kDryVocab; ++t) logits[size_t(t)] = 0.25f * float(t) - 3.0f;
  DryPenalty dry;
  dry.Apply(params, history, logits);
  return logits;
}

// How much each token's logit went down.
std::vector<double> DryDrops(const DryParams& params, const std::vector<int32_t>& history) {
  const std::vector<float> after = DryLogits(params, history);
  std::vector<double> drops(kDryVocab);
  for (int32_t t = 0; t < kDryVocab; ++t)
    drops[size_t(t)] = double(0.25f * float(t) - 3.0f) - after[size_t(t)];
  return drops;
}

// Only `token` went down, by `expected` (0: nothing did).
void ExpectOnlyDrop(const std::vector<double>& drops, int32_t token, double expected) {
  for (int32_t t = 0; t < kDryVocab; ++t) {
    if (t == token) {
      EXPECT_NEAR(drops[size_t(t)], expected, 1e-5 * std::max(1.0, expected)) << "token " << t;
    } else {
      EXPECT_EQ(drops[size_t(t)], 0.0) << "token " << t;
    }
  }
}

TEST(DryPenalty, ARepeatOfLengthLCostsMultiplierTimesBaseToTheExcess) {
  // history: 10 11 .. (L tokens) 20 | 21 22 | 10 11 .. (the same L tokens): 20 would extend a repeat of L.
  for (int32_t length = 1; length <= 7; ++length) {
    std::vector<int32_t> history;
    for (int32_t i = 0; i < length; ++i) history.push_back(10 + i);
    history.insert(history.end(), {20, 21, 22});
    for (int32_t i = 0; i < length; ++i) history.push_back(10 + i);
    const DryParams params = DryOn(0.8f, 1.75f, 2);
    const std::vector<float> after = DryLogits(params, history);
    const float before = 0.25f * 20 - 3.0f;
    if (length < 2) {
      ExpectOnlyDrop(DryDrops(params, history), 20, 0.0);
      continue;
    }
    // Exactly the float of multiplier * base^(L - allowed) (in double, as llama.cpp), subtracted once.
    const float penalty = float(double(0.8f) * std::pow(1.75, double(length - 2)));
    EXPECT_EQ(after[20], before - penalty) << "L = " << length;
    EXPECT_EQ(DryPenaltyFor(params, length), penalty);
    ExpectOnlyDrop(DryDrops(params, history), 20, 0.8 * std::pow(1.75, double(length - 2)));
  }
  // L = 5, allowed 2: 0.8 * 1.75^3 = 4.2875; allowed 5: the multiplier itself; allowed 6: nothing.
  const std::vector<int32_t> five = {1, 2, 3, 4, 5, 20, 21, 1, 2, 3, 4, 5};
  ExpectOnlyDrop(DryDrops(DryOn(0.8f, 1.75f, 2), five), 20, 4.2875);
  ExpectOnlyDrop(DryDrops(DryOn(0.8f, 1.75f, 5), five), 20, 0.8);
  ExpectOnlyDrop(DryDrops(DryOn(0.8f, 1.75f, 6), five), 20, 0.0);
}

TEST(DryPenalty, TheLongestRepeatATokenWouldExtendCounts) {
  // 9 follows "3 4" (a repeat of 2 of the suffix "1 3 4") and "1 3 4" (3): one penalty, for 3.
  const std::vector<int32_t> history = {3, 4, 9, 1, 3, 4, 9, 7, 1, 3, 4};
  ExpectOnlyDrop(DryDrops(DryOn(1.0f, 2.0f, 2), history), 9, 2.0);
  // Two different followers: 9 after "1 3 4" (3), 8 after "3 4" (2).
  const std::vector<int32_t> two = {3, 4, 8, 1, 3, 4, 9, 7, 1, 3, 4};
  const std::vector<double> drops = DryDrops(DryOn(1.0f, 2.0f, 2), two);
  EXPECT_NEAR(drops[9], 2.0, 1e-6);
  EXPECT_NEAR(drops[8], 1.0, 1e-6);
}

TEST(DryPenalty, OffChangesNothing) {
  const std::vector<int32_t> history = {1, 2, 3, 4, 5, 20, 21, 1, 2, 3, 4, 5};
  ExpectOnlyDrop(DryDrops(DryOn(0.0f), history), 20, 0.0);                // multiplier 0
  ExpectOnlyDrop(DryDrops(DryOn(0.8f, 0.99f), history), 20, 0.0);         // base < 1
  ExpectOnlyDrop(DryDrops(DryOn(0.8f, 1.75f, 2, 0), history), 20, 0.0);   // penalty_last_n 0
  ExpectOnlyDrop(DryDrops(DryOn(0.8f, 1.75f, 2), {}), 20, 0.0);           // no history
  ExpectOnlyDrop(DryDrops(DryOn(0.8f, 1.75f, 2), {1, 2, 1, 2}), 1, 0.8);  // (on: "1 2" then 1)
}

TEST(DryPenalty, APenaltyLargerThanAFloatIsCapped) {
  std::vector<int32_t> history;
  for (int32_t i = 0; i < 60; ++i) history.push_back(1 + i % 2 + 2 * (i / 30));  // 1 2 1 2 ... 3 4 3 4 ...
  // 3 would extend a repeat of 28 ("3 4 ... 3 4"): 1e6^26 is far beyond a float, and capped.
  const std::vector<float> after = DryLogits(DryOn(1.0f, 1e6f, 2), history);
  for (float l : after) EXPECT_TRUE(std::isfinite(l));
  EXPECT_EQ(after[3], 0.25f * 3 - 3.0f - kMaxDryPenalty);
}

// A breaker: a restart sequence `head` + `tail`.
std::shared_ptr<const DrySequenceBreakers> Breakers(
    const std::vector<std::pair<int32_t, std::vector<int32_t>>>& sequences) {
  auto breakers = std::make_shared<DrySequenceBreakers>();
  for (const auto& [head, tail] : sequences) breakers->Add(head, tail);
  return breakers;
}

TEST(DryPenalty, ASingleTokenBreakerStopsAMatch) {
  // "1 2 30 3 4" repeats, followed once by 20; 30 is a breaker: only "3 4" (2) counts.
  const std::vector<int32_t> history = {1, 2, 30, 3, 4, 20, 21, 1, 2, 30, 3, 4};
  DryParams params = DryOn(1.0f, 2.0f, 2);
  ExpectOnlyDrop(DryDrops(params, history), 20, 8.0);  // 2^(5 - 2) without breakers
  params.breakers = Breakers({{30, {}}});
  ExpectOnlyDrop(DryDrops(params, history), 20, 1.0);  // 2^(2 - 2)
  // After the breaker only one token: below allowed_length, no penalty at all.
  const std::vector<int32_t> short_tail = {1, 2, 30, 3, 20, 21, 1, 2, 30, 3};
  ExpectOnlyDrop(DryDrops(params, short_tail), 20, 0.0);
  // A candidate that is itself a breaker is never penalised: 30 follows "1 2" twice.
  const std::vector<int32_t> before_breaker = {1, 2, 30, 5, 6, 1, 2};
  ExpectOnlyDrop(DryDrops(DryOn(1.0f, 2.0f, 2), before_breaker), 30, 1.0);
  ExpectOnlyDrop(DryDrops(params, before_breaker), 30, 0.0);
}

TEST(DryPenalty, ABreakerSpanningTwoTokensStopsAMatchOnlyWhole) {
  // The breaker is 30 followed by 31 (say ":" split as two tokens' texts); "1 30 31 3 4" repeats.
  DryParams params = DryOn(1.0f, 2.0f, 2);
  params.breakers = Breakers({{30, {31}}});
  const std::vector<int32_t> whole = {1, 30, 31, 3, 4, 20, 21, 1, 30, 31, 3, 4};
  ExpectOnlyDrop(DryDrops(DryOn(1.0f, 2.0f, 2), whole), 20, 8.0);  // 2^(5 - 2) without breakers
  ExpectOnlyDrop(DryDrops(params, whole), 20, 1.0);                // "3 4" only
  // 30 without 31 after it is no breaker: the whole repeat counts.
  const std::vector<int32_t> head_only = {1, 30, 32, 3, 4, 20, 21, 1, 30, 32, 3, 4};
  ExpectOnlyDrop(DryDrops(params, head_only), 20, 8.0);
  // The last tokens are the breaker's head and tail: nothing after it may repeat.
  const std::vector<int32_t> at_end = {3, 4, 30, 31, 20, 21, 3, 4, 30, 31};
  ExpectOnlyDrop(DryDrops(params, at_end), 20, 0.0);
  // A head whose tail is cut off by the end of the window does not count either: 30 is last.
  const std::vector<int32_t> head_last = {3, 4, 30, 20, 21, 3, 4, 30};
  ExpectOnlyDrop(DryDrops(params, head_last), 20, 2.0);  // "3 4 30": 2^(3 - 2)
}

TEST(DryPenalty, PenaltyLastNBoundsTheWindow) {
  // 20 follows "1 2 3" 6 tokens before the suffix "1 2 3".
  const std::vector<int32_t> history = {1, 2, 3, 20, 5, 6, 1, 2, 3};
  ExpectOnlyDrop(DryDrops(DryOn(1.0f, 2.0f, 2, -1), history), 20, 2.0);  // all: L = 3
  ExpectOnlyDrop(DryDrops(DryOn(1.0f, 2.0f, 2, 9), history), 20, 2.0);
  ExpectOnlyDrop(DryDrops(DryOn(1.0f, 2.0f, 2, 8), history), 20, 1.0);  // "2 3 20 ...": L = 2
  ExpectOnlyDrop(DryDrops(DryOn(1.0f, 2.0f, 2, 7), history), 20, 0.0);  // "3 20 ...": L = 1
  ExpectOnlyDrop(DryDrops(DryOn(1.0f, 2.0f, 2, 1000), history), 20, 2.0);
}

// The same penalties by brute force: for each earlier position, the longest common suffix with the window's
// end (within the window), capped at the tokens after the last complete restart sequence.
std::vector<double> BruteForceDrops(const DryParams& params, const std::vector<int32_t>& history,
                                    const std::vector<std::pair<int32_t, std::vector<int32_t>>>& sequences) {
  std::vector<double> drops(kDryVocab, 0.0);
  const size_t n =
      params.penalty_last_n < 0 ? history.size() : std::min(history.size(), size_t(params.penalty_last_n));
  const std::vector<int32_t> w(history.end() - std::ptrdiff_t(n), history.end());
  if (int64_t(n) <= params.allowed_length) return drops;
  // The restart sequence that starts last (its longest complete form there), as llama.cpp's scan.
  int64_t limit = int64_t(n);
  for (int64_t start = int64_t(n) - 1; start >= 0; --start) {
    int64_t longest = -1;
    for (const auto& [head, tail] : sequences) {
      if (w[size_t(start)] != head || start + int64_t(tail.size()) > int64_t(n) - 1) continue;
      if (std::equal(tail.begin(), tail.end(), w.begin() + start + 1))
        longest = std::max(longest, int64_t(tail.size()));
    }
    if (longest >= 0) {
      limit = int64_t(n) - 1 - start - longest;
      break;
    }
  }
  if (limit < params.allowed_length) return drops;
  std::vector<int64_t> longest(kDryVocab, -1);
  for (size_t p = 0; p + 1 < n; ++p) {  // a copy ending at p, followed by w[p + 1]
    int64_t m = 0;
    while (m <= int64_t(p) && w[p - size_t(m)] == w[n - 1 - size_t(m)]) ++m;
    m = std::min(m, limit);
    if (m >= params.allowed_length) longest[size_t(w[p + 1])] = std::max(longest[size_t(w[p + 1])], m);
  }
  for (int32_t t = 0; t < kDryVocab; ++t) {
    bool single = false;
    for (const auto& [head, tail] : sequences) single = single || (head == t && tail.empty());
    if (longest[size_t(t)] >= 0 && !single)
      drops[size_t(t)] = DryPenaltyFor(params, int32_t(longest[size_t(t)]));
  }
  return drops;
}

TEST(DryPenalty, AgreesWithBruteForceOnRandomHistories) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const int32_t alphabet = 2 + int32_t(rng() % 4);  // few tokens: many repeats
    std::vector<int32_t> history(1 + rng() % 60);
    for (int32_t& t : history) t = int32_t(rng() % uint32_t(alphabet));
    std::vector<std::pair<int32_t, std::vector<int32_t>>> sequences;
    if (trial % 3 != 0) sequences.push_back({int32_t(rng() % uint32_t(alphabet)), {}});
    if (trial % 2 == 0) {
      sequences.push_back({int32_t(rng() % uint32_t(alphabet)),
                           {int32_t(rng() % uint32_t(alphabet)), int32_t(rng() % uint32_t(alphabet))}});
    }
    DryParams params = DryOn(0.5f, 1.5f, int32_t(rng() % 4), trial % 5 == 0 ? int32_t(rng() % 40) : -1);
    if (params.penalty_last_n == 0) params.penalty_last_n = -1;
    if (!sequences.empty()) params.breakers = Breakers(sequences);
    const std::vector<double> want = BruteForceDrops(params, history, sequences);
    const std::vector<double> got = DryDrops(params, history);
    for (int32_t t = 0; t < kDryVocab; ++t) {
      ASSERT_NEAR(got[size_t(t)], want[size_t(t)], 1e-5 * std::max(1.0, want[size_t(t)]))
          << "trial " << trial << " token " << t;
    }
  }
}

TEST(DryPenalty, ValidateNamesTheField) {
  SamplingParams p;
  p.dry.multiplier = -1;
  EXPECT_NE(p.Validate().message().find("dry_multiplier"), std::string::npos);
  p = SamplingParams();
  p.dry.base = NAN;
  EXPECT_NE(p.Validate().message().find("dry_base"), std::string::npos);
  p = SamplingParams();
  p.dry.allowed_length = -1;
  EXPECT_NE(p.Validate().message().find("dry_allowed_length"), std::string::npos);
  p = SamplingParams();
  p.dry.penalty_last_n = -2;
  EXPECT_NE(p.Validate().message().find("dry_penalty_last_n"), std::string::npos);
  p = SamplingParams();
  p.dry = DryOn();
  EXPECT_TRUE(p.Validate().ok());
}

std::vector<int32_t> DryDraws(const SamplingParams& params, const std::vector<int32_t>& history, int n) {
  std::vector<float> logits(kDryVocab);
  for (int32_t t = 0; t < kDryVocab; ++t) logits[size_t(t)] = -0.1f * float(t);
  logits[8] = 1.0f;  // the most likely token, then 0
  Sampler s(params);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(s.Sample(logits, history).token);
  return out;
}

TEST(DryPenalty, SamplerOffGivesTheSameDrawsAndOnChangesGreedy) {
  const std::vector<int32_t> history = {1, 2, 3, 8, 5, 6, 1, 2, 3};  // 8 would extend "1 2 3"
  SamplingParams plain;
  plain.seed = 11;
  plain.top_k = 0;
  plain.min_p = 0;
  // Off: any other DRY settings change no draw.
  SamplingParams off = plain;
  off.dry = DryOn(0.0f, 3.0f, 1, 4);
  off.dry.breakers = Breakers({{1, {}}});
  EXPECT_EQ(DryDraws(off, history, 300), DryDraws(plain, history, 300));
  off.dry = DryOn(0.8f, 1.75f, 2, 0);  // penalty_last_n 0
  EXPECT_EQ(DryDraws(off, history, 300), DryDraws(plain, history, 300));
  // Greedy: 8 has the largest logit, 1.0; DRY takes 0.8 * 1.75 off it and 0 (logit 0) wins.
  plain.temperature = 0;
  EXPECT_EQ(DryDraws(plain, history, 1)[0], 8);
  SamplingParams on = plain;
  on.dry = DryOn(0.8f, 1.75f, 2);
  EXPECT_EQ(DryDraws(on, history, 1)[0], 0);
  // Sampled: 8 is drawn less often with DRY on.
  plain.temperature = 1;
  on.temperature = 1;
  const auto count8 = [](const std::vector<int32_t>& v) { return std::count(v.begin(), v.end(), 8); };
  EXPECT_LT(count8(DryDraws(on, history, 2000)), count8(DryDraws(plain, history, 2000)) / 2);
}

}  // namespace
}  // namespace lockstep
