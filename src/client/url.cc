#include "client/url.h"

#include <cctype>
#include <charconv>

namespace lockstep::client {
namespace {

int DefaultPort(const std::string& scheme) { return scheme == "https" ? 443 : 80; }

}  // namespace

std::string Url::HostHeader() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (port != DefaultPort(scheme)) h += ":" + std::to_string(port);
  return h;
}

std::string Url::ToString() const { return scheme + "://" + HostHeader() + path; }

Url Url::WithPath(const std::string& suffix) const {
  Url out = *this;
  std::string base = path;
  std::string query;
  if (const size_t q = base.find('?'); q != std::string::npos) {
    query = base.substr(q);
    base.resize(q);
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string tail = suffix;
  if (tail.empty() || tail.front() != '/') tail = "/" + tail;
  out.path = base + tail + query;
  return out;
}

Result<Url> ParseUrl(const std::string& text) {
  Url url;
  const size_t sep = text.find("://");
  if (sep == std::string::npos) {
    return InvalidArgument("URL '" + text + "' has no scheme (expected http:// or https://)");
  }
  for (size_t i = 0; i < sep; ++i)
    url.scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  if (url.scheme != "http" && url.scheme != "https") {
    return InvalidArgument("URL '" + text + "' has unsupported scheme '" + url.scheme +
                           "' (expected http or https)");
  }
  const size_t auth_begin = sep + 3;
  size_t auth_end = text.find_first_of("/?#", auth_begin);
  if (auth_end == std::string::npos) auth_end = text.size();
  std::string authority = text.substr(auth_begin, auth_end - auth_begin);
  if (authority.find('@') != std::string::npos) {
    return InvalidArgument("URL '" + text + "': user info in URLs is not supported (use --api-key)");
  }
  std::string port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) return InvalidArgument("URL '" + text + "': unterminated IPv6 literal");
    url.host = authority.substr(1, close - 1);
    std::string rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return InvalidArgument("URL '" + text + "': junk after IPv6 literal");
      port_text = rest.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    if (colon != std::string::npos) {
      url.host = authority.substr(0, colon);
      port_text = authority.substr(colon + 1);
    } else {
      url.host = authority;
    }
  }
  if (url.host.empty()) return InvalidArgument("URL '" + text + "' has no host");
  for (char c : url.host) {
    if (std::isspace(static_cast<unsigned char>(c)))
      return InvalidArgument("URL '" + text + "': space in host");
  }
  url.port = DefaultPort(url.scheme);
  if (!port_text.empty()) {
    int port = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port < 1 || port > 65535) {
      return InvalidArgument("URL '" + text + "': bad port '" + port_text + "' (expected 1-65535)");
    }
    url.port = port;
  }
  std::string path = text.substr(auth_end);
  if (const size_t hash = path.find('#'); hash != std::string::npos) path.resize(hash);
  if (path.empty() || path.front() == '?') path = "/" + path;
  for (char c : path) {
    if (static_cast<unsigned char>(c) <= 0x20)
      return InvalidArgument("URL '" + text + "': space or control character in path");
  }
  url.path = path;
  return url;
}

Url ServerRoot(const Url& api_base) {
  Url root = api_base;
  std::string& path = root.path;
  if (const size_t q = path.find('?'); q != std::string::npos) path.resize(q);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.size() >= 3 && path.compare(path.size() - 3, 3, "/v1") == 0) path.resize(path.size() - 3);
  if (path.empty()) path = "/";
  return root;
}

Result<Url> ResolveLocation(const Url& base, const std::string& location) {
  if (location.find("://") != std::string::npos) return ParseUrl(location);
  if (location.rfind("//", 0) == 0) return ParseUrl(base.scheme + ":" + location);
  if (location.empty()) return InvalidArgument("empty Location header in redirect");
  Url out = base;
  if (location.front() == '/') {
    out.path = location;
  } else {
    std::string dir = base.path.substr(0, base.path.find('?'));
    dir.resize(dir.rfind('/') + 1);
    out.path = dir + location;
  }
  return out;
}

}  // namespace lockstep::client
