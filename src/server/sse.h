// Server-Sent Events framing (https://html.spec.whatwg.org/multipage/server-sent-events.html) as the OpenAI
// and TGI streaming APIs use it: each event is `data: <payload>\n\n`; a payload with newlines becomes several
// `data:` lines. SseParser is the inverse (used by tests and clients): feed it bytes in any split, get whole
// events. Pure functions / a single-threaded parser.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lockstep::server {

// "data: <payload>\n\n" (one data line per payload line); with `event`, an "event: <name>\n" line first.
std::string SseEvent(std::string_view payload, std::string_view event = {});
// The OpenAI stream terminator: "data: [DONE]\n\n".
std::string SseDone();

class SseParser {
 public:
  struct Event {
    std::string event;  // "" when the event had no event: line
    std::string data;   // data lines joined with '\n'
  };
  // Consumes bytes; returns the events completed by them. Comments (":...") and unknown fields are ignored;
  // CRLF and LF line ends are both accepted.
  std::vector<Event> Feed(std::string_view bytes);

 private:
  std::string line_;
  Event current_;
  bool has_data_ = false;
};

}  // namespace lockstep::server
