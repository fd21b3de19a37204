// EndpointSet: the servers (replicas of one model) a client spreads its requests over — a repeated --url or a
// file of URLs. Pick() chooses, among the endpoints not in backoff, the one with the fewest requests this
// client has in flight there (ties broken by a rotating start, so equal endpoints take turns), preferring
// endpoints the request has not tried yet. An endpoint that refused a connection or did not accept it within
// the connect timeout, broke off a response or answered a retryable status (503 draining or queue full, 429,
// 502, 504) is put in backoff by MarkDown() — the server's Retry-After if it gave one, else exponential
// backoff with jitter over its consecutive failures — and skipped until it ends; MarkUp() (a success) clears
// it. A failure reported while the endpoint is already in backoff (many requests failing at once) extends the
// backoff but does not count as another consecutive failure. When every endpoint is in backoff, Pick() names
// the one whose backoff ends first and how long to wait, plus a per-call jitter so that waiting requests do
// not return all at once.
//
// Thread-safe (one mutex); times are passed in so that tests control them. Errors: Create() rejects an empty
// list.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/http_connection.h"
#include "client/retry.h"
#include "client/url.h"

namespace lockstep::client {

class EndpointSet {
 public:
  // `backoff` gives the delays (base, cap, Retry-After clamp); its max_retries is not used here.
  static Result<std::unique_ptr<EndpointSet>> Create(std::vector<Url> urls, RetryPolicy backoff,
                                                     uint64_t seed);

  struct Choice {
    size_t index = 0;
    double wait_s = 0;  // > 0 when every endpoint is in backoff: wait this long before using `index`
  };
  // The endpoint for the next attempt of a request that has already tried `tried` (may be empty).
  Choice Pick(const std::vector<size_t>& tried, Clock::time_point now = Clock::now());

  // A request starts / ends on endpoint i (the in-flight count that Pick() balances).
  void Begin(size_t i);
  void End(size_t i);
  // Endpoint i failed in a way worth avoiding it for a while (see above).
  void MarkDown(size_t i, std::optional<double> retry_after, Clock::time_point now = Clock::now());
  // Endpoint i answered: its backoff and failure count are cleared.
  void MarkUp(size_t i);

  size_t size() const { return endpoints_.size(); }
  const Url& url(size_t i) const { return endpoints_[i].url; }
  int in_flight(size_t i) const;
  // True while endpoint i is in backoff at `now`.
  bool down(size_t i, Clock::time_point now = Clock::now()) const;

 private:
  struct Endpoint {
    Url url;
    int in_flight = 0;
    int failures = 0;  // consecutive, counted once per backoff
    Clock::time_point down_until{};
  };
  EndpointSet(std::vector<Endpoint> endpoints, RetryPolicy backoff, uint64_t seed)
      : endpoints_(std::move(endpoints)), backoff_(backoff), rng_(seed) {}

  mutable std::mutex mu_;
  std::vector<Endpoint> endpoints_;
  RetryPolicy backoff_;
  std::mt19937_64 rng_;
  size_t rotate_ = 0;  // where the tie-break scan starts; advances on every Pick
};

// Reads a file of endpoint URLs: one per line; blank lines and lines starting with '#' are skipped, and so is
// what follows whitespace on a line. Errors name the file and the line.
Result<std::vector<std::string>> ReadUrlFile(const std::string& path);

}  // namespace lockstep::client
