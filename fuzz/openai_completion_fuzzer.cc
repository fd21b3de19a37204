// Fuzzes the completion body parsers: POST /v1/completions (ParseCompletionRequest) and llama.cpp's native
// POST /completion (ParseLlamaCppCompletion), each input given to both (their fields overlap: prompt forms,
// sampling, stop, logit_bias, grammar, json_schema): any bytes give a valid request or a 4xx error, never a
// crash, a hang or an exception.
#include "fuzz/api_request_checks.h"
#include "fuzz/tiny_model.h"
#include "server/llamacpp_api.h"
#include "server/openai_api.h"

// The fixtures are made before the first input, so their cost is not counted against -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)lockstep::fuzz::TinyApiContext();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string body(reinterpret_cast<const char*>(data), size);
  const server::ApiContext& ctx = fuzz::TinyApiContext();
  const auto parsed = server::ParseCompletionRequest(body, ctx);
  if (parsed.ok()) {
    fuzz::CheckSpec(parsed.value->spec, ctx);
    fuzz::Require(parsed.value->prompt_texts.size() == parsed.value->spec.prompts.size(),
                  "a text per prompt");
  } else {
    fuzz::CheckError(parsed.error, server::ApiFlavor::kOpenAI);
  }
  const auto native = server::ParseLlamaCppCompletion(body, ctx);
  if (!native.ok()) {
    fuzz::CheckError(native.error, server::ApiFlavor::kLlamaCpp);
    return 0;
  }
  server::GenerationSpec spec = native.value->spec;
  if (spec.base.max_tokens == 0) {  // n_predict 0: the prompt is run, nothing generated
    fuzz::Require(spec.base.prompt_logprobs >= 0, "a prompt-only request asks for the prompt's scores");
    spec.base.max_tokens = 1;
  }
  fuzz::CheckSpec(spec, ctx);
  fuzz::Require(native.value->n_probs == spec.base.sampling.top_logprobs, "n_probs alternatives per token");
  fuzz::Require(native.value->several == (spec.prompts.size() * static_cast<size_t>(spec.n) > 1),
                "several results exactly when several sequences run");
  return 0;
}
