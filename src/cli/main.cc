// lockstep: the command-line entry point. Wires the subcommands declared in cli/commands.h.
#include <cstdio>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"lockstep: an LLM inference server and client toolkit"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "lockstep 0.1.0");
  // One line per subcommand (declared in cli/commands.h), added as each lands.
  lockstep::cli::RegisterInfoCommand(app);
  lockstep::cli::RegisterGenerateCommand(app);
#ifndef LOCKSTEP_ENGINE_CLI_ONLY  // the ARM check's build (CMake option LOCKSTEP_ENGINE_CLI_ONLY)
  lockstep::cli::RegisterChatCommand(app);
#endif
  lockstep::cli::RegisterMakeModelCommand(app);
#ifndef LOCKSTEP_ENGINE_CLI_ONLY
  lockstep::cli::RegisterTokenizeCommands(app);
  lockstep::cli::RegisterBatchCommand(app);
  lockstep::cli::RegisterBenchCommands(app);
  lockstep::cli::RegisterAskCommand(app);
  lockstep::cli::RegisterPullCommand(app);
  lockstep::cli::RegisterServeCommand(app);
  lockstep::cli::RegisterAdviseCommand(app);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
