// lockstep: the command-line entry point. Wires the subcommands declared in cli/commands.h.
#include <cstdio>
#include <string>

#include "cli/commands.h"

namespace {

// The subcommands this build has. The ARM check's: the engine's only (info, generate, make-model); the TSan
// check's: those, batch, bench batched and serve, without the client (CMake options LOCKSTEP_ENGINE_CLI_ONLY,
// LOCKSTEP_SERVER_CLI_ONLY). What a discarded `if constexpr` branch calls need not be linked.
#if defined(LOCKSTEP_ENGINE_CLI_ONLY)
constexpr bool kServerCommands = false, kClientCommands = false;
#elif defined(LOCKSTEP_SERVER_CLI_ONLY)
constexpr bool kServerCommands = true, kClientCommands = false;
#else
constexpr bool kServerCommands = true, kClientCommands = true;
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockstep: an LLM inference server and client toolkit"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "lockstep 0.1.0");
  // One line per subcommand (declared in cli/commands.h), added as each lands.
  lockstep::cli::RegisterInfoCommand(app);
  lockstep::cli::RegisterGenerateCommand(app);
  if constexpr (kClientCommands) lockstep::cli::RegisterChatCommand(app);
  lockstep::cli::RegisterMakeModelCommand(app);
  lockstep::cli::RegisterMakeLoraCommand(app);
  if constexpr (kClientCommands) lockstep::cli::RegisterTokenizeCommands(app);
  if constexpr (kServerCommands) {
    lockstep::cli::RegisterBatchCommand(app);
    lockstep::cli::RegisterBenchCommands(app);  // without the client: bench batched only
  }
  if constexpr (kClientCommands) {
    lockstep::cli::RegisterAskCommand(app);
    lockstep::cli::RegisterPullCommand(app);
    lockstep::cli::RegisterPerplexityCommand(app);
  }
  if constexpr (kServerCommands) lockstep::cli::RegisterServeCommand(app);
  if constexpr (kClientCommands) lockstep::cli::RegisterAdviseCommand(app);
  // An unknown first word would otherwise be "A subcommand is required" (CLI11 takes it for an extra).
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->check_name(argv[1]);
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "lockstep: error: unknown command '%s' (commands: %s; lockstep --help)\n", argv[1],
                   names.c_str());
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or --help / --version, exit 0) and would exit 104-114 by error kind; a bad
    // command line is an error like the others: 1.
    return app.exit(e) == 0 ? 0 : 1;
  }
  return 0;
}
