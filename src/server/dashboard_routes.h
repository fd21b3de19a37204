// Dashboard routes (docs/server.md, "Dashboard"): the web page and its files, the live event feed, the
// latency advisor and the question splitter the playground uses.
//   GET /  (Accept: text/html), GET /dashboard, GET /dashboard/<file>   the embedded web/ files; no API key
//                                        needed (they hold no data), served while the model loads too
//   GET /dashboard/events                SSE: one `snapshot` event, then an `update` every interval_ms
//   GET /advisor?questions=N&tokens=M    predicted combined / parallel / sequential wall times (JSON)
//   POST /split {"text": ...}            the questions of a combined prompt, with their prompt token counts
// The last three sit behind --api-key and answer only when the model is ready (routes.cc checks both).
// Handlers run on the connection's strand; the event stream re-arms itself with ResponseWriter::PostAfter and
// ends when the client goes away or the server drains. Thread-safe as routes.h.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/http_server.h"

namespace lockstep::server {

struct RouteState;

// A combined prompt split into questions (what `lockstep ask --split` does).
struct SplitQuestionsResult {
  std::string preamble;                // shared instruction, "" when none
  std::vector<std::string> questions;  // as written
  std::string kind;                    // how the list was recognised
  std::vector<std::string> prompts;    // one per question: the text sent (preamble + question)
};
// The splitter is passed in by the program (cli/), so the server depends on no client code; an empty
// function makes POST /split answer 400 saying so.
using SplitQuestionsFn = std::function<SplitQuestionsResult(const std::string& text)>;

// The web page routes; true when `request` was one of them (answered here).
bool ServeWebPage(RouteState& state, const HttpRequest& request, ResponseWriter& writer);
void StreamDashboardEvents(RouteState& state, const HttpRequest& request,
                           std::shared_ptr<ResponseWriter> writer);
void HandleAdvisor(RouteState& state, const HttpRequest& request, ResponseWriter& writer);
void HandleSplit(RouteState& state, const HttpRequest& request, ResponseWriter& writer);

// The value of `name` in the target's query string ("" when absent; %XX and '+' decoded).
std::string QueryParam(const std::string& target, const std::string& name);

}  // namespace lockstep::server
