#include "server/sse.h"

namespace lockstep::server {

std::string SseEvent(std::string_view payload, std::string_view event) {
  std::string out;
  out.reserve(payload.size() + 16);
  if (!event.empty()) {
    out += "event: ";
    out += event;
    out += '\n';
  }
  size_t start = 0;
  while (true) {
    const size_t nl = payload.find('\n', start);
    out += "data: ";
    out += payload.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    out += '\n';
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  out += '\n';
  return out;
}

std::string SseDone() { return "data: [DONE]\n\n"; }

std::vector<SseParser::Event> SseParser::Feed(std::string_view bytes) {
  std::vector<Event> events;
  for (char c : bytes) {
    if (c != '\n') {
      line_ += c;
      continue;
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (line_.empty()) {
      if (has_data_) events.push_back(std::move(current_));
      current_ = Event{};
      has_data_ = false;
    } else if (line_[0] != ':') {
      const size_t colon = line_.find(':');
      const std::string field = line_.substr(0, colon);
      std::string value = colon == std::string::npos ? "" : line_.substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.erase(0, 1);
      if (field == "data") {
        if (has_data_) current_.data += '\n';
        current_.data += value;
        has_data_ = true;
      } else if (field == "event") {
        current_.event = value;
      }
    }
    line_.clear();
  }
  return events;
}

}  // namespace lockstep::server
