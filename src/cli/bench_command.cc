// `lockstep bench`: the benchmark command group. Each benchmark is its own subcommand, registered here
// (batched: the engine's batched throughput; compare / serve: HTTP benchmarks added by the client).
#include "cli/commands.h"

namespace lockstep::cli {

void RegisterBenchCommands(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  RegisterBenchBatchedCommand(*bench);
#ifndef LOCKSTEP_SERVER_CLI_ONLY  // the client's benchmarks (CMake option LOCKSTEP_SERVER_CLI_ONLY)
  RegisterBenchCompareCommand(*bench);
  RegisterBenchServeCommand(*bench);
#endif
}

}  // namespace lockstep::cli
