#include "server/fan_out.h"

#include "base/excerpt.h"
#include "server/openai_api.h"
#include "text/question_splitter.h"

namespace lockstep::server {
namespace {

// The split of `text`, when it holds two or more questions.
std::optional<text::SplitResult> Split(const std::string& content) {
  text::SplitResult split = text::SplitQuestions(content);
  if (split.questions.size() < 2) return std::nullopt;
  return split;
}

ApiError FanOutError(const std::string& message) { return ApiError::Field("fan_out", message); }

}  // namespace

void ReadFanOut(FieldReader& f, FanOut* out) {
  const std::optional<std::string> mode = f.String("fan_out");
  if (!mode || *mode == "off") return;
  if (*mode == "choices") {
    out->mode = FanOutMode::kChoices;
  } else if (*mode == "message") {
    out->mode = FanOutMode::kMessage;
  } else {
    f.Fail("fan_out", "fan_out must be \"off\", \"choices\" or \"message\", got \"" + Excerpt(*mode) + "\"");
  }
}

Parsed<bool> ExpandChatFanOut(const nlohmann::json& messages, const ApiContext& ctx, OpenAiRequest* req) {
  if (req->fan_out.mode == FanOutMode::kOff || messages.empty()) return false;
  const nlohmann::json& last = messages.back();
  if (last.value("role", "") != "user") return false;
  std::optional<text::SplitResult> split = Split(last.value("content", ""));
  if (!split) return false;
  if (req->spec.n != 1) return FanOutError("fan_out answers each question once: n must be 1");
  for (const std::string& question : split->questions) {
    nlohmann::json copy = messages;
    copy.back()["content"] = text::ComposeQuestion(split->preamble, question);
    chat::ChatTemplateInput input;
    input.messages = nlohmann::ordered_json::parse(copy.dump());
    input.extra = req->template_kwargs;
    auto prompt = ctx.chat_template->Apply(input);
    if (!prompt.ok()) return ApiError{prompt.status(), "messages", false};
    auto ids = EncodePrompt(ctx, *prompt, "messages");
    if (!ids.ok()) return ids.error;
    req->prompt_texts.push_back(*prompt);
    req->spec.prompts.push_back(std::move(*ids.value));
  }
  req->fan_out.questions = std::move(split->questions);
  req->spec.fork_prompts = true;
  return true;
}

Parsed<bool> ExpandCompletionFanOut(const ApiContext& ctx, OpenAiRequest* req) {
  if (req->fan_out.mode == FanOutMode::kOff || req->prompt_texts.size() != 1) return false;
  std::optional<text::SplitResult> split = Split(req->prompt_texts[0]);
  if (!split) return false;
  if (req->spec.n != 1) return FanOutError("fan_out answers each question once: n must be 1");
  if (req->echo) return FanOutError("fan_out cannot be combined with echo");
  if (req->prompt_logprobs >= 0) return FanOutError("fan_out cannot be combined with prompt_logprobs");
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& question : split->questions) {
    texts.push_back(text::ComposeQuestion(split->preamble, question));
    auto ids = EncodePrompt(ctx, texts.back(), "prompt");
    if (!ids.ok()) return ids.error;
    prompts.push_back(std::move(*ids.value));
  }
  req->prompt_texts = std::move(texts);
  req->spec.prompts = std::move(prompts);
  req->fan_out.questions = std::move(split->questions);
  req->spec.fork_prompts = true;
  return true;
}

nlohmann::json StitchResponse(nlohmann::json response, const OpenAiRequest& req) {
  const nlohmann::json& choices = response["choices"];
  std::string text;
  bool length = false;
  for (size_t i = 0; i < choices.size() && i < req.fan_out.questions.size(); ++i) {
    const nlohmann::json& c = choices[i];
    const nlohmann::json& answer = req.chat ? c["message"]["content"] : c["text"];
    if (i > 0) text += "\n\n";
    text += std::to_string(i + 1) + ". " + req.fan_out.questions[i] + "\n" + answer.get<std::string>();
    length = length || c["finish_reason"] == "length";
  }
  nlohmann::json choice = {
      {"index", 0}, {"finish_reason", length ? "length" : "stop"}, {"logprobs", nullptr}};
  if (req.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  response["choices"] = nlohmann::json::array({std::move(choice)});
  return response;
}

StitchedStream::StitchedStream(std::vector<std::string> questions)
    : questions_(std::move(questions)), held_(questions_.size()), finished_(questions_.size(), false) {}

std::string StitchedStream::Heading(size_t index) const {
  return (index > 0 ? "\n\n" : "") + std::to_string(index + 1) + ". " + questions_[index] + "\n";
}

std::optional<nlohmann::json> StitchedStream::Chunk(const OpenAiRequest& req, const ChoiceState& choice,
                                                    const TokenEvent& event, const ApiContext& ctx,
                                                    const std::string& id, int64_t created) {
  const size_t index = static_cast<size_t>(choice.index);
  if (index >= questions_.size() || current_ >= questions_.size()) return std::nullopt;
  held_[index] += event.text_delta;
  if (event.last()) {
    finished_[index] = true;
    any_length_ = any_length_ || choice.end == ChoiceEnd::kLength;
  }
  std::string text;
  while (current_ < questions_.size()) {
    if (!heading_sent_) {
      text += Heading(current_);
      heading_sent_ = true;
    }
    text += held_[current_];
    held_[current_].clear();
    if (!finished_[current_]) break;
    ++current_;
    heading_sent_ = false;
  }
  // One stitched choice (index 0): a plain text event, with the finish reason once every answer ended.
  ChoiceState stitched;
  stitched.index = 0;
  TokenEvent out;
  out.text_delta = std::move(text);
  if (current_ == questions_.size()) {
    out.finish_reason = any_length_ ? FinishReason::kLength : FinishReason::kStop;
    stitched.end = any_length_ ? ChoiceEnd::kLength : ChoiceEnd::kStop;
  }
  auto chunk = OpenAiChunk(req, stitched, out, first_chunk_, ctx, id, created);
  if (chunk) first_chunk_ = false;
  return chunk;
}

}  // namespace lockstep::server
