// Fuzzes the chat bodies of POST /v1/chat/completions (ParseChatRequest: messages, content parts, the chat
// template, sampling fields) and of POST /v1/responses (ParseResponsesRequest: input items, flat tools,
// text.format, rewritten into a chat body and parsed by ParseChatRequest): any bytes give a valid request or
// a 4xx error, never a crash, from both parsers. One target for both, since the second runs through the
// first.
#include "fuzz/api_request_checks.h"
#include "fuzz/tiny_model.h"
#include "server/openai_api.h"
#include "server/responses_api.h"

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
  const auto responses = server::ParseResponsesRequest(body, fuzz::TinyApiContext());
  if (responses.ok()) {
    fuzz::CheckSpec(responses.value->chat.spec, fuzz::TinyApiContext());
    fuzz::Require(responses.value->chat.spec.prompts.size() == 1 && responses.value->chat.spec.n == 1,
                  "one prompt and one choice per response");
    fuzz::Require(responses.value->echo.is_object(), "the echoed fields are an object");
  } else {
    fuzz::CheckError(responses.error, server::ApiFlavor::kOpenAI);
  }
  return 0;
}
