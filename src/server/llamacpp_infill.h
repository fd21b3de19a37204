// llama.cpp's POST /infill: fill-in-the-middle code completion for editor plugins (llama.vim, llama.vscode).
//   {input_prefix, input_suffix, input_extra?: [{filename?, text}], prompt?, ...every /completion field} →
//   exactly /completion's result and stream (llamacpp_api.h).
// The prompt is laid out as llama.cpp's server lays it out (its format_prompt_infill), with the model's FIM
// tokens (tokenizer/fim_tokens.h):
//
//   [extra context] [BOS] FIM_PRE prefix prompt FIM_SUF suffix FIM_MID      (the model writes the middle)
//
//   extra context, where the vocabulary has FIM_REP / FIM_SEP (repo-level FIM, Qwen2.5-Coder):
//     FIM_REP "myproject\n" (FIM_SEP "<filename>\n" <text>)... FIM_SEP "filename\n"
//   else each chunk is "\n\n--- snippet ---\n\n" <text> (FIM_REP "myproject\n" first where only FIM_REP is).
//
// input_prefix / input_suffix are a string or llama.cpp's mixed array of strings and token ids, tokenized
// with special-token text kept as text; `prompt` (text the model continues: llama.vim sends the current
// line up to the cursor) is tokenized with special tokens parsed; it is appended to the prefix, as
// llama.cpp's code does (its README says "after FIM_MID"; its code puts it before FIM_SUF).
// Budget (llama.cpp's): of n_batch tokens, 3/4 for the prefix (its end is kept) and 1/4 for the suffix (its
// start is kept) less the prompt and 2; the extra context gets what is left of the context after n_batch,
// 2 × n_predict and 3 tokens (BOS, FIM_MID, one to generate: lockstep's slack, so the prompt always fits);
// its end, nearest the current file, is kept. See InfillBudgetFor for n_batch.
// Errors: a model without FIM_PRE / FIM_SUF / FIM_MID → 400 naming the missing ones (llama.cpp's wording);
// bad fields → 400 naming the field. Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_context.h"
#include "server/llamacpp_api.h"
#include "tokenizer/fim_tokens.h"

namespace lockstep::server {

// The tokenized pieces of an /infill prompt, before the budget.
struct InfillParts {
  std::vector<int32_t> prefix;  // input_prefix: the text before the cursor
  std::vector<int32_t> suffix;  // input_suffix: the text after the cursor
  std::vector<int32_t> prompt;  // `prompt`: continues the prefix
  std::vector<int32_t> extra;   // input_extra, laid out as above (InfillExtraTokens)
};

struct InfillBudget {
  int64_t n_ctx = 0;
  int64_t n_batch = 0;
  int64_t n_predict = -1;  // -1 (until EOS) reserves nothing but the slack
};

// llama.cpp's n_batch (2048 by default), or half the context when that is smaller than 4096 (llama.cpp
// would give the prefix and suffix the whole context there, leaving nothing to generate or for the extra
// context).
InfillBudget InfillBudgetFor(int64_t n_ctx, int64_t n_predict);

// The token sequence the model is given (layout and budget above). `bos`: -1 for none (the vocabulary does
// not add BOS). fim must have pre, suf and mid.
std::vector<int32_t> LayOutInfill(const InfillParts& parts, const FimTokens& fim, int32_t bos,
                                  const InfillBudget& budget);

// input_extra laid out (null or absent: only the repo and file markers where the vocabulary has them).
// Errors name input_extra or input_extra[i].text / .filename.
Parsed<std::vector<int32_t>> InfillExtraTokens(const ApiContext& ctx, const nlohmann::json* input_extra);

// The prompt of a plain prefix and suffix (OpenAI's /v1/completions `suffix`): both tokenized as
// input_prefix and input_suffix, no extra context, laid out as above with BOS as the vocabulary says. A model
// without FIM tokens: /infill's 501; text the vocabulary cannot represent: 400 naming `prefix_param` or
// `suffix_param`.
Parsed<std::vector<int32_t>> InfillPrompt(const ApiContext& ctx, const std::string& prefix,
                                          const std::string& suffix, int64_t n_predict,
                                          const std::string& prefix_param, const std::string& suffix_param);

// POST /infill's body.
Parsed<LlamaCppRequest> ParseLlamaCppInfill(const std::string& body, const ApiContext& ctx);

}  // namespace lockstep::server
