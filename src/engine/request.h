// Request and TokenEvent: what a caller hands the Engine and what it gets back, one event per generated
// token. Plain value types, safe to copy and move between threads. The engine never sees HTTP or JSON; the
// server maps its wire formats onto these.
//
// Event stream of one request (see engine/engine.h for how it is delivered):
//   TokenEvent{token, text_delta, logprob, ...}            one per generated token, in order
//   ...
//   TokenEvent{..., finish_reason = kStop|kLength|...}      the last event always carries a finish reason
// The last event may carry a token too (the token that hit max_tokens, EOS, or completed a stop string), or
// no token (token == kNoToken: cancelled, error, max_tokens 0). Text deltas concatenate to exactly the
// generated text: text that could still be the start of a stop string is held back, and a matched stop string
// (and anything after it) is never emitted; EOS / end-of-generation tokens contribute no text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "model/model_config.h"

namespace lockstep::grammar {
class TokenMasker;
}

namespace lockstep {

using RequestId = uint64_t;
inline constexpr int32_t kNoToken = -1;

struct Request {
  std::vector<int32_t> prompt_ids;  // must be non-empty; every id < n_vocab
  SamplingParams sampling;          // engine/sampler.h: temperature, top-k/p, min-p, penalties, seed, and
                                    // logprobs / top_logprobs (at most kMaxTopLogprobs) reported per token
  int32_t max_tokens = 16;          // new tokens to generate at most (>= 1; 0: the prompt only, which needs
                                    // prompt_logprobs or embedding: one bare kLength event carries them)
  std::vector<std::string>
      stop;  // stop strings (matched on the detokenized text; not included in the output)
  std::vector<int32_t>
      stop_token_ids;       // extra token ids that end generation like EOS (included as the final token)
  bool ignore_eos = false;  // keep going past EOS / end-of-generation tokens (until max_tokens or stop)
  // EOS / end-of-generation tokens and stop_token_ids are not sampled before this many tokens (vLLM's
  // min_tokens; 0 <= min_tokens <= max_tokens). Stop strings and a grammar that allows nothing else still end
  // a request earlier.
  int32_t min_tokens = 0;
  // Control tokens whose text the output keeps (llama.cpp's preserved tokens): tool-call markers such as
  // Mistral's [TOOL_CALLS] and [ARGS], which a parser of the text must see. Other control tokens give no
  // text.
  std::vector<int32_t> preserved_tokens;
  std::string label;  // free text for logs (e.g. the server's request id); not interpreted
  // A request submitted earlier to the same engine whose prompt shares a prefix with this one: the engine
  // computes that common prefix once and this request forks from its KV (full blocks shared, the partial
  // block copied) instead of computing it again — n > 1 choices, server-side fan-out. Output is the same as
  // without it. Ignored (0, unknown or finished ids) when there is nothing to fork from.
  RequestId fork_of = 0;
  // Constrained decoding (grammar/token_masker.h): when set, every sampled token keeps the generated text a
  // prefix of the grammar's language; EOS / end-of-generation and stop_token_ids are allowed only where the
  // text is a complete match, and the request ends (kStop, StopKind::kGrammar) once nothing may follow. The
  // masker must be built over this engine's vocabulary. Shared, thread-safe; each request keeps its own
  // parse state, so its tokens never depend on its neighbours.
  std::shared_ptr<grammar::TokenMasker> grammar;
  // Prompt logprobs (what OpenAI's echo + logprobs, vLLM's prompt_logprobs and TGI's decoder_input_details
  // report): -1 off; N >= 0: the log-probability of every prompt token after the first under the model given
  // the tokens before it, with the N most likely alternatives (N <= kMaxTopLogprobs). The request then
  // neither reads the prefix cache nor forks (every prompt row is computed for its logits; it still
  // publishes its blocks for others), and the values are those of the raw logits, as for generated tokens.
  int32_t prompt_logprobs = -1;
  // Embedding (what OpenAI's /v1/embeddings and TEI's /embed return): kNone off; else the model's final
  // hidden states of the prompt (after the output norm, as llama.cpp's embeddings) pooled this way arrive on
  // the request's one event (TokenEvent::embedding, n_embd floats, not length-normalized). Needs max_tokens
  // 0 and no prompt_logprobs or grammar. Mean and cls pooling, like prompt_logprobs, compute the whole prompt
  // (no prefix-cache read; blocks published); last pooling needs only the last row's state and reads the
  // prefix cache. No fork. The vector depends only on the prompt: not on the neighbours, the chunking, a
  // preemption or the cache. kRank (a reranker's score): like last pooling, then the model's classifier
  // head (Model::classifier(), which it needs) is applied, and the event's `embedding` holds its n_cls
  // logits instead (model/classifier.h RankScore makes them a score).
  Pooling embedding = Pooling::kNone;
  // The scale of each LoRA adapter loaded with the model (Model::lora_adapters(); entry i for adapter i,
  // missing entries 0: empty runs the base model). At most one entry per adapter, each finite. Requests with
  // different scales share steps, each row with its own; the prefix cache and forks share KV only between
  // requests whose scales are equal (the scales salt the block hashes).
  std::vector<float> lora_scales;
  // Models with recurrent layers and a snapshot cache (kv/recurrent_state_cache.h): a prompt length other
  // requests are likely to share, e.g. where the chat's system message ends (the server sets it). The state
  // is snapshotted at the block boundary at or below it, so that a later request sharing that prefix starts
  // there; without it only the prompt's end, a reply and prefixes shared with requests present at the time
  // get one. 0: none; ignored by other models and past the prompt's end. Output is the same either way.
  int32_t shared_prefix_hint = 0;
};

inline constexpr int32_t kMaxTopLogprobs = 20;

// One prompt token's logprob (Request::prompt_logprobs): the token at some position p >= 1 of the prompt,
// scored by the logits of position p - 1.
struct PromptLogprob {
  int32_t token = 0;
  float logprob = 0;
  int32_t rank = 0;  // 1 + the tokens more likely there (equal logits: lower ids first), as vLLM reports
  std::vector<TokenLogprob> top;  // the N most likely tokens at that position, most likely first
};

enum class FinishReason {
  kNone = 0,   // not finished (every event but the last)
  kStop,       // EOS / end-of-generation token, a stop token id, or a stop string (see StopKind)
  kLength,     // max_tokens generated, or the model's context is full
  kCancelled,  // Cancel() or Engine shutdown without drain
  kError,      // the forward pass failed; TokenEvent::error says why
};

enum class StopKind {
  kNone = 0,
  kEos,         // the model's EOS / end-of-generation token (FinishReason::kStop)
  kStopToken,   // one of Request::stop_token_ids
  kStopString,  // one of Request::stop; TokenEvent::stop_string says which
  kGrammar,     // Request::grammar is complete: nothing may follow (no token on a bare last event)
};

const char* FinishReasonName(FinishReason reason);  // "stop" | "length" | "cancelled" | "error" | "none"

// Per-request timings, filled in on the last event (seconds, steady clock).
struct RequestTiming {
  double queue_s = 0;  // submit → first scheduled in a forward pass
  double ttft_s = 0;   // submit → first token sampled (0 when none was)
  double tpot_s = 0;   // (last token time - first token time) / (generated - 1); 0 when generated < 2
  double e2e_s = 0;    // submit → last event
  int32_t prompt_tokens = 0;
  int32_t generated_tokens = 0;  // tokens sampled, the final one included
  int32_t preemptions = 0;       // times this request was preempted and recomputed
  // Prompt tokens whose KV was not computed for this request: found in the prefix cache, computed by a
  // neighbour with the same prefix, or taken from its fork parent (Request::fork_of).
  int32_t cached_tokens = 0;
};

struct TokenEvent {
  RequestId request_id = 0;
  int32_t token = kNoToken;  // the sampled token, or kNoToken (only on a last event without a token)
  std::string text_delta;    // new text released by this event (may be empty; UTF-8 complete)
  std::string token_text;    // this token's own decoded text, before stop strings hold text back or cut it
                             // ("" for EOS / end-of-generation and special tokens)
  float logprob = 0;         // log-probability of `token` (log-softmax of the raw logits); 0 unless
                             // sampling.logprobs
  std::vector<TokenLogprob> top_logprobs;  // sampling.top_logprobs most likely tokens, most likely first
  int32_t index = 0;                       // 0-based index of this token among the generated tokens
  // Request::prompt_logprobs >= 0: on the first event only, prompt_ids.size() - 1 entries, one for each
  // prompt token after the first, in order.
  std::vector<PromptLogprob> prompt_logprobs;
  std::vector<float> embedding;  // Request::embedding: the pooled vector (kRank: the classifier's logits),
                                 // on the (only, last) event
  bool special = false;          // the token is a control / special token (EOS etc.)

  FinishReason finish_reason = FinishReason::kNone;  // set on the last event only
  StopKind stop_kind = StopKind::kNone;
  std::string stop_string;  // the stop string matched (StopKind::kStopString)
  // StopKind::kStopString: the decoded text cut off from the output (the stop string and what followed it
  // within the last token); TGI returns it, OpenAI drops it.
  std::string stop_tail;
  std::string error;     // FinishReason::kError: what went wrong
  RequestTiming timing;  // last event only

  bool last() const { return finish_reason != FinishReason::kNone; }
};

}  // namespace lockstep
