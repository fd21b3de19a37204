#include "cli/cli_util.h"

#include <cstdio>
#include <cstdlib>

namespace lockstep::cli {

void Fail(const std::string& message) {
  std::fprintf(stderr, "lockstep: error: %s\n", message.c_str());
  std::fflush(stdout);
  std::exit(1);
}

void Fail(const Status& status) { Fail(status.message()); }

}  // namespace lockstep::cli
