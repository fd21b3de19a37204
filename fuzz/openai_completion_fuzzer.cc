// Fuzzes POST /v1/completions body parsing (ParseCompletionRequest): any bytes give a valid request or a
// 4xx error, never a crash, a hang or an exception.
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
  const auto parsed = server::ParseCompletionRequest(body, fuzz::TinyApiContext());
  if (parsed.ok()) {
    fuzz::CheckSpec(parsed.value->spec, fuzz::TinyApiContext());
    fuzz::Require(parsed.value->prompt_texts.size() == parsed.value->spec.prompts.size(),
                  "a text per prompt");
  } else {
    fuzz::CheckError(parsed.error, server::ApiFlavor::kOpenAI);
  }
  return 0;
}
