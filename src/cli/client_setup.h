// Shared set-up for the client subcommands (ask, bench compare, bench serve): the connection flags (--url,
// --api-key / LOCKSTEP_API_KEY, --ca-file, --timeout, --retries), building an OpenAiClient from them, and,
// for
// `-m MODEL`, a lockstep server started in-process on a free loopback port (stopped when the LocalServer is
// destroyed). Used only by cli/ (the client library itself never depends on the server).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "client/chat_client.h"

namespace lockstep::server {
class Server;
}

namespace lockstep::cli {

struct ClientFlags {
  std::string url;
  std::string api_key;
  std::string ca_file;
  double timeout_s = 600;
  int retries = 3;
};

// Adds --url (optional here; commands decide), --api-key, --ca-file, --timeout, --retries.
void AddClientFlags(CLI::App* app, ClientFlags* flags);

// Builds the client; the API key falls back to $LOCKSTEP_API_KEY. Fail()s on a bad URL or CA file.
std::unique_ptr<client::OpenAiClient> MakeClientOrDie(const ClientFlags& flags);

// A lockstep server running in this process (for -m MODEL).
class LocalServer {
 public:
  // Loads `model_path` and serves it on 127.0.0.1 at a free port; Fail()s with the reason on error.
  static std::unique_ptr<LocalServer> StartOrDie(const std::string& model_path, int threads);
  ~LocalServer();
  std::string url() const;  // http://127.0.0.1:PORT/v1
  const std::string& model_id() const;

 private:
  std::unique_ptr<server::Server> server_;
};

}  // namespace lockstep::cli
