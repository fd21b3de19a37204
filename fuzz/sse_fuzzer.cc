// Fuzzes the client's SSE parser (client/sse_parser.h): a stream fed whole and fed in pieces (cut where the
// input's first bytes say) gives the same events, and the parser holds no more bytes than it was fed.
#include <algorithm>

#include "client/sse_parser.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  fuzz::FuzzInput in(data, size);
  const size_t step_a = 1 + in.Byte() % 17, step_b = 1 + in.Byte() % 5;
  const std::string_view stream = in.Rest();
  client::SseParser whole;
  const std::vector<client::SseEvent> expected = whole.Feed(stream);
  client::SseParser pieces;
  std::vector<client::SseEvent> got;
  size_t pos = 0;
  for (bool a = true; pos < stream.size(); a = !a) {
    const size_t n = std::min(a ? step_a : step_b, stream.size() - pos);
    for (auto& e : pieces.Feed(stream.substr(pos, n))) got.push_back(std::move(e));
    pos += n;
    fuzz::Require(pieces.buffered_bytes() <= pos, "buffered bytes bounded by the input");
  }
  fuzz::Require(got.size() == expected.size(), "same number of events whole and in pieces");
  for (size_t i = 0; i < got.size(); ++i) {
    fuzz::Require(
        got[i].data == expected[i].data && got[i].event == expected[i].event && got[i].id == expected[i].id,
        "same events whole and in pieces");
  }
  return 0;
}
