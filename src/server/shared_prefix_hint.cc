#include "server/shared_prefix_hint.h"

#include <algorithm>
#include <string>

namespace lockstep::server {

int32_t SharedPrefixHint(const ApiContext& ctx, const chat::ChatTemplateInput& input,
                         const std::vector<int32_t>& prompt) {
  const nlohmann::ordered_json& messages = input.messages;
  if (!messages.is_array()) return 0;
  size_t leading = 0;
  while (leading < messages.size() && messages[leading].is_object()) {
    const auto role = messages[leading].find("role");
    if (role == messages[leading].end() || !role->is_string() ||
        (*role != "system" && *role != "developer")) {
      break;
    }
    ++leading;
  }
  if (leading == 0 || leading == messages.size()) return 0;
  // With an empty user message after them: some templates refuse a conversation without one (Qwen3's "No
  // user query found in messages"). The prompts then agree up to the user message's content at most.
  chat::ChatTemplateInput system = input;
  system.messages = nlohmann::ordered_json(messages.begin(), messages.begin() + std::ptrdiff_t(leading));
  system.messages.push_back({{"role", "user"}, {"content", ""}});
  system.add_generation_prompt = false;
  auto text = ctx.chat_template->Apply(system);
  if (!text.ok()) return 0;
  auto ids = EncodePrompt(ctx, *text, "messages");
  if (!ids.ok()) return 0;
  const std::vector<int32_t>& prefix = *ids.value;
  const size_t limit = std::min(prefix.size(), prompt.size());
  return int32_t(std::mismatch(prefix.begin(), prefix.begin() + std::ptrdiff_t(limit), prompt.begin()).first -
                 prefix.begin());
}

}  // namespace lockstep::server
