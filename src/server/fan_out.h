// Server-side fan-out: a chat or completions request whose prompt holds several independent questions is
// answered as parallel sequences, one per question, instead of one long answer generated token after token.
// The request field `"fan_out"` asks for it:
//   "fan_out": "choices"   one choice per question, in question order (index i answers question i + 1)
//   "fan_out": "message"   one choice whose text holds every answer under its question:
//                           "1. <question>\n<answer>\n\n2. <question>\n<answer>"
//   "fan_out": "off"       (the default) the prompt runs as one sequence
// The questions are split by the splitter `lockstep ask --split` uses (text/question_splitter.h): of a chat
// request, the last message (a user message); of a completions request, its one text prompt. Each question
// becomes the same prompt with only that message (or text) replaced by the shared instruction + the
// question, so everything before — system prompt, history, a document — is the same text: the engine
// prefills it once and forks every question's sequence from it (GenerationSpec::fork_prompts). A prompt
// holding fewer than two questions runs as usual. Streaming: "choices" streams per-choice deltas like n > 1;
// "message" streams the answers in question order (answer k's text is held until answers 1..k-1 finished).
// Usage counts every question's prompt; its cached_tokens shows the shared part computed once.
// Pure functions and one per-request stream object (used on the request's strand only).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/api_context.h"
#include "server/generation.h"
#include "server/request_fields.h"

namespace lockstep::server {

struct OpenAiRequest;

enum class FanOutMode { kOff, kChoices, kMessage };

struct FanOut {
  FanOutMode mode = FanOutMode::kOff;
  std::vector<std::string> questions;  // set when the prompt was split (>= 2): one engine prompt each
  bool active() const { return questions.size() >= 2; }
  bool stitched() const { return active() && mode == FanOutMode::kMessage; }
};

// Reads "fan_out": "off" | "choices" | "message" (errors name the field).
void ReadFanOut(FieldReader& f, FanOut* out);

// Chat: splits the last message of `messages` (normalized {role, content} objects) when fan-out is asked
// for; on a split, fills req->spec.prompts / prompt_texts with one templated, tokenized prompt per question
// and returns true. False (nothing changed) when the request runs as one sequence.
Parsed<bool> ExpandChatFanOut(const nlohmann::json& messages, const ApiContext& ctx, OpenAiRequest* req);
// Completions: splits the one text prompt already in req->prompt_texts; as above.
Parsed<bool> ExpandCompletionFanOut(const ApiContext& ctx, OpenAiRequest* req);

// "message" mode: the whole response with its per-question choices stitched into one (OpenAiResponse's
// output in, the stitched response out).
nlohmann::json StitchResponse(nlohmann::json response, const OpenAiRequest& req);

// "message" mode, streamed: turns each choice's token events into chunks of the one stitched choice.
class StitchedStream {
 public:
  explicit StitchedStream(std::vector<std::string> questions);
  // The chunk to send for this event of `choice`, if any (the answer's text when it is its turn, with the
  // questions' headings; the finish reason on the last answer's end).
  std::optional<nlohmann::json> Chunk(const OpenAiRequest& req, const ChoiceState& choice,
                                      const TokenEvent& event, const ApiContext& ctx, const std::string& id,
                                      int64_t created);

 private:
  std::string Heading(size_t index) const;

  std::vector<std::string> questions_;
  std::vector<std::string> held_;  // text of answers not yet streamed
  std::vector<bool> finished_;
  size_t current_ = 0;  // the answer being streamed
  bool heading_sent_ = false;
  bool first_chunk_ = true;
  bool any_length_ = false;
};

}  // namespace lockstep::server
