#include "server/request_guard.h"

#include <algorithm>
#include <cctype>

#include "base/excerpt.h"

namespace lockstep::server {

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The host name of a Host header value or an origin's authority: "Example.com:8080" → "example.com",
// "[::1]:80" → "::1".
std::string HostName(const std::string& authority) {
  std::string a = Lower(authority);
  if (!a.empty() && a.front() == '[') {
    const size_t close = a.find(']');
    return close == std::string::npos ? a : a.substr(1, close - 1);
  }
  return a.substr(0, a.find(':'));
}

// "http://host:port" → "host:port" (lower-case, no trailing slash); "" when it has no scheme.
std::string OriginAuthority(const std::string& origin) {
  const size_t scheme = origin.find("://");
  if (scheme == std::string::npos) return "";
  std::string rest = Lower(origin.substr(scheme + 3));
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  return rest;
}

std::string Normalized(std::string origin) {
  origin = Lower(std::move(origin));
  while (!origin.empty() && origin.back() == '/') origin.pop_back();
  return origin;
}

ApiError Forbidden(const std::string& message) { return ApiError::Forbidden(message); }

}  // namespace

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  // Hand-written: OpenSSL's CRYPTO_memcmp needs equal lengths and the server does not link OpenSSL. Every
  // byte of the longer string is visited whatever the contents.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

bool IsLoopbackHost(const std::string& host) {
  const std::string h = Lower(host);
  if (h == "localhost" || h == "::1" || h == "0:0:0:0:0:0:0:1") return true;
  if (h.size() > 10 && h.compare(h.size() - 10, 10, ".localhost") == 0) return true;
  if (h.rfind("127.", 0) == 0) {
    return std::all_of(h.begin(), h.end(),
                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
  }
  return false;
}

RequestGuard::RequestGuard(GuardOptions options) : options_(std::move(options)) {
  for (std::string& o : options_.allowed_origins) o = Normalized(o);
}

bool RequestGuard::OriginAllowed(const std::string& origin, const std::string& host) const {
  const std::string o = Normalized(origin);
  for (const std::string& allowed : options_.allowed_origins) {
    if (allowed == "*" || allowed == o) return true;
  }
  // The server's own pages (the dashboard): the origin names the host the request was sent to.
  const std::string authority = OriginAuthority(o);
  return !authority.empty() && !host.empty() && authority == Lower(host);
}

bool RequestGuard::HostAllowed(const std::string& host) const {
  if (!options_.loopback_only || host.empty()) return true;
  const std::string name = HostName(host);
  if (IsLoopbackHost(name)) return true;
  for (const std::string& allowed : options_.allowed_origins) {
    if (allowed != "*" && HostName(OriginAuthority(allowed)) == name) return true;
  }
  return false;
}

RequestGuard::Verdict RequestGuard::Check(const HttpRequest& request, bool needs_key) const {
  Verdict verdict;
  const std::string host = request.Header("host");
  if (!HostAllowed(host)) {
    verdict.error = Forbidden("Host '" + Excerpt(host) +
                              "' is not this server: a server on a loopback address answers requests for "
                              "localhost only (DNS rebinding protection; --allowed-origins adds hosts)");
    return verdict;
  }
  const std::string origin = request.Header("origin");
  if (!origin.empty()) {
    if (!OriginAllowed(origin, host)) {
      verdict.error = Forbidden("Origin '" + Excerpt(origin) +
                                "' is not allowed (start the server with --allowed-origins to allow it)");
      return verdict;
    }
    verdict.cors_headers = {{"Access-Control-Allow-Origin", origin}, {"Vary", "Origin"}};
    if (request.method == "OPTIONS" && !request.Header("access-control-request-method").empty()) {
      verdict.preflight = true;
      const std::string asked = request.Header("access-control-request-headers");
      verdict.cors_headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      verdict.cors_headers.emplace_back("Access-Control-Allow-Headers",
                                        asked.empty() ? "Authorization, Content-Type, X-Api-Key" : asked);
      verdict.cors_headers.emplace_back("Access-Control-Max-Age", "600");
      return verdict;  // preflights carry no credentials
    }
  }
  if (needs_key && !options_.api_key.empty()) {
    const std::string auth = request.Header("authorization");
    std::string key = request.Header("x-api-key");
    if (auth.size() > 7 && (auth.compare(0, 7, "Bearer ") == 0 || auth.compare(0, 7, "bearer ") == 0)) {
      key = auth.substr(7);
    }
    if (!ConstantTimeEquals(key, options_.api_key)) {
      verdict.error = ApiError{
          Status(StatusCode::kUnauthenticated, "missing or wrong API key (send Authorization: Bearer KEY)"),
          ""};
    }
  }
  return verdict;
}

}  // namespace lockstep::server
