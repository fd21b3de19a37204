// Retry policy for HTTP requests: which failures are retried (connection errors, 429, 502, 503, 504), how
// long to wait (exponential backoff with jitter, or the server's Retry-After plus jitter when it gives one),
// and parsing of Retry-After (delta-seconds or an HTTP date). Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <random>
#include <string>

namespace lockstep::client {

struct RetryPolicy {
  int max_retries = 3;        // attempts after the first
  double base_delay_s = 0.5;  // backoff before retry k (0-based) is base * 2^k, capped at max_delay_s
  double max_delay_s = 20.0;
  double max_retry_after_s = 60;  // a Retry-After longer than this is clamped to it
};

// True for the HTTP statuses worth retrying: 408, 429, 502, 503, 504.
bool IsRetryableStatus(int status);

// Parses a Retry-After value: "120" (seconds) or an IMF-fixdate ("Wed, 21 Oct 2015 07:28:00 GMT") relative to
// `now`. nullopt when absent or malformed.
std::optional<double> ParseRetryAfter(
    const std::string& value, std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// Seconds to wait before retry number `retry` (0 = the first retry). With a Retry-After r (clamped to
// policy.max_retry_after_s), at least r plus a random part up to max(r/2, 0.5 s), so that clients refused
// together do not all come back at the same instant; otherwise "equal jitter" backoff: half the exponential
// delay plus a random part up to the other half.
double RetryDelaySeconds(const RetryPolicy& policy, int retry, std::optional<double> retry_after,
                         std::mt19937_64& rng);

}  // namespace lockstep::client
