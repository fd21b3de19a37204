// Set-up shared by `lockstep serve` and the client commands' in-process server (-m MODEL,
// cli/client_setup.h): the question splitter behind the server's POST /split (the playground). Apart from
// client_setup.cc so that `serve` builds without the client library (CMake option LOCKSTEP_SERVER_CLI_ONLY:
// the TSan check's build).
#pragma once

#include "server/dashboard_routes.h"

namespace lockstep::cli {

// The client's question splitter (`ask --split`, text/question_splitter.h) for the server's POST /split.
server::SplitQuestionsFn QuestionSplitterForServer();

}  // namespace lockstep::cli
