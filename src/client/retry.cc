#include "client/retry.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>

namespace lockstep::client {

bool IsRetryableStatus(int status) {
  return status == 408 || status == 429 || status == 502 || status == 503 || status == 504;
}

std::optional<double> ParseRetryAfter(const std::string& value, std::chrono::system_clock::time_point now) {
  size_t b = 0, e = value.size();
  while (b < e && std::isspace(static_cast<unsigned char>(value[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(value[e - 1]))) --e;
  if (b == e) return std::nullopt;
  const std::string v = value.substr(b, e - b);
  if (std::all_of(v.begin(), v.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (v.size() > 9) return std::nullopt;
    return static_cast<double>(std::stol(v));
  }
  std::tm tm{};
  const char* end = strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const std::time_t when = timegm(&tm);
  const double delta = std::difftime(when, std::chrono::system_clock::to_time_t(now));
  return std::max(0.0, delta);
}

double RetryDelaySeconds(const RetryPolicy& policy, int retry, std::optional<double> retry_after,
                         std::mt19937_64& rng) {
  if (retry_after.has_value()) {
    const double wait = std::clamp(*retry_after, 0.0, policy.max_retry_after_s);
    std::uniform_real_distribution<double> spread(0.0, std::max(wait / 2, 0.5));
    return wait + spread(rng);
  }
  const double exp_delay =
      std::min(policy.max_delay_s, policy.base_delay_s * std::ldexp(1.0, std::min(retry, 30)));
  std::uniform_real_distribution<double> jitter(0.0, exp_delay / 2);
  return exp_delay / 2 + jitter(rng);
}

}  // namespace lockstep::client
