// Url: a parsed http(s) URL (scheme, host, port, path prefix). ParseUrl validates input from flags and
// Location headers and never throws. Value type; thread-safe to copy.
#pragma once

#include <string>

#include "base/status.h"

namespace lockstep::client {

struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;    // without brackets for IPv6 literals
  int port = 0;        // explicit or the scheme's default
  std::string path;    // starts with '/' (a bare host gives "/"); may carry "?query"

  bool tls() const { return scheme == "https"; }
  // "host" or "host:port" when the port is not the scheme's default (the Host header value).
  std::string HostHeader() const;
  // scheme://host[:port]path
  std::string ToString() const;
  // This URL with `suffix` appended to the path, with exactly one '/' between them ("/v1" + "/models").
  Url WithPath(const std::string& suffix) const;
};

// Parses "http://host[:port][/path]" or "https://...". A URL without a scheme is rejected with a message.
Result<Url> ParseUrl(const std::string& text);

// The server root of an API URL: its path without the query, trailing slashes and a final "/v1"
// ("http://h:8080/v1" and "http://h:8080/v1/" → "http://h:8080/"), where routes such as /tokenize and
// /advisor live.
Url ServerRoot(const Url& api_base);

// Resolves a Location header value (absolute, scheme-relative "//host/x", or absolute path "/x") against
// `base`.
Result<Url> ResolveLocation(const Url& base, const std::string& location);

}  // namespace lockstep::client
