// Sampler's llama.cpp filters beyond top_k / top_p / min_p: top-nσ, locally typical sampling, XTC and
// min_keep — which tokens each leaves, the frequencies it draws them at, and that when off they change
// nothing (the same draws from the same seed).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "engine/sampler.h"

namespace lockstep {
namespace {

std::vector<float> FilterLogits(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(float(std::log(p)));
  return l;
}

std::map<int32_t, int> FilterHistogram(const SamplingParams& params, const std::vector<float>& logits,
                                       int n) {
  Sampler s(params);
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) ++counts[s.Sample(logits, {}).token];
  return counts;
}

std::set<int32_t> KeptTokens(const std::map<int32_t, int>& counts) {
  std::set<int32_t> out;
  for (const auto& [token, count] : counts) out.insert(token);
  return out;
}

std::vector<int32_t> FilterDraws(const SamplingParams& params, const std::vector<float>& logits, int n) {
  Sampler s(params);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(s.Sample(logits, {}).token);
  return out;
}

TEST(SamplerFilters, TopNSigmaKeepsLogitsNearTheLargest) {
  // Mean 0.6875, standard deviation ~1.20: one sigma below 3 keeps 3 and 2.5 only, three keep everything.
  const std::vector<float> logits = {3, 2.5f, 0, 0, 0, 0, 0, 0};
  SamplingParams p;
  p.seed = 1;
  p.top_n_sigma = 1.0f;
  EXPECT_EQ(KeptTokens(FilterHistogram(p, logits, 2000)), std::set<int32_t>({0, 1}));
  p.top_n_sigma = 3.0f;
  EXPECT_EQ(KeptTokens(FilterHistogram(p, logits, 20000)).size(), logits.size());
}

TEST(SamplerFilters, TypicalKeepsTheTokensNearestTheEntropy) {
  // H ~ 1.238 nats; surprises 0.69, 1.20, 2.30, 3.00, 3.00: token 1 is the most typical, then token 0.
  const std::vector<float> logits = FilterLogits({0.5, 0.3, 0.1, 0.05, 0.05});
  SamplingParams p;
  p.seed = 2;
  p.typical_p = 0.25f;  // token 1 alone holds 0.3: the most likely token is dropped
  EXPECT_EQ(KeptTokens(FilterHistogram(p, logits, 2000)), std::set<int32_t>({1}));
  p.typical_p = 0.5f;  // tokens 1 and 0 (0.8), renormalised
  const auto counts = FilterHistogram(p, logits, 8000);
  EXPECT_EQ(KeptTokens(counts), std::set<int32_t>({0, 1}));
  EXPECT_NEAR(counts.at(0) / 8000.0, 0.5 / 0.8, 0.03);
  p.typical_p = 0.25f;
  p.min_keep = 3;  // tokens 1, 0 and then 2 (distance 1.07)
  EXPECT_EQ(KeptTokens(FilterHistogram(p, logits, 8000)), std::set<int32_t>({0, 1, 2}));
}

TEST(SamplerFilters, XtcDropsTheTopChoicesButTheLeastLikelyOfThem) {
  const std::vector<float> logits = FilterLogits({0.4, 0.3, 0.2, 0.1});
  SamplingParams p;
  p.seed = 3;
  p.xtc_threshold = 0.25f;  // tokens 0 and 1 are above it: 0 goes, 1 stays
  p.xtc_probability = 1.0f;
  const auto always = FilterHistogram(p, logits, 8000);
  EXPECT_EQ(KeptTokens(always), std::set<int32_t>({1, 2, 3}));
  EXPECT_NEAR(always.at(1) / 8000.0, 0.5, 0.03);
  p.xtc_probability = 0.5f;  // half the time: token 0 at 0.5 * 0.4
  const auto half = FilterHistogram(p, logits, 8000);
  EXPECT_NEAR(half.at(0) / 8000.0, 0.2, 0.03);
  p.xtc_probability = 1.0f;
  p.xtc_threshold = 0.35f;  // one token above: nothing dropped
  EXPECT_EQ(KeptTokens(FilterHistogram(p, logits, 8000)).count(0), 1u);
  p.xtc_threshold = 0.25f;
  p.min_keep = 4;  // dropping token 0 would leave 3
  EXPECT_EQ(KeptTokens(FilterHistogram(p, logits, 8000)).count(0), 1u);
}

TEST(SamplerFilters, MinKeepHoldsTopPAndMinPOpen) {
  const std::vector<float> logits = FilterLogits({0.6, 0.2, 0.1, 0.05, 0.05});
  SamplingParams p;
  p.seed = 4;
  p.top_p = 0.1f;
  p.min_keep = 3;
  EXPECT_EQ(KeptTokens(FilterHistogram(p, logits, 8000)), std::set<int32_t>({0, 1, 2}));
  p.top_p = 1.0f;
  p.min_p = 0.9f;
  p.min_keep = 2;
  EXPECT_EQ(KeptTokens(FilterHistogram(p, logits, 8000)), std::set<int32_t>({0, 1}));
}

// Off, the filters change nothing: the same draws from the same seed (XTC above 0.5 draws no number).
TEST(SamplerFilters, OffMeansTheSameDraws) {
  std::vector<float> logits;
  for (int i = 0; i < 300; ++i) logits.push_back(float(std::sin(i * 0.7) * 3));
  SamplingParams base;
  base.seed = 99;
  base.temperature = 0.9f;
  base.top_p = 0.95f;
  base.min_p = 0.02f;
  const std::vector<int32_t> expected = FilterDraws(base, logits, 400);
  SamplingParams off = base;
  off.min_keep = 1;
  off.typical_p = 1.0f;
  off.top_n_sigma = -1.0f;
  off.xtc_probability = 0.0f;
  EXPECT_EQ(FilterDraws(off, logits, 400), expected);
  off.xtc_probability = 1.0f;
  off.xtc_threshold = 0.6f;
  EXPECT_EQ(FilterDraws(off, logits, 400), expected);
}

// Mirostat keeps the average surprise of the drawn tokens near tau: on a Zipf distribution over 512 tokens
// (p ~ 1/rank: ~6 bits a token drawn freely, the top token ~2.8 bits) it truncates to the likely head; the
// same seed gives the same draws.
TEST(SamplerFilters, MirostatHoldsTheSurpriseNearTau) {
  std::vector<float> logits;
  for (int i = 0; i < 512; ++i) logits.push_back(-float(std::log(double(i + 1))));
  std::vector<double> probs(logits.size());
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) sum += probs[i] = std::exp(double(logits[i]));
  const int n = 4000;
  const auto mean_surprise = [&](const SamplingParams& p) {
    Sampler s(p);
    double surprise = 0;
    for (int i = 0; i < n; ++i) surprise += -std::log2(probs[size_t(s.Sample(logits, {}).token)] / sum);
    return surprise / n;
  };
  SamplingParams free_draws;
  free_draws.seed = 11;
  const double free_surprise = mean_surprise(free_draws);
  EXPECT_GT(free_surprise, 5.0);
  for (int version : {1, 2}) {
    SamplingParams p = free_draws;
    p.mirostat = version;
    p.mirostat_tau = 3.5f;
    p.mirostat_eta = 0.1f;
    const double held = mean_surprise(p);
    EXPECT_LT(held, free_surprise - 1.0) << "mirostat " << version;
    EXPECT_NEAR(held, 3.5, 1.0) << "mirostat " << version;
    EXPECT_EQ(FilterDraws(p, logits, 200), FilterDraws(p, logits, 200)) << "mirostat " << version;
  }
  // Off: the plain path's draws.
  SamplingParams off;
  off.seed = 11;
  SamplingParams explicit_off = off;
  explicit_off.mirostat = 0;
  explicit_off.mirostat_tau = 2.0f;
  EXPECT_EQ(FilterDraws(off, logits, 300), FilterDraws(explicit_off, logits, 300));
}

// Dynamic temperature: the candidates' normalised entropy sets it within T ± range. Here H / H_max = 0.359,
// so T = 0 + 2 · 0.359 = 0.717 and the top token's 0.9 becomes 18^(1/0.717) / (18^(1/0.717) + 2) = 0.966.
TEST(SamplerFilters, DynamicTemperatureCoolsConfidentRows) {
  const std::vector<float> logits = FilterLogits({0.9, 0.05, 0.05});
  SamplingParams p;
  p.seed = 12;
  p.dynatemp_range = 1.0f;
  const auto counts = FilterHistogram(p, logits, 20000);
  EXPECT_NEAR(counts.at(0) / 20000.0, 0.966, 0.01);
  p.dynatemp_exponent = 0.0f;  // (H / H_max)^0 = 1: the top of the range, T = 2 (0.9 becomes 0.65)
  EXPECT_NEAR(FilterHistogram(p, logits, 20000).at(0) / 20000.0, std::sqrt(18.0) / (std::sqrt(18.0) + 2),
              0.015);
}

TEST(SamplerFilters, ValidateNamesTheField) {
  const auto message = [](auto set) {
    SamplingParams p;
    set(p);
    return p.Validate().message();
  };
  EXPECT_NE(message([](SamplingParams& p) { p.typical_p = 0; }).find("typical_p"), std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.xtc_probability = 1.5f; }).find("xtc_probability"),
            std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.xtc_threshold = -1; }).find("xtc_threshold"),
            std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.min_keep = -2; }).find("min_keep"), std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.top_n_sigma = NAN; }).find("top_n_sigma"), std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.mirostat = 3; }).find("mirostat"), std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.dynatemp_range = -1; }).find("dynatemp_range"),
            std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.mirostat_eta = INFINITY; }).find("mirostat_eta"),
            std::string::npos);
}

}  // namespace
}  // namespace lockstep
