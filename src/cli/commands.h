// Subcommands of the `lockstep` binary. Each Register* adds one subcommand (its flags and its callback) to
// the app; main() calls them all. Commands print errors to stderr and exit 1 on bad input or files.
#pragma once

#include <CLI/CLI.hpp>

namespace lockstep::cli {

void RegisterInfoCommand(CLI::App& app);
void RegisterGenerateCommand(CLI::App& app);
void RegisterChatCommand(CLI::App& app);
void RegisterMakeModelCommand(CLI::App& app);
void RegisterMakeLoraCommand(CLI::App& app);
void RegisterTokenizeCommands(CLI::App& app);  // tokenize, detokenize
void RegisterBatchCommand(CLI::App& app);
void RegisterBenchCommands(CLI::App& app);  // bench batched | compare | serve (cli/bench_command.cc)
void RegisterBenchBatchedCommand(CLI::App& bench);
void RegisterBenchCompareCommand(CLI::App& bench);
void RegisterBenchServeCommand(CLI::App& bench);
void RegisterServeCommand(CLI::App& app);
void RegisterAskCommand(CLI::App& app);
void RegisterPullCommand(CLI::App& app);
void RegisterAdviseCommand(CLI::App& app);
void RegisterPerplexityCommand(CLI::App& app);  // cli/perplexity_command.cc

}  // namespace lockstep::cli
