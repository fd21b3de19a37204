// Fuzzes the Jinja chat-template engine (jinja/: lexer, parser, interpreter, built-in filters and tests)
// through ChatTemplate, as a model file's tokenizer.chat_template reaches it. The first byte picks
// add_generation_prompt and whether tools are passed; the rest is the template source, rendered over a fixed
// conversation. Properties: any source is parsed or refused with a message naming the origin (never a
// crash, a hang or an exception); a parsed template renders or refuses with a message; rendering is a pure
// function of its input (twice the same); a source Parse refuses gives Create's ChatML fallback.
#include <nlohmann/json.hpp>
#include <string>

#include "chat/chat_template.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  static const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi <b>there</b> {{ 1 }}"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "weather", "arguments": {"city": "Oslo"}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"},
    {"role": "assistant", "content": "Hello!", "name": "bot"},
    {"role": "user", "content": [{"type": "text", "text": "and now?"}]}
  ])");
  static const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "weather", "description": "Weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
  ])");
  fuzz::FuzzInput in(data, size);
  const uint8_t options = in.Byte();
  const std::string source(in.Rest());
  // A render budget of 5 000 steps instead of 10^6: the same code reaches the limit, and an input of loops
  // inside loops costs a few ms under ASan instead of seconds, which held a long run to ~150 executions/s
  // (one input of the grown corpus took 5.6 s; at 20 000 steps one still ran past the 10 s timeout, load 7).
  constexpr int64_t kRenderSteps = 5'000;
  auto parsed = chat::ChatTemplate::Parse(source, "fuzz input", "<s>", "</s>", kRenderSteps);
  if (!parsed.ok()) {
    fuzz::Require(parsed.status().message().find("fuzz input") != std::string::npos,
                  "a refused template names its origin");
    fuzz::Require(chat::ChatTemplate::Create(source, "<s>", "</s>").is_default(),
                  "an unparsable template falls back to ChatML");
    return 0;
  }
  chat::ChatTemplateInput input;
  input.messages = messages;
  input.add_generation_prompt = (options & 1) != 0;
  if ((options & 2) != 0) input.tools = tools;
  const auto first = parsed->Apply(input);
  const auto second = parsed->Apply(input);
  fuzz::Require(first.ok() == second.ok(), "rendering twice succeeds or fails alike");
  if (first.ok()) {
    fuzz::Require(*first == *second, "rendering twice gives the same prompt");
  } else {
    fuzz::Require(!first.status().message().empty(), "a failed render says why");
    fuzz::Require(first.status().message() == second.status().message(), "rendering twice fails alike");
  }
  return 0;
}
