// fan_out_example: the lockstep client library in a few lines. Sends each question to an OpenAI-compatible
// server as its own streamed request, all at once, and prints the answers in order with their timings.
//
//   fan_out_example http://127.0.0.1:8080/v1 "What is 2+2?" "Name a colour."
//
// Ctrl-C cancels every request in flight (RunFanOut's cancel_on_sigint).
#include <cstdio>

#include "client/chat_client.h"
#include "client/fan_out.h"

int main(int argc, char** argv) {
  using namespace lockstep::client;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s URL QUESTION...\n", argv[0]);
    return 2;
  }
  auto url = ApiBaseUrl(argv[1]);
  if (!url.ok()) {
    std::fprintf(stderr, "%s\n", url.status().message().c_str());
    return 2;
  }
  ClientOptions options;
  options.base_url = *url;
  options.timeout_s = 120;
  auto client = OpenAiClient::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().message().c_str());
    return 1;
  }
  std::vector<ChatRequest> requests;
  for (int i = 2; i < argc; ++i) {
    ChatRequest r;
    r.messages = {{"user", argv[i]}};
    r.max_tokens = 64;
    requests.push_back(r);
  }
  CancellationToken token;
  const auto results =
      RunFanOut(**client, requests, /*concurrency=*/0, &token, {}, /*cancel_on_sigint=*/true);
  for (size_t i = 0; i < results.size(); ++i) {
    const ChatResult& r = results[i];
    if (!r.status.ok()) {
      std::printf("%zu. error: %s\n", i + 1, r.status.message().c_str());
      continue;
    }
    std::printf("%zu. %s\n   (first token %.3f s, %d tokens, %.3f s)\n", i + 1, r.content.c_str(), r.ttft_s,
                r.completion_tokens, r.duration_s);
  }
  return 0;
}
