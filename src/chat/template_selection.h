// SelectChatTemplate: which chat template a model gets, the one place `serve`, `info` and `chat` decide it.
//   override_spec ""          the model's own tokenizer.chat_template, else the default ChatML template
//   override_spec NAME        a built-in template (chat/builtin_templates.h: chatml, llama3, mistral, ...)
//   override_spec FILE        a file holding a Jinja template, or a tokenizer_config.json with
//   "chat_template"
// A file path wins over a built-in name of the same spelling. Warnings (for the log / stderr) are given when
// the template in use needs special tokens (<|im_start|>, <|eot_id|>, ...) that the vocabulary lacks as
// single tokens; they name the override (`--chat-template FILE|NAME`) and the built-ins whose tokens the
// vocabulary does have. bos/eos come from the tokenizer. Errors (InvalidArgument / NotFound) name the spec:
// an unreadable file, a template that does not parse, a name that is neither a file nor a built-in.
// Pure function of its arguments; safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::chat {

struct SelectedChatTemplate {
  std::shared_ptr<const ChatTemplate> chat_template;
  std::string origin;                 // "the model's own", "built-in llama3", "file t.jinja", "default"
  std::vector<std::string> warnings;  // one line each
};

Result<SelectedChatTemplate> SelectChatTemplate(const GgufFile& file, const Tokenizer& tokenizer,
                                                const std::string& override_spec);

// SelectChatTemplate's errors for a non-empty `override_spec` (no such file or built-in, an unreadable file,
// a template that does not parse), found without the model: `serve` refuses a bad --chat-template with it
// before it listens (it loads the model after). Ok for "".
Status CheckChatTemplateSpec(const std::string& override_spec);

// The special tokens of `tokens` that the vocabulary does not encode as one token each.
std::vector<std::string> MissingSpecialTokens(const Tokenizer& tokenizer,
                                              const std::vector<std::string>& tokens);

}  // namespace lockstep::chat
