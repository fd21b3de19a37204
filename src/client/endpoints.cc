#include "client/endpoints.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "base/file_util.h"

namespace lockstep::client {

namespace {

Clock::duration ToDuration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

Result<std::unique_ptr<EndpointSet>> EndpointSet::Create(std::vector<Url> urls, RetryPolicy backoff,
                                                         uint64_t seed) {
  if (urls.empty()) return InvalidArgument("no server URL given");
  std::vector<Endpoint> endpoints;
  for (Url& u : urls) endpoints.push_back(Endpoint{std::move(u)});
  return std::unique_ptr<EndpointSet>(new EndpointSet(std::move(endpoints), backoff, seed));
}

EndpointSet::Choice EndpointSet::Pick(const std::vector<size_t>& tried, Clock::time_point now) {
  std::lock_guard lock(mu_);
  const size_t n = endpoints_.size();
  const size_t start = rotate_++ % n;
  // Rank: up before down; untried before tried; fewer in flight; then the rotating order.
  size_t best = n;
  auto better = [&](size_t a, size_t b) {  // is a better than b?
    const bool a_up = endpoints_[a].down_until <= now, b_up = endpoints_[b].down_until <= now;
    if (a_up != b_up) return a_up;
    if (!a_up) return endpoints_[a].down_until < endpoints_[b].down_until;
    const bool a_new = std::find(tried.begin(), tried.end(), a) == tried.end();
    const bool b_new = std::find(tried.begin(), tried.end(), b) == tried.end();
    if (a_new != b_new) return a_new;
    return endpoints_[a].in_flight < endpoints_[b].in_flight;
  };
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (start + k) % n;
    if (best == n || better(i, best)) best = i;
  }
  Choice choice{best, 0};
  const Endpoint& e = endpoints_[best];
  if (e.down_until > now) {
    const double remaining = std::chrono::duration<double>(e.down_until - now).count();
    std::uniform_real_distribution<double> jitter(0.0, remaining / 2);
    choice.wait_s = remaining + jitter(rng_);
  }
  return choice;
}

void EndpointSet::Begin(size_t i) {
  std::lock_guard lock(mu_);
  ++endpoints_[i].in_flight;
}

void EndpointSet::End(size_t i) {
  std::lock_guard lock(mu_);
  --endpoints_[i].in_flight;
}

void EndpointSet::MarkDown(size_t i, std::optional<double> retry_after, Clock::time_point now) {
  std::lock_guard lock(mu_);
  Endpoint& e = endpoints_[i];
  const bool already_down = e.down_until > now;
  if (!already_down) ++e.failures;
  // A Retry-After is kept as given: Pick() adds the jitter when it sends a request there.
  const double delay = retry_after
                           ? std::clamp(*retry_after, 0.0, backoff_.max_retry_after_s)
                           : RetryDelaySeconds(backoff_, std::max(0, e.failures - 1), std::nullopt, rng_);
  e.down_until = std::max(e.down_until, now + ToDuration(delay));
}

void EndpointSet::MarkUp(size_t i) {
  std::lock_guard lock(mu_);
  endpoints_[i].failures = 0;
  endpoints_[i].down_until = Clock::time_point{};
}

int EndpointSet::in_flight(size_t i) const {
  std::lock_guard lock(mu_);
  return endpoints_[i].in_flight;
}

bool EndpointSet::down(size_t i, Clock::time_point now) const {
  std::lock_guard lock(mu_);
  return endpoints_[i].down_until > now;
}

Result<std::vector<std::string>> ReadUrlFile(const std::string& path) {
  LOCKSTEP_ASSIGN_OR_RETURN(const std::string text, ReadFlagFile(path, "--url-file"));
  std::istringstream in(text);
  std::vector<std::string> urls;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    const size_t e = line.find_first_of(" \t\r", b);
    std::string url = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
    if (auto parsed = ParseUrl(url); !parsed.ok()) {
      return InvalidArgument(path + ":" + std::to_string(number) + ": " + parsed.status().message());
    }
    urls.push_back(std::move(url));
  }
  if (urls.empty()) return InvalidArgument("--url-file: '" + path + "' lists no URL");
  return urls;
}

}  // namespace lockstep::client
