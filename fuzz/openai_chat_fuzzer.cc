// Fuzzes POST /v1/chat/completions body parsing (ParseChatRequest: messages, content parts, the chat
// template, sampling fields): any bytes give a valid request or a 4xx error, never a crash.
#include "fuzz/api_request_checks.h"
#include "fuzz/tiny_model.h"
#include "server/openai_api.h"

// The fixtures are made before the first input, so their cost is not counted against -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)lockstep::fuzz::TinyApiContext();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string body(reinterpret_cast<const char*>(data), size);
  const auto parsed = server::ParseChatRequest(body, fuzz::TinyApiContext());
  if (parsed.ok()) {
    fuzz::CheckSpec(parsed.value->spec, fuzz::TinyApiContext());
    fuzz::Require(
        parsed.value->chat && (parsed.value->spec.prompts.size() == 1 || parsed.value->fan_out.active()),
        "one prompt per chat unless fanned out");
  } else {
    fuzz::CheckError(parsed.error, server::ApiFlavor::kOpenAI);
  }
  return 0;
}
