#include "engine/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "tensor/activations.h"

namespace lockstep {
namespace {

// e^x for the softmax weights: tensor/activations.h's polynomial, which gives the same bits on every CPU and
// with every libm (std::exp's last bits differ between libm builds and architectures, and a seeded draw
// compares a cumulative sum with a random number, so one bit can change the token). The polynomial clamps
// below -87; such weights are under 2^-125 of the best candidate's and count as 0.
float SoftmaxWeight(float x) { return x < -87.0f ? 0.0f : ExpPolynomial(x); }

// When top_p alone trims the vocabulary, sort this many best candidates first and fall back to a full sort
// only if they do not reach the mass.
constexpr size_t kTopPPrefix = 1024;

// The lowest id of the largest value of v (non-empty), as the plain loop "take i when v[i] > v[best]" finds
// it: NaNs never win, except a NaN at id 0 (nothing compares greater than it). The plain loop's best value
// was a load through the index just chosen, a dependency of ~7 cycles per logit (~0.1 ms for a row of
// 49152, serial on the engine thread for every row of a step); here the maxima of blocks of kBlock run
// in independent lanes (vectorised: `x > m ? x : m` is MAXPS's definition), and only the first block
// holding the overall maximum is searched for its lowest id.
int32_t ArgmaxLowestId(std::span<const float> v) {
  constexpr size_t kLanes = 16, kBlock = 256;
  const size_t n = v.size();
  if (std::isnan(v[0])) return 0;
  float best = v[0];
  size_t best_block = 0;  // the first block whose maximum is `best`
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t end = std::min(n, begin + kBlock);
    float m[kLanes];
    for (float& x : m) x = -std::numeric_limits<float>::infinity();
    size_t i = begin;
    for (; i + kLanes <= end; i += kLanes) {
      for (size_t j = 0; j < kLanes; ++j) m[j] = v[i + j] > m[j] ? v[i + j] : m[j];
    }
    for (; i < end; ++i) m[0] = v[i] > m[0] ? v[i] : m[0];
    float block_max = m[0];
    for (size_t j = 1; j < kLanes; ++j) block_max = m[j] > block_max ? m[j] : block_max;
    if (block_max > best) {
      best = block_max;
      best_block = begin;
    }
  }
  for (size_t i = best_block; i < n; ++i) {
    if (v[i] == best) return int32_t(i);
  }
  return 0;  // unreachable: best is v[0] or some block's maximum
}

template <typename C>
bool Better(const C& a, const C& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

}  // namespace

Status SamplingParams::Validate() const {
  auto bad = [](const std::string& field, const std::string& why) {
    return InvalidArgument("sampling parameter '" + field + "' " + why);
  };
  if (!(temperature >= 0) || !std::isfinite(temperature)) return bad("temperature", "must be >= 0");
  if (top_k < 0) return bad("top_k", "must be >= 0");
  if (!(top_p > 0 && top_p <= 1)) return bad("top_p", "must be in (0, 1]");
  if (!(min_p >= 0 && min_p <= 1)) return bad("min_p", "must be in [0, 1]");
  if (!(repetition_penalty > 0) || !std::isfinite(repetition_penalty)) {
    return bad("repetition_penalty", "must be > 0");
  }
  if (!std::isfinite(frequency_penalty)) return bad("frequency_penalty", "must be finite");
  if (!std::isfinite(presence_penalty)) return bad("presence_penalty", "must be finite");
  if (penalty_last_n < -1) return bad("penalty_last_n", "must be >= -1");
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0) return bad("logit_bias", "names a negative token id " + std::to_string(token));
    if (!std::isfinite(bias)) return bad("logit_bias", "must be finite");
  }
  if (top_logprobs < 0 || top_logprobs > 100) return bad("top_logprobs", "must be in 0..100");
  if (!std::isfinite(top_n_sigma)) return bad("top_n_sigma", "must be finite");
  if (!(typical_p > 0 && typical_p <= 1)) return bad("typical_p", "must be in (0, 1]");
  if (!(xtc_probability >= 0 && xtc_probability <= 1)) return bad("xtc_probability", "must be in [0, 1]");
  if (!(xtc_threshold >= 0 && xtc_threshold <= 1)) return bad("xtc_threshold", "must be in [0, 1]");
  if (min_keep < 0) return bad("min_keep", "must be >= 0");
  if (mirostat < 0 || mirostat > 2) return bad("mirostat", "must be 0, 1 or 2");
  if (!(dynatemp_range >= 0) || !std::isfinite(dynatemp_range)) return bad("dynatemp_range", "must be >= 0");
  if (!std::isfinite(dynatemp_exponent)) return bad("dynatemp_exponent", "must be finite");
  if (!std::isfinite(mirostat_tau)) return bad("mirostat_tau", "must be finite");
  if (!std::isfinite(mirostat_eta)) return bad("mirostat_eta", "must be finite");
  if (!(dry.multiplier >= 0) || !std::isfinite(dry.multiplier)) return bad("dry_multiplier", "must be >= 0");
  if (!std::isfinite(dry.base)) return bad("dry_base", "must be finite");
  if (dry.allowed_length < 0) return bad("dry_allowed_length", "must be >= 0");
  if (dry.penalty_last_n < -1) return bad("dry_penalty_last_n", "must be >= -1");
  return Status::Ok();
}

Sampler::Sampler(const SamplingParams& params)
    : params_(params), rng_(params.seed), mu_(2.0f * params.mirostat_tau) {}

bool Sampler::Penalised(std::span<const int32_t> history) const {
  const bool any = params_.repetition_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
                   params_.presence_penalty != 0.0f;
  return (any && params_.penalty_last_n != 0 && !history.empty()) || !params_.logit_bias.empty() ||
         (params_.dry.enabled() && int64_t(history.size()) > params_.dry.allowed_length);
}

void Sampler::ApplyPenalties(std::span<const int32_t> history) {
  const size_t n =
      params_.penalty_last_n < 0 ? history.size() : std::min(history.size(), size_t(params_.penalty_last_n));
  const std::span<const int32_t> recent = history.last(n);
  const int32_t vocab = static_cast<int32_t>(work_.size());
  if (counts_.size() < work_.size()) counts_.assign(work_.size(), 0);
  for (int32_t t : recent) {
    if (t >= 0 && t < vocab) ++counts_[t];
  }
  for (int32_t t : recent) {
    if (t < 0 || t >= vocab || counts_[t] == 0) continue;  // each token once
    float& l = work_[t];
    if (params_.repetition_penalty != 1.0f) {
      l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    }
    l -= float(counts_[t]) * params_.frequency_penalty + params_.presence_penalty;
    counts_[t] = 0;
  }
  for (const auto& [token, bias] : params_.logit_bias) {
    if (token >= 0 && token < vocab) work_[token] += bias;
  }
  dry_.Apply(params_.dry, history, work_);
}

SampleResult Sampler::Sample(std::span<const float> logits, std::span<const int32_t> history,
                             std::span<const uint64_t> allowed) {
  SampleResult result;
  // The logits as the later stages see them: the row itself, or a penalised copy.
  std::span<const float> values = logits;
  if (Penalised(history)) {
    work_.assign(logits.begin(), logits.end());
    ApplyPenalties(history);
    values = work_;
  }
  const int32_t vocab = static_cast<int32_t>(values.size());
  LOCKSTEP_CHECK(allowed.empty() || allowed.size() == (size_t(vocab) + 63) / 64);
  // Calls f(id) for every allowed id, ascending.
  const auto for_each_allowed = [&](auto&& f) {
    if (allowed.empty()) {
      for (int32_t i = 0; i < vocab; ++i) f(i);
      return;
    }
    for (size_t w = 0; w < allowed.size(); ++w) {
      for (uint64_t bits = allowed[w]; bits != 0; bits &= bits - 1) {
        const int32_t i = int32_t(w * 64) + std::countr_zero(bits);
        if (i < vocab) f(i);
      }
    }
  };

  if (params_.temperature <= 0) {
    LOCKSTEP_CHECK(vocab > 0);
    if (allowed.empty()) {
      result.token = ArgmaxLowestId(values);
    } else {
      int32_t best = -1;
      float best_value = 0;
      for_each_allowed([&](int32_t i) {
        if (best < 0 || values[i] > best_value) {
          best = i;
          best_value = values[i];
        }
      });
      LOCKSTEP_CHECK_MSG(best >= 0, "the allowed-token mask is empty");
      result.token = best;
    }
  } else {
    candidates_.clear();
    if (params_.dynatemp_range > 0) {  // the temperature depends on the raw candidates: a second pass
      for_each_allowed([&](int32_t i) { candidates_.push_back({values[i], i}); });
      const float inv_t = 1.0f / Temperature();
      for (Candidate& c : candidates_) c.logit *= inv_t;  // the same product as values[i] * inv_t
    } else {
      const float inv_t = 1.0f / params_.temperature;
      for_each_allowed([&](int32_t i) { candidates_.push_back({values[i] * inv_t, i}); });
    }
    LOCKSTEP_CHECK_MSG(!candidates_.empty(), "the allowed-token mask is empty");
    if (params_.mirostat != 0) {
      result.token = Mirostat(vocab);
      if (params_.logprobs)
        result.logprob = TokenLogprobOf(logits, result.token, params_.top_logprobs, &result.top);
      return result;
    }
    auto better = [](const Candidate& a, const Candidate& b) { return Better(a, b); };
    size_t keep = candidates_.size();
    size_t sorted = 0;  // candidates_[0, sorted) are in order
    if (params_.top_k > 0 && size_t(params_.top_k) < keep) {
      keep = size_t(params_.top_k);
      std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), better);
      candidates_.resize(keep);
      sorted = keep;
    }
    // The further filters need every candidate in order; top_p and min_p alone a prefix, when that is enough.
    const bool further = params_.top_n_sigma > 0 || params_.typical_p < 1.0f || params_.xtc_probability > 0 ||
                         params_.min_keep > 1;
    if (further && sorted < keep) {
      std::sort(candidates_.begin(), candidates_.end(), better);
      sorted = keep;
    }
    if (params_.top_p < 1.0f || params_.min_p > 0.0f) {
      if (sorted < keep) {
        const size_t prefix = std::min(keep, kTopPPrefix);
        std::partial_sort(candidates_.begin(), candidates_.begin() + prefix, candidates_.end(), better);
        sorted = prefix;
      }
    }
    // Softmax over the kept candidates (max is the first one when sorted).
    float max_logit = -std::numeric_limits<float>::infinity();
    for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
    probs_.resize(candidates_.size());
    double sum = 0;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      probs_[i] = SoftmaxWeight(candidates_[i].logit - max_logit);
      sum += probs_[i];
    }
    size_t n = candidates_.size();
    const size_t min_keep = size_t(std::max(params_.min_keep, 1));
    if (further) {  // top-nσ, then typical_p: they may drop the most likely token, so the sums start again
      n = Typical(TopNSigma(n, min_keep), min_keep);
      candidates_.resize(n);
      probs_.resize(n);
      sorted = n;
      sum = 0;
      for (float p : probs_) sum += p;
    }
    if (params_.top_p < 1.0f) {
      double cum = 0;
      size_t cut = 0;
      for (; cut < sorted; ++cut) {
        cum += probs_[cut] / sum;
        if (cum >= params_.top_p) break;
      }
      if (cut == sorted && sorted < n) {  // the prefix was not enough: sort everything and redo
        std::sort(candidates_.begin(), candidates_.end(), better);
        for (size_t i = 0; i < n; ++i) probs_[i] = SoftmaxWeight(candidates_[i].logit - max_logit);
        sorted = n;
        cum = 0;
        for (cut = 0; cut < n; ++cut) {
          cum += probs_[cut] / sum;
          if (cum >= params_.top_p) break;
        }
      }
      n = std::min(n, std::max(cut + 1, min_keep));
    }
    if (params_.min_p > 0.0f) {
      // probs_ are relative to the max (1 at index 0 of the sorted prefix; after the further filters,
      // whatever the first one is).
      const float min_p = further ? params_.min_p * probs_[0] : params_.min_p;
      size_t m = 0;
      while (m < std::min(n, sorted) && probs_[m] >= min_p) ++m;
      if (m == sorted && sorted < n) {  // the sorted prefix all passed: sort the rest too
        std::sort(candidates_.begin(), candidates_.end(), better);
        for (size_t i = 0; i < candidates_.size(); ++i)
          probs_[i] = SoftmaxWeight(candidates_[i].logit - max_logit);
        sorted = candidates_.size();
        while (m < n && probs_[m] >= min_p) ++m;
      }
      n = std::max(min_keep, m);
    }
    candidates_.resize(n);
    probs_.resize(n);
    if (params_.xtc_probability > 0) {
      const size_t dropped = n - ExcludeTopChoices(n, min_keep);
      candidates_.erase(candidates_.begin(), candidates_.begin() + std::ptrdiff_t(dropped));
      probs_.erase(probs_.begin(), probs_.begin() + std::ptrdiff_t(dropped));
    }
    result.token = Draw();
  }
  if (params_.logprobs)
    result.logprob = TokenLogprobOf(logits, result.token, params_.top_logprobs, &result.top);
  return result;
}

size_t Sampler::TopNSigma(size_t n, size_t min_keep) const {
  if (params_.top_n_sigma <= 0 || n <= 1) return n;
  // Mean and (population) standard deviation of the candidates' logits, in double, in order.
  double mean = 0;
  for (size_t i = 0; i < n; ++i) mean += candidates_[i].logit;
  mean /= double(n);
  double variance = 0;
  for (size_t i = 0; i < n; ++i) variance += (candidates_[i].logit - mean) * (candidates_[i].logit - mean);
  const double floor = candidates_[0].logit - params_.top_n_sigma * std::sqrt(variance / double(n));
  size_t m = 0;
  while (m < n && candidates_[m].logit >= floor) ++m;
  return std::min(n, std::max(m, min_keep));
}

size_t Sampler::Typical(size_t n, size_t min_keep) {
  if (params_.typical_p >= 1.0f || n <= 1) return n;
  // Entropy of the candidates' distribution, then each one's distance |-log p - H| from it.
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += probs_[i];
  double entropy = 0;
  for (size_t i = 0; i < n; ++i) {
    const double p = probs_[i] / sum;
    if (p > 0) entropy -= p * std::log(p);
  }
  std::vector<std::pair<double, size_t>> order(n);  // (distance, index), the nearest first, ties in order
  for (size_t i = 0; i < n; ++i) {
    const double p = probs_[i] / sum;
    order[i] = {p > 0 ? std::fabs(-std::log(p) - entropy) : std::numeric_limits<double>::infinity(), i};
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  double cum = 0;
  size_t kept = 0;
  while (kept < n) {
    cum += probs_[order[kept].second] / sum;
    ++kept;
    if (cum >= params_.typical_p && kept >= min_keep) break;
  }
  // The kept candidates, back in their (logit) order.
  std::vector<bool> keep(n, false);
  for (size_t k = 0; k < kept; ++k) keep[order[k].second] = true;
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    candidates_[out] = candidates_[i];
    probs_[out] = probs_[i];
    ++out;
  }
  return out;
}

size_t Sampler::ExcludeTopChoices(size_t n, size_t min_keep) {
  if (params_.xtc_threshold > 0.5f || n < 2) return n;  // at most one token can be above a threshold > 0.5
  if (Uniform() >= params_.xtc_probability) return n;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += probs_[i];
  size_t above = 0;  // the candidates at or above the threshold: a prefix (they are in order)
  while (above < n && probs_[above] / sum >= params_.xtc_threshold) ++above;
  if (above < 2 || n - (above - 1) < min_keep) return n;
  return n - (above - 1);  // all but the least likely of them go
}

float Sampler::Temperature() const {
  if (candidates_.size() < 2) return params_.temperature;
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
  double sum = 0;
  for (const Candidate& c : candidates_) sum += SoftmaxWeight(c.logit - max_logit);
  double entropy = 0;
  for (const Candidate& c : candidates_) {
    const double p = SoftmaxWeight(c.logit - max_logit) / sum;
    if (p > 0) entropy -= p * std::log(p);
  }
  const double normalized = entropy / std::log(double(candidates_.size()));
  const double low = std::max(0.0, double(params_.temperature) - params_.dynatemp_range);
  const double high = double(params_.temperature) + params_.dynatemp_range;
  const double t =
      low + (high - low) * std::pow(std::clamp(normalized, 0.0, 1.0), double(params_.dynatemp_exponent));
  return float(std::max(t, 1e-6));  // 0 would divide by zero: near-greedy instead
}

int32_t Sampler::Mirostat(int32_t vocab) {
  std::sort(candidates_.begin(), candidates_.end(),
            [](const Candidate& a, const Candidate& b) { return Better(a, b); });
  const size_t n = candidates_.size();
  probs_.resize(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    probs_[i] = SoftmaxWeight(candidates_[i].logit - candidates_[0].logit);
    sum += probs_[i];
  }
  size_t keep = 1;
  if (params_.mirostat == 1) {
    // The Zipf exponent s of the 100 most likely tokens (least squares on log-ratios), then the k whose
    // expected surprise is mu (Basu et al. 2021, as llama.cpp computes it).
    const size_t m = std::min<size_t>(100, n);
    double sum_ti_bi = 0, sum_ti_sq = 0;
    for (size_t i = 0; i + 1 < m && probs_[i + 1] > 0; ++i) {
      const double t = std::log(double(i + 2) / double(i + 1));
      const double b = std::log(double(probs_[i]) / double(probs_[i + 1]));
      sum_ti_bi += t * b;
      sum_ti_sq += t * t;
    }
    const double s_hat = sum_ti_sq > 0 ? sum_ti_bi / sum_ti_sq : 1.0;
    const double epsilon_hat = s_hat - 1;
    const double k = epsilon_hat != 0 ? std::pow((epsilon_hat * std::pow(2.0, double(mu_))) /
                                                     (1 - std::pow(double(vocab), -epsilon_hat)),
                                                 1 / s_hat)
                                      : double(n);
    keep = std::isfinite(k) && k >= 1 ? size_t(std::min(k, double(n))) : 1;
  } else {
    while (keep < n && -std::log2(probs_[keep] / sum) <= mu_) ++keep;
  }
  candidates_.resize(keep);
  probs_.resize(keep);
  const int32_t token = Draw();
  double kept = 0;
  for (float p : probs_) kept += p;
  size_t drawn = 0;
  while (candidates_[drawn].token != token) ++drawn;
  const double surprise = -std::log2(probs_[drawn] / kept);
  mu_ -= params_.mirostat_eta * float(surprise - params_.mirostat_tau);
  return token;
}

double Sampler::Uniform() {
  return double(rng_() >> 11) * (1.0 / 9007199254740992.0);  // 53 random bits -> [0, 1)
}

int32_t Sampler::Draw() {
  double total = 0;
  for (float p : probs_) total += p;
  const double u = Uniform() * total;
  double cum = 0;
  for (size_t i = 0; i < probs_.size(); ++i) {
    cum += probs_[i];
    if (u < cum) return candidates_[i].token;
  }
  return candidates_.back().token;
}

float TokenLogprobOf(std::span<const float> logits, int32_t token, int32_t top_n,
                     std::vector<TokenLogprob>* top) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (float l : logits) max_logit = std::max(max_logit, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - max_logit);
  const double log_z = max_logit + std::log(sum);
  const size_t n = std::min(logits.size(), size_t(std::max(top_n, 0)));
  if (top != nullptr) top->clear();
  if (n > 0 && top != nullptr) {
    // The n largest by (logit descending, id ascending): ids come in ascending order, so an equal logit
    // never displaces one already kept.
    const auto before = [](const TokenLogprob& a, const TokenLogprob& b) {
      return a.logprob > b.logprob || (a.logprob == b.logprob && a.token < b.token);
    };
    for (size_t i = 0; i < logits.size(); ++i) {
      const TokenLogprob candidate{int32_t(i), logits[i]};
      if (top->size() == n && !before(candidate, top->back())) continue;
      if (top->size() == n) top->pop_back();
      top->insert(std::upper_bound(top->begin(), top->end(), candidate, before), candidate);
    }
    for (TokenLogprob& t : *top) t.logprob = static_cast<float>(t.logprob - log_z);
  }
  return static_cast<float>(logits[size_t(token)] - log_z);
}

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (std::string& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

StopMatcher::Output StopMatcher::Push(std::string_view delta) {
  Output out;
  if (stopped_) return out;
  held_.append(delta);
  // Earliest stop string (the longest when two start at the same place).
  size_t best = std::string::npos;
  const std::string* best_stop = nullptr;
  for (const std::string& s : stops_) {
    const size_t pos = held_.find(s);
    if (pos == std::string::npos) continue;
    if (pos < best || (pos == best && s.size() > best_stop->size())) {
      best = pos;
      best_stop = &s;
    }
  }
  if (best_stop != nullptr) {
    out.text = held_.substr(0, best);
    out.stopped = true;
    out.matched = *best_stop;
    out.tail = held_.substr(best);
    stopped_ = true;
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t len = std::min(s.size() - 1, held_.size()); len > hold; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  out.text = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopMatcher::Flush() {
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace lockstep
