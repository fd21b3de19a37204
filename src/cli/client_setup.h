// Shared set-up for the client subcommands (ask, bench compare, bench serve): the connection flags (--url,
// repeatable, and --url-file: requests spread over several replicas; --api-key / LOCKSTEP_API_KEY, --ca-file,
// --timeout, --connect-timeout, --retries), building an OpenAiClient from them, the
// model to ask for, and, for `-m MODEL`, a lockstep server started in-process on a free loopback port
// (stopped when the LocalServer is destroyed). Used only by cli/ (the client library itself never depends on
// the server).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "client/chat_client.h"
#include "server/dashboard_routes.h"

namespace lockstep::server {
class Server;
}

namespace lockstep::cli {

struct ClientFlags {
  std::vector<std::string> urls;  // --url (repeatable, or comma-separated) and the lines of --url-file
  std::string api_key;
  std::string ca_file;
  double timeout_s = 600;
  double connect_timeout_s = client::kDefaultConnectTimeoutS;
  int retries = 3;
};

// Adds --url and --url-file (optional here; commands decide), --api-key, --ca-file, --timeout,
// --connect-timeout, --retries.
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

// The client's endpoint URLs, comma-separated (for reports).
std::string EndpointList(const client::OpenAiClient& client);

// `model` if given, else the first model the server lists: empty when it lists none or cannot be asked (with
// a warning on stderr). Fail()s when the look-up could not get an answer and the requests could not either
// (a failed TLS handshake, a certificate, a timeout): no second wait for the same error.
std::string ModelOrFirstListed(client::OpenAiClient& client, const std::string& model);

// What a benchmark talks to: with a model_path (-m MODEL) a lockstep server started in-process, otherwise
// flags.url.
struct BenchTarget {
  std::unique_ptr<LocalServer> local;  // declared first: outlives the client
  std::unique_ptr<client::OpenAiClient> client;
  std::string server;  // for reports: "lockstep (in-process, PATH)" or the server's URL
  std::string model;   // `model`, else the in-process model's id, else the first the server lists
};
BenchTarget ConnectBenchTargetOrDie(ClientFlags flags, const std::string& model_path, int threads,
                                    const std::string& model);

}  // namespace lockstep::cli
