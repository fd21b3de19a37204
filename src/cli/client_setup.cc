#include "cli/client_setup.h"

#include <cstdio>
#include <cstdlib>

#include "cli/cli_util.h"
#include "cli/flag_checks.h"
#include "cli/server_setup.h"
#include "client/endpoints.h"
#include "client/fan_out.h"
#include "server/server.h"

namespace lockstep::cli {
namespace {

// The longest --timeout and --connect-timeout: about 11.6 days (a deadline must not overflow the clock).
constexpr double kMaxTimeoutS = 1e6;

}  // namespace

void AddClientFlags(CLI::App* app, ClientFlags* flags) {
  app->add_option("--url", flags->urls,
                  "Server API root, e.g. http://127.0.0.1:8080/v1 (a bare host gets /v1); repeat it (or use "
                  "commas) to spread requests over replicas")
      ->delimiter(',');
  app->add_option_function<std::string>(
      "--url-file",
      [flags](const std::string& path) {
        const std::vector<std::string> urls = ValueOrDie(client::ReadUrlFile(path));
        flags->urls.insert(flags->urls.end(), urls.begin(), urls.end());
      },
      "File of server URLs, one per line ('#' comments), added to --url");
  app->add_option("--api-key", flags->api_key, "Bearer token (default: $LOCKSTEP_API_KEY)")
      ->check(NotEmpty());
  app->add_option("--ca-file", flags->ca_file, "PEM CA bundle to trust for https (default: system store)")
      ->check(NotEmpty());
  app->add_option("--timeout", flags->timeout_s, "Per-request timeout in seconds (each attempt)")
      ->check(NumberAbove(0, kMaxTimeoutS))
      ->capture_default_str();
  app->add_option("--connect-timeout", flags->connect_timeout_s,
                  "Seconds to look up the host, connect and finish the TLS handshake, within --timeout (a "
                  "failed handshake is not retried)")
      ->check(NumberAbove(0, kMaxTimeoutS))
      ->capture_default_str();
  app->add_option("--retries", flags->retries, "Retries on connection errors, 429 and 502-504")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
}

std::unique_ptr<client::OpenAiClient> MakeClientOrDie(const ClientFlags& flags) {
  client::ClientOptions options;
  if (flags.urls.empty()) Fail("no server URL given (--url)");
  for (size_t i = 0; i < flags.urls.size(); ++i) {
    auto url = client::ApiBaseUrl(flags.urls[i]);
    if (!url.ok()) Fail("--url '" + flags.urls[i] + "': " + url.status().message());
    if (i == 0) {
      options.base_url = *url;
    } else {
      options.more_urls.push_back(*url);
    }
  }
  options.api_key = flags.api_key;
  if (options.api_key.empty()) {
    if (const char* env = std::getenv("LOCKSTEP_API_KEY"); env != nullptr) options.api_key = env;
  }
  options.tls.ca_file = flags.ca_file;
  options.timeout_s = flags.timeout_s;
  options.connect_timeout_s = flags.connect_timeout_s;
  options.retry.max_retries = flags.retries;
  return ValueOrDie(client::OpenAiClient::Create(options));
}

std::unique_ptr<LocalServer> LocalServer::StartOrDie(const std::string& model_path, int threads) {
  server::ServerOptions options;
  options.model_path = model_path;
  options.port = 0;
  options.compute_threads = threads;
  options.drain_timeout_s = 5;
  options.split_questions = QuestionSplitterForServer();
  auto local = std::unique_ptr<LocalServer>(new LocalServer());
  local->server_ = ValueOrDie(server::Server::Create(options));
  auto port = local->server_->Start();
  if (!port.ok()) Fail("starting the in-process server: " + port.status().message());
  std::fprintf(stderr, "lockstep: serving %s in-process at %s\n", model_path.c_str(), local->url().c_str());
  return local;
}

LocalServer::~LocalServer() {
  if (server_) server_->Stop();
}

std::string LocalServer::url() const { return "http://127.0.0.1:" + std::to_string(server_->port()) + "/v1"; }

const std::string& LocalServer::model_id() const { return server_->model_id(); }

std::string EndpointList(const client::OpenAiClient& client) {
  std::string list;
  for (size_t i = 0; i < client.endpoints().size(); ++i) {
    list += (i > 0 ? ", " : "") + client.endpoints().url(i).ToString();
  }
  return list;
}

std::string ModelOrFirstListed(client::OpenAiClient& client, const std::string& model) {
  if (!model.empty()) return model;
  int http_status = 0;
  auto models = client::RunBlocking(client.ListModels(nullptr, &http_status));
  if (models.ok()) return models->empty() ? std::string() : models->front();
  // No answer, for a reason the requests do not retry either (a failed TLS handshake or certificate, a
  // timeout; a refused connection is retried: the server may be starting): they would wait for the same
  // error.
  if (http_status == 0 && models.status().code() != StatusCode::kUnavailable) {
    Fail("cannot list the server's models: " + models.status().message());
  }
  std::fprintf(stderr,
               "lockstep: warning: cannot list the server's models (%s); the requests name no model\n",
               models.status().message().c_str());
  return std::string();
}

BenchTarget ConnectBenchTargetOrDie(ClientFlags flags, const std::string& model_path, int threads,
                                    const std::string& model) {
  BenchTarget target;
  if (!model_path.empty()) {
    target.local = LocalServer::StartOrDie(model_path, threads);
    flags.urls = {target.local->url()};
  }
  target.client = MakeClientOrDie(flags);
  target.server = target.local ? "lockstep (in-process, " + model_path + ")" : EndpointList(*target.client);
  target.model =
      ModelOrFirstListed(*target.client, model.empty() && target.local ? target.local->model_id() : model);
  return target;
}

}  // namespace lockstep::cli
