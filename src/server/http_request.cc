#include "server/http_request.h"

#include <boost/asio/buffer.hpp>
#include <cctype>

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

ProtocolError BodyTooLarge(const HttpLimits& limits) {
  return {413, "request body larger than " + std::to_string(limits.max_body_bytes) + " bytes",
          "body_too_large"};
}

}  // namespace

void ConfigureParser(RequestParser& parser, const HttpLimits& limits) {
  parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
  parser.body_limit(limits.max_body_bytes);
}

std::optional<ProtocolError> CheckRequestHeader(const RequestParser& parser, const HttpLimits& limits) {
  const auto& req = parser.get();
  if (req.version() != 10 && req.version() != 11) {
    return ProtocolError{505, "only HTTP/1.0 and HTTP/1.1 are supported", "http_version_not_supported"};
  }
  int lengths = 0, codings = 0;
  for (const auto& field : req) {
    if (field.name() == http::field::content_length) {
      ++lengths;
      // Beast accepts a list of equal lengths ("4, 4"); a proxy in front may not read it the same way.
      for (char c : field.value()) {
        if (!std::isdigit(static_cast<unsigned char>(c))) {
          return ProtocolError{400, "Content-Length must be one decimal number", "bad_request"};
        }
      }
    }
    if (field.name() == http::field::transfer_encoding) ++codings;
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
  if (ec == http::error::bad_version) {
    return ProtocolError{505, "only HTTP/1.0 and HTTP/1.1 are supported", "http_version_not_supported"};
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
  request.path = request.target.substr(0, request.target.find('?'));
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
