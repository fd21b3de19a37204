// RequestGuard: who may use the server, checked before any route runs (routes.cc).
//
// - API key (--api-key): every route but /health needs `Authorization: Bearer KEY` (or `x-api-key: KEY`),
//   compared in constant time.
// - Origin (--allowed-origins): a request carrying an `Origin` header (browsers send one on every
//   cross-origin request and on same-origin POSTs) is refused with 403 unless the origin is the server's own
//   (same scheme-less host:port as the Host header) or listed; listed origins get CORS headers
//   (Access-Control-Allow-Origin, Vary: Origin; preflight OPTIONS answered 204 with the allowed methods and
//   headers). "*" allows every origin. Requests without Origin (curl, SDKs) are unaffected. So a web page
//   cannot POST blind "simple" requests to a keyless local server.
// - Host (loopback binds only): when the server listens on a loopback address, the Host header must name a
//   loopback host (localhost, *.localhost, 127.x.y.z, [::1]) or one of the allowed origins' hosts, else 403:
//   a DNS-rebinding page (Host: evil.example) cannot read answers. A server bound to another address accepts
//   any Host (users reach it by names the server cannot know).
// Immutable after construction; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/http_request.h"

namespace lockstep::server {

// Equal strings, compared in time that depends on their lengths only (not on where they differ).
bool ConstantTimeEquals(const std::string& a, const std::string& b);

struct GuardOptions {
  std::string api_key;                       // "" = no key needed
  std::vector<std::string> allowed_origins;  // "scheme://host[:port]" or "*"
  bool loopback_only = true;                 // the server is bound to a loopback address: check Host
};

// True for loopback addresses and names ("127.0.0.1", "::1", "localhost").
bool IsLoopbackHost(const std::string& host);

class RequestGuard {
 public:
  explicit RequestGuard(GuardOptions options);

  struct Verdict {
    std::optional<ApiError> error;  // refuse with this (401/403)
    HeaderList cors_headers;        // add these to the response
    bool preflight = false;         // an allowed CORS preflight: answer 204 with cors_headers, run no route
  };
  // Checks one request. `needs_key` is false for routes open without the API key (/health).
  Verdict Check(const HttpRequest& request, bool needs_key) const;
  // An API key is configured.
  bool needs_key() const { return !options_.api_key.empty(); }

 private:
  bool OriginAllowed(const std::string& origin, const std::string& host) const;
  bool HostAllowed(const std::string& host) const;

  GuardOptions options_;
};

}  // namespace lockstep::server
