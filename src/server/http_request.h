// HttpRequest and the request-parsing steps every connection runs, driven from a buffer too (ParseRequests)
// so that tests and the fuzz target exercise exactly what a connection does, without sockets.
//
// Parsing is Boost.Beast's request_parser with our limits (ConfigureParser), then the framing checks Beast
// leaves to us (CheckRequestHeader: one Content-Length at most, no Transfer-Encoding but "chunked", a
// declared length within the body limit, one Host header, required in HTTP/1.1, whose value is RFC 3986's
// host[:port]), and the mapping of parse failures to the HTTP status the client gets (ProtocolErrorFor):
// malformed or ambiguous framing (request smuggling: CL+TE, two Content-Lengths, a negative length) or a
// missing, repeated or invalid Host → 400, headers too
// large → 431, body too large → 413, an unknown transfer coding → 501, an HTTP version other than 1.0/1.1 →
// 505.
// After a protocol error the connection is answered and closed (its framing can no longer be trusted).
// Stateless functions; thread-safe.
#pragma once

#include <boost/beast/http.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lockstep::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent, e.g. "/v1/models?x=1"
  std::string path;    // the target's path: no query, percent-decoded, from an absolute-form target too
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  int version = 11;  // 10 or 11
  // The header's value ("" when absent); name lower-case.
  std::string Header(const std::string& name) const;
};

struct HttpLimits {
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 16u << 10;
};

// A request the HTTP layer answers itself, before any route runs.
struct ProtocolError {
  int status = 400;     // 400, 413, 431, 501, 505 (503: the connection limit)
  std::string message;  // for the error body
  std::string code;     // short machine-readable code: "bad_request", "body_too_large", ...
};

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// `text` with each %XX (two hex digits) replaced by its byte, and '+' by a space where plus_is_space (a query
// string's form encoding); a '%' without two hex digits after it stays as it is.
std::string PercentDecode(std::string_view text, bool plus_is_space);

// The path of a request target, what routes see as HttpRequest::path: origin form ("/v1/models?x") or
// absolute form ("http://host:port/v1/models", which RFC 9112 §3.2.2 says a server must accept), without the
// query, percent-decoded (an OpenAI client encodes a model id's "/" as %2F). A "%" not followed by two hex
// digits stays as it is.
std::string TargetPath(std::string_view target);

void ConfigureParser(RequestParser& parser, const HttpLimits& limits);
// Framing checks once the header is parsed; nullopt when the request may proceed to its body.
std::optional<ProtocolError> CheckRequestHeader(const RequestParser& parser, const HttpLimits& limits);
// The answer to a failed header/body read: nullopt for a connection failure (EOF, reset, timeout), which is
// closed without an answer.
std::optional<ProtocolError> ProtocolErrorFor(const boost::system::error_code& ec, const HttpLimits& limits);
// The parsed message as an HttpRequest (releases the parser's message).
HttpRequest ToHttpRequest(RequestParser& parser);

// Parses the (pipelined) requests in `bytes` with the same steps as a connection: every complete request in
// order, then the protocol error that stopped parsing, if any. `incomplete` says the bytes end inside a
// request.
struct BufferParse {
  std::vector<HttpRequest> requests;
  std::optional<ProtocolError> error;
  bool incomplete = false;
};
BufferParse ParseRequests(std::string_view bytes, const HttpLimits& limits);

}  // namespace lockstep::server
