// Hugging Face hub downloads (`lockstep pull REPO/FILE`): GET {endpoint}/{repo}/resolve/{revision}/{file}
// over https, following redirects (to the CDN), streaming into DIR/FILE.part and renaming it when complete.
// Resumes a .part left by an interrupted run with a Range request (and after connection drops, up to
// `retries` times); checks the size (X-Linked-Size, Content-Range or Content-Length) and the SHA-256
// (X-Linked-Etag, or an ETag that is a SHA-256, as the hub sends for LFS files) with OpenSSL, removing the
// .part on a mismatch; a file that does not start with the GGUF magic is removed too. The endpoint is
// overridable (--endpoint / HF_ENDPOINT) and a token ($HF_TOKEN) is sent as a Bearer header to the hub only
// (never to a redirect target on another host). Blocking; runs on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "client/cancellation.h"
#include "client/http_connection.h"

namespace lockstep::client {

struct PullOptions {
  std::string endpoint = "https://huggingface.co";
  std::string repo_file;  // "OWNER/REPO/path/to/FILE.gguf"
  std::string revision = "main";
  std::string out_dir = ".";
  std::string token;  // hub access token ("" = none)
  TlsOptions tls;
  double idle_timeout_s = 60;  // a connect or read making no progress this long fails the attempt
  int retries = 3;
};

// (bytes on disk so far, expected total or 0 when unknown)
using PullProgressFn = std::function<void(uint64_t done, uint64_t total)>;

// Returns the path of the downloaded file.
Result<std::string> PullFile(const PullOptions& options, CancellationToken* token,
                             const PullProgressFn& progress = {});

// Lower-case hex SHA-256 of a file.
Result<std::string> Sha256File(const std::string& path);

}  // namespace lockstep::client
