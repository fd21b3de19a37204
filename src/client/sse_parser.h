// SseParser: an incremental parser for text/event-stream (the WHATWG Server-Sent Events format). Feed it
// bytes as they arrive, in any split; it returns the complete events. Handles \n, \r\n and \r line ends,
// comments
// (": ..."), multi-line data (joined with '\n'), "event:" / "id:" / "retry:" fields, a field without a colon,
// and the one optional space after the colon. An event is dispatched at a blank line; a block with no data
// field is dropped (as browsers do). Not thread-safe; one parser per stream.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::client {

struct SseEvent {
  std::string event;  // "" unless an event: field was given (browsers call that "message")
  std::string data;
  std::string id;  // the last event id seen on the stream
};

class SseParser {
 public:
  // Appends bytes; returns the events completed by them, in order.
  std::vector<SseEvent> Feed(std::string_view bytes);
  // Bytes held for an incomplete line or event (lets callers bound memory: a server that never ends a line).
  size_t buffered_bytes() const { return line_.size() + data_.size(); }

 private:
  void ProcessLine(std::string_view line, std::vector<SseEvent>* out);

  std::string line_;          // the current, unterminated line
  bool last_was_cr_ = false;  // a '\r' ended the previous line: a following '\n' belongs to it
  bool has_data_ = false;
  std::string data_;
  std::string event_;
  std::string last_id_;
};

}  // namespace lockstep::client
