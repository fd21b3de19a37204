// What every API request parse must give (the property the three API fuzz targets check): a request the
// engine accepts (prompts within the vocabulary and the context, sane sampling, bounded fan-out), or an error
// that maps to a 4xx status with a JSON error body and a short message saying what was wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_support.h"
#include "server/api_context.h"
#include "server/api_error.h"
#include "server/generation.h"

namespace lockstep::fuzz {

inline void CheckSpec(const server::GenerationSpec& spec, const server::ApiContext& ctx) {
  Require(!spec.prompts.empty(), "a parsed request has a prompt");
  Require(spec.n >= 1 && spec.n <= 64, "n within 1..64");
  Require(spec.prompts.size() <= 64 && spec.prompts.size() * static_cast<size_t>(spec.n) <= 128,
          "at most 64 prompts and 128 sequences");
  Require(spec.base.max_tokens >= 1, "max_tokens >= 1");
  for (const auto& prompt : spec.prompts) {
    Require(!prompt.empty(), "no empty prompt");
    Require(static_cast<int64_t>(prompt.size()) + spec.base.max_tokens <= ctx.max_context,
            "prompt + max_tokens fit the context");
    for (int32_t id : prompt) Require(id >= 0 && id < ctx.vocab_size, "token ids within the vocabulary");
  }
  Require(spec.base.sampling.Validate().ok(), "sampling parameters the engine accepts");
}

inline void CheckError(const server::ApiError& error, server::ApiFlavor flavor) {
  const int status = server::HttpStatusFor(error, flavor);
  Require(status >= 400 && status < 500, "a bad request is a 4xx");
  const nlohmann::json body = nlohmann::json::parse(server::ErrorBody(error, flavor), nullptr, false);
  Require(body.is_object() && body.contains("error"), "the error body is JSON with an error");
  Require(!error.status.message().empty(), "the error says what was wrong");
  Require(error.status.message().size() < 4096, "the error message does not repeat the request");
}

}  // namespace lockstep::fuzz
