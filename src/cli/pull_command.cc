// `lockstep pull OWNER/REPO/FILE.gguf [-o DIR]`: downloads a GGUF from the Hugging Face hub over https with a
// progress bar (on a terminal), resume of an interrupted download, and size / SHA-256 checks when the hub
// gives them. --endpoint (or $HF_ENDPOINT) points at a mirror; $HF_TOKEN is sent for gated repos; --ca-file
// (or $SSL_CERT_FILE) trusts another CA. Ctrl-C stops cleanly and keeps the .part for a later resume.
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "client/hub_download.h"

namespace lockstep::cli {
namespace {

struct PullFlags {
  std::string repo_file;
  std::string out_dir = ".";
  std::string endpoint;
  std::string revision = "main";
  std::string ca_file;
  int retries = 3;
};

class ProgressBar {
 public:
  void Update(uint64_t done, uint64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100) && done != total) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double mib = done / 1048576.0, rate = secs > 0 ? mib / secs : 0;
    if (total > 0) {
      const int width = 30, filled = static_cast<int>(width * static_cast<double>(done) / total);
      std::fprintf(stderr, "\r[%s%s] %5.1f%% %.1f/%.1f MiB %.1f MiB/s ", std::string(filled, '#').c_str(),
                   std::string(width - filled, ' ').c_str(), 100.0 * done / total, mib, total / 1048576.0,
                   rate);
    } else {
      std::fprintf(stderr, "\r%.1f MiB %.1f MiB/s ", mib, rate);
    }
    std::fflush(stderr);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

void RunPull(const PullFlags& f) {
  client::PullOptions o;
  o.repo_file = f.repo_file;
  o.out_dir = f.out_dir;
  o.revision = f.revision;
  o.retries = f.retries;
  o.tls.ca_file = f.ca_file;
  o.endpoint = f.endpoint;
  if (o.endpoint.empty()) {
    const char* env = std::getenv("HF_ENDPOINT");
    o.endpoint = env != nullptr && *env != '\0' ? env : "https://huggingface.co";
  }
  if (const char* token = std::getenv("HF_TOKEN"); token != nullptr) o.token = token;
  const std::string dest =
      (std::filesystem::path(f.out_dir) / std::filesystem::path(f.repo_file).filename()).string();
  if (std::filesystem::exists(dest)) {
    std::printf("%s already exists (delete it to download again)\n", dest.c_str());
    return;
  }
  // Ctrl-C: cancel the download (the .part stays for a resume).
  client::CancellationToken token;
  boost::asio::io_context signal_io;
  boost::asio::signal_set signals(signal_io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) token.Cancel();
  });
  std::thread signal_thread([&] { signal_io.run(); });
  ProgressBar bar;
  client::PullProgressFn progress;
  if (isatty(STDERR_FILENO)) progress = [&](uint64_t done, uint64_t total) { bar.Update(done, total); };
  auto result = client::PullFile(o, &token, progress);
  if (progress) std::fprintf(stderr, "\n");
  signals.cancel();
  signal_thread.join();
  if (!result.ok()) Fail(result.status());
  std::printf("%s\n", result->c_str());
}

}  // namespace

void RegisterPullCommand(CLI::App& app) {
  auto flags = std::make_shared<PullFlags>();
  CLI::App* cmd = app.add_subcommand("pull", "Download a GGUF file from the Hugging Face hub");
  cmd->add_option("repo_file", flags->repo_file, "OWNER/REPO/FILE.gguf")->required();
  cmd->add_option("-o,--output-dir", flags->out_dir, "Directory to write to")->check(NotEmpty());
  cmd->add_option("--endpoint", flags->endpoint, "Hub URL (default: $HF_ENDPOINT or https://huggingface.co)")
      ->check(NotEmpty());
  cmd->add_option("--revision", flags->revision, "Branch, tag or commit")->check(NotEmpty());
  cmd->add_option("--ca-file", flags->ca_file,
                  "PEM CA bundle to trust (default: system store / $SSL_CERT_FILE)")
      ->check(NotEmpty());
  cmd->add_option("--retries", flags->retries, "Retries (with resume) after connection errors")
      ->check(CLI::Range(0, 100));
  cmd->callback([flags] { RunPull(*flags); });
}

}  // namespace lockstep::cli
