#include "client/sse_parser.h"

namespace lockstep::client {

std::vector<SseEvent> SseParser::Feed(std::string_view bytes) {
  std::vector<SseEvent> out;
  for (char c : bytes) {
    if (c == '\n' && last_was_cr_) {
      last_was_cr_ = false;
      continue;
    }
    last_was_cr_ = false;
    if (c == '\r' || c == '\n') {
      last_was_cr_ = (c == '\r');
      ProcessLine(line_, &out);
      line_.clear();
    } else {
      line_.push_back(c);
    }
  }
  return out;
}

void SseParser::ProcessLine(std::string_view line, std::vector<SseEvent>* out) {
  if (line.empty()) {
    if (has_data_) out->push_back(SseEvent{event_, data_, last_id_});
    has_data_ = false;
    data_.clear();
    event_.clear();
    return;
  }
  if (line.front() == ':') return;  // comment / keep-alive
  std::string_view field = line;
  std::string_view value;
  if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) last_id_.assign(value);
  }
  // "retry" and unknown fields are ignored: reconnection is the caller's policy.
}

}  // namespace lockstep::client
