// Fuzzes the completion body parsers: POST /v1/completions (ParseCompletionRequest), llama.cpp's native
// POST /completion (ParseLlamaCppCompletion) and POST /infill (ParseLlamaCppInfill, with StarCoder's FIM
// vocabulary where the test data is), each input given to all three (their fields overlap: prompt forms,
// sampling, stop, logit_bias, grammar, json_schema): any bytes give a valid request or a 4xx error, never a
// crash, a hang or an exception.
#include <algorithm>

#include "fuzz/api_request_checks.h"
#include "fuzz/tiny_model.h"
#include "server/llamacpp_api.h"
#include "server/llamacpp_infill.h"
#include "server/openai_api.h"

// The fixtures are made before the first input, so their cost is not counted against -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)lockstep::fuzz::TinyApiContext();
  (void)lockstep::fuzz::FimApiContext();
  return 0;
}

namespace {

// What a parsed llama.cpp request (/completion or /infill) must be.
void CheckLlamaCpp(const lockstep::server::LlamaCppRequest& req, const lockstep::server::ApiContext& ctx) {
  using namespace lockstep;
  server::GenerationSpec spec = req.spec;
  if (spec.base.max_tokens == 0) {  // n_predict 0: the prompt is run, nothing generated
    fuzz::Require(spec.base.prompt_logprobs >= 0, "a prompt-only request asks for the prompt's scores");
    spec.base.max_tokens = 1;
  }
  fuzz::CheckSpec(spec, ctx);
  fuzz::Require(req.n_probs == spec.base.sampling.top_logprobs, "n_probs alternatives per token");
  fuzz::Require(req.several == (spec.prompts.size() * static_cast<size_t>(spec.n) > 1),
                "several results exactly when several sequences run");
}

}  // namespace

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
  if (native.ok()) {
    CheckLlamaCpp(*native.value, ctx);
  } else {
    fuzz::CheckError(native.error, server::ApiFlavor::kLlamaCpp);
  }
  const server::ApiContext& fim_ctx = fuzz::FimApiContext();
  const auto infill = server::ParseLlamaCppInfill(body, fim_ctx);
  if (!infill.ok()) {
    fuzz::CheckError(infill.error, server::ApiFlavor::kLlamaCpp);
    return 0;
  }
  CheckLlamaCpp(*infill.value, fim_ctx);
  const FimTokens& fim = fim_ctx.tokenizer->fim();
  fuzz::Require(infill.value->spec.prompts.size() == 1, "one infill prompt");
  const std::vector<int32_t>& prompt = infill.value->spec.prompts[0];
  fuzz::Require(prompt.back() == fim.mid, "the infill prompt ends with FIM_MID");
  fuzz::Require(std::count(prompt.begin(), prompt.end(), fim.pre) >= 1, "the infill prompt has FIM_PRE");
  return 0;
}
