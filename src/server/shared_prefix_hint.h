// SharedPrefixHint: for models whose prefix cache needs state snapshots (qwen35;
// Request::shared_prefix_hint), the number of leading prompt tokens that render a chat request's leading
// system (and developer) messages — the part other conversations with the same system message share, so the
// engine snapshots the state there. Renders those messages and an empty user message with the request's tools
// and template variables (no generation prompt) and counts the tokens that agree with the whole prompt's. 0
// when the messages do not start with a system message followed by others, or that rendering fails (the hint
// is only a hint: the output is the same). Thread-safe (reads the immutable ApiContext).
#pragma once

#include <cstdint>
#include <vector>

#include "chat/chat_template.h"
#include "server/api_context.h"

namespace lockstep::server {

int32_t SharedPrefixHint(const ApiContext& ctx, const chat::ChatTemplateInput& input,
                         const std::vector<int32_t>& prompt);

}  // namespace lockstep::server
