#include "server/http_request.h"

#include <arpa/inet.h>

#include <boost/asio/buffer.hpp>
#include <cctype>
#include <cstdio>

#include "base/excerpt.h"

namespace lockstep::server {

namespace http = boost::beast::http;

std::string HttpRequest::Header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return "";
}

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

ProtocolError BodyTooLarge(const HttpLimits& limits) {
  return {413, "request body larger than " + std::to_string(limits.max_body_bytes) + " bytes",
          "body_too_large"};
}

bool IsUnreservedOrSubDelim(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("-._~!$&'()*+,;=").find(c) != std::string_view::npos;
}

// RFC 3986 §3.2.2 IP-literal: an IPv6 address, or IPvFuture ("v" 1*HEXDIG "." 1*(unreserved / sub-delims /
// ":")).
bool IsIpLiteral(std::string_view text) {
  if (!text.empty() && (text.front() == 'v' || text.front() == 'V')) {
    const size_t dot = text.find('.');
    if (dot == std::string_view::npos || dot < 2 || dot + 1 == text.size()) return false;
    for (size_t i = 1; i < dot; ++i) {
      if (!std::isxdigit(static_cast<unsigned char>(text[i]))) return false;
    }
    for (const char c : text.substr(dot + 1)) {
      if (c != ':' && !IsUnreservedOrSubDelim(c)) return false;
    }
    return true;
  }
  in6_addr address{};
  return ::inet_pton(AF_INET6, std::string(text).c_str(), &address) == 1;
}

// What is wrong with a Host header value, "" when nothing: RFC 9112 §3.2 takes RFC 3986's uri-host [":"
// port], a host being a reg-name (which covers IPv4 addresses), or an IPv6 address in brackets. An empty
// value is valid (a target without an authority); an empty host before a port is not (RFC 9110 §4.2.1).
std::string HostHeaderProblem(std::string_view value) {
  if (value.empty()) return "";
  std::string_view port;
  if (value.front() == '[') {
    const size_t close = value.find(']');
    if (close == std::string_view::npos) return "the '[' of an IPv6 address has no ']'";
    if (!IsIpLiteral(value.substr(1, close - 1))) return "the host in [ ] is not an IPv6 address";
    const std::string_view rest = value.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return "only :PORT may follow the ']'";
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const size_t colon = value.find(':');
    const std::string_view name = value.substr(0, colon);
    if (name.empty()) return "the host name is empty";
    for (size_t i = 0; i < name.size(); ++i) {
      if (IsUnreservedOrSubDelim(name[i])) continue;
      if (name[i] == '%' && i + 2 < name.size() && HexDigit(name[i + 1]) >= 0 && HexDigit(name[i + 2]) >= 0) {
        i += 2;
        continue;
      }
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(name[i]));
      return "byte " + std::string(byte) + " at offset " + std::to_string(i) +
             " is not allowed in a host name (letters, digits, -._~!$&'()*+,;= and %XX)";
    }
    if (colon != std::string_view::npos) port = value.substr(colon + 1);
  }
  for (const char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return "the port after ':' must be digits";
  }
  return "";
}

}  // namespace

std::string PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (plus_is_space && text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && HexDigit(text[i + 1]) >= 0 &&
               HexDigit(text[i + 2]) >= 0) {
      out += static_cast<char>(HexDigit(text[i + 1]) * 16 + HexDigit(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string TargetPath(std::string_view target) {
  if (const size_t scheme = target.find("://");
      scheme != std::string_view::npos && !target.empty() && target.front() != '/') {
    const size_t path = target.find('/', scheme + 3);
    target = path == std::string_view::npos ? std::string_view("/") : target.substr(path);
  }
  target = target.substr(0, target.find('?'));
  return PercentDecode(target, /*plus_is_space=*/false);
}

void ConfigureParser(RequestParser& parser, const HttpLimits& limits) {
  parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
  parser.body_limit(limits.max_body_bytes);
}

std::optional<ProtocolError> CheckRequestHeader(const RequestParser& parser, const HttpLimits& limits) {
  const auto& req = parser.get();
  if (req.version() != 10 && req.version() != 11) {
    return ProtocolError{505, "only HTTP/1.0 and HTTP/1.1 are supported", "http_version_not_supported"};
  }
  int lengths = 0, codings = 0, hosts = 0;
  std::string host_problem;  // of the first Host
  for (const auto& field : req) {
    if (field.name() == http::field::host && hosts++ == 0) {
      const std::string_view host(field.value().data(), field.value().size());
      if (std::string why = HostHeaderProblem(host); !why.empty()) {
        host_problem = "invalid Host header '" + Excerpt(host) + "': " + why + "; expected host[:port]";
      }
    }
    if (field.name() == http::field::content_length) {
      ++lengths;
      // Beast accepts a list of equal lengths ("4, 4"); a proxy in front may not read it the same way.
      for (char c : field.value()) {
        if (!std::isdigit(static_cast<unsigned char>(c))) {
          return ProtocolError{400, "Content-Length must be one decimal number", "bad_request"};
        }
      }
    }
    if (field.name() == http::field::transfer_encoding) {
      ++codings;
      // Only "chunked" alone: Beast frames "gzip, chunked" by its last coding and would hand on the
      // compressed bytes as the body (RFC 9112 §6.1: a coding the server does not know gets 501).
      if (Lower(Trim(std::string_view(field.value().data(), field.value().size()))) != "chunked") {
        return ProtocolError{501, "Transfer-Encoding other than \"chunked\" is not supported",
                             "not_implemented"};
      }
    }
  }
  // Beast accepts repeated equal Content-Lengths; a proxy in front may not agree on which one counts.
  if (lengths > 1) return ProtocolError{400, "more than one Content-Length header", "bad_request"};
  if (codings > 0 && !parser.chunked()) {
    return ProtocolError{501, "Transfer-Encoding other than \"chunked\" is not supported", "not_implemented"};
  }
  if (codings > 0 && req.version() < 11) {
    return ProtocolError{400, "Transfer-Encoding in an HTTP/1.0 request", "bad_request"};
  }
  const auto length = parser.content_length();
  if (length && *length > limits.max_body_bytes) return BodyTooLarge(limits);
  // RFC 9112 §3.2: 400 for an HTTP/1.1 request without Host, and for any request with more than one (which
  // the Host check against DNS rebinding, request_guard.h, would otherwise read as its first).
  if (hosts > 1) return ProtocolError{400, "more than one Host header", "bad_request"};
  if (hosts == 0 && req.version() >= 11) {
    return ProtocolError{400, "an HTTP/1.1 request needs a Host header", "bad_request"};
  }
  if (!host_problem.empty()) return ProtocolError{400, host_problem, "bad_request"};
  return std::nullopt;
}

std::optional<ProtocolError> ProtocolErrorFor(const boost::system::error_code& ec, const HttpLimits& limits) {
  if (ec == http::error::body_limit) return BodyTooLarge(limits);
  if (ec == http::error::header_limit) {
    return ProtocolError{431,
                         "request headers larger than " + std::to_string(limits.max_header_bytes) + " bytes",
                         "headers_too_large"};
  }
  if (ec.category() != http::make_error_code(http::error::bad_method).category()) return std::nullopt;
  if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
      ec == http::error::need_more || ec == http::error::need_buffer) {
    return std::nullopt;  // the client went away (mid-request, or between requests)
  }
  if (ec == http::error::bad_version) {  // also a request line ending in a bare LF, which Beast refuses
    return ProtocolError{
        505, "only HTTP/1.0 and HTTP/1.1 are supported (request line: METHOD TARGET HTTP/1.x CRLF)",
        "http_version_not_supported"};
  }
  if (ec == http::error::bad_content_length) {
    return ProtocolError{400, "invalid or conflicting Content-Length", "bad_request"};
  }
  if (ec == http::error::bad_transfer_encoding) {
    return ProtocolError{400, "invalid Transfer-Encoding (repeated, or together with Content-Length)",
                         "bad_request"};
  }
  return ProtocolError{400, "malformed HTTP request: " + ec.message(), "bad_request"};
}

HttpRequest ToHttpRequest(RequestParser& parser) {
  auto msg = parser.release();
  HttpRequest request;
  request.method = std::string(msg.method_string());
  request.target = std::string(msg.target());
  request.path = TargetPath(request.target);
  request.version = msg.version() == 10 ? 10 : 11;
  for (const auto& field : msg) {
    request.headers.emplace_back(Lower(std::string(field.name_string())), std::string(field.value()));
  }
  request.body = std::move(msg.body());
  return request;
}

BufferParse ParseRequests(std::string_view bytes, const HttpLimits& limits) {
  BufferParse out;
  while (!bytes.empty()) {
    RequestParser parser;
    ConfigureParser(parser, limits);
    parser.eager(false);  // stop after the header, as a connection does, for the framing checks
    boost::system::error_code ec;
    bool checked = false;
    while (!parser.is_done()) {
      if (bytes.empty()) {  // the bytes end inside this request
        out.incomplete = true;
        return out;
      }
      const size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
      bytes.remove_prefix(used);
      if (ec == http::error::need_more) {
        ec = {};
      } else if (ec) {
        out.error = ProtocolErrorFor(ec, limits);
        if (!out.error) out.incomplete = true;
        return out;
      }
      if (parser.is_header_done() && !checked) {
        checked = true;
        if (auto error = CheckRequestHeader(parser, limits)) {
          out.error = std::move(error);
          return out;
        }
        parser.eager(true);
        continue;
      }
      if (used == 0 && !parser.is_done()) {  // more bytes are needed than there are
        out.incomplete = true;
        return out;
      }
    }
    out.requests.push_back(ToHttpRequest(parser));
  }
  return out;
}

}  // namespace lockstep::server
