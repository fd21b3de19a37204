#include "e2e_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "gguf/gguf_writer.h"
#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {
std::string MakeModel(const std::string& shape, const std::string& flags = "") {
  const std::string path = ::lockstep::testing::MakeTempDir("lockstep-server-model") + "/" + shape + ".gguf";
  const std::string cmd = ::lockstep::testing::LockstepBinary() + " make-model --shape " + shape + flags +
                          " -o " + path + " > /dev/null 2>&1";
  EXPECT_EQ(::lockstep::testing::RunCommand(cmd), 0) << cmd;
  return path;
}
}  // namespace

const std::string& TinyModel() {
  static const std::string path = MakeModel("tiny");
  return path;
}

const std::string& RerankModel() {
  static const std::string path = MakeModel("tiny-qwen3-reranker");
  return path;
}

const std::string& BertModel() {
  static const std::string path = MakeModel(
      "tiny-bert", " --vocab-from " + ::lockstep::testing::TestDataPath("vocab/ggml-vocab-bert-bge.gguf"));
  return path;
}

const std::string& BertRerankModel() {
  static const std::string path =
      MakeModel("tiny-bert-reranker",
                " --vocab-from " + ::lockstep::testing::TestDataPath("vocab/ggml-vocab-bert-bge.gguf"));
  return path;
}

const std::string& RecurrentModel() {
  static const std::string path = MakeModel("tiny-qwen35");
  return path;
}

const std::string& SlowModel() {
  static const std::string path = MakeModel("stories15m");
  return path;
}

std::string TinyModelWithVocabulary(const GgufWriter& vocabulary) {
  const std::string dir = ::lockstep::testing::MakeTempDir("lockstep-toy-vocab");
  const Status written = vocabulary.WriteFile(dir + "/vocab.gguf");
  EXPECT_TRUE(written.ok()) << written.ToString();
  return MakeModel("tiny", " --vocab-from " + dir + "/vocab.gguf");
}

std::string GoldenChatTemplate(const std::string& family) {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/chat/testdata/tool_template_goldens.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in)["templates"][family].get<std::string>();
}

StreamedChat StreamChat(int port, nlohmann::json body) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  StreamedChat out;
  for (const std::string& data : Stream(port, "/v1/chat/completions", body)) {
    const nlohmann::json chunk = nlohmann::json::parse(data, nullptr, false);
    if (!chunk.is_object()) continue;
    if (chunk["usage"].is_object()) out.usage = chunk["usage"];
    if (chunk["choices"].empty()) continue;
    const nlohmann::json& choice = chunk["choices"][0];
    const nlohmann::json& delta = choice["delta"];
    if (delta.contains("reasoning_content")) {
      out.reasoning += delta["reasoning_content"].get<std::string>();
      out.has_reasoning = true;
    }
    if (delta.contains("content") && delta["content"].is_string()) out.content += delta["content"];
    for (const nlohmann::json& call : delta.value("tool_calls", nlohmann::json::array())) {
      ++out.calls;
      out.names += call["function"].value("name", "");
      out.arguments += call["function"].value("arguments", "");
    }
    if (choice["finish_reason"].is_string()) out.finish_reason = choice["finish_reason"];
  }
  return out;
}

std::map<int, std::string> CollectOpenAiText(const std::vector<std::string>& events, bool chat,
                                             bool* saw_done) {
  std::map<int, std::string> text;
  *saw_done = !events.empty() && events.back() == "[DONE]";
  for (const std::string& e : events) {
    if (e == "[DONE]") continue;
    const auto j = nlohmann::json::parse(e, nullptr, false);
    if (!j.is_object() || !j.contains("choices")) continue;
    for (const auto& c : j["choices"]) {
      const int index = c["index"].get<int>();
      if (chat) {
        if (c["delta"].contains("content")) text[index] += c["delta"]["content"].get<std::string>();
      } else {
        text[index] += c["text"].get<std::string>();
      }
    }
  }
  return text;
}

double Metric(int port, const std::string& sample) {
  return MetricValue(Request(port, "GET", "/metrics").body, sample);
}

// Polls /metrics until nothing runs or waits and no KV is in use.
bool WaitForIdleEngine(int port) {
  std::string m;
  for (int i = 0; i < 500; ++i) {
    m = Request(port, "GET", "/metrics").body;
    if (MetricValue(m, "lockstep_num_requests_running") == 0 &&
        MetricValue(m, "lockstep_num_requests_waiting") == 0 &&
        MetricValue(m, "lockstep_kv_cache_usage_ratio") == 0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "engine not idle; running " << MetricValue(m, "lockstep_num_requests_running")
                << " waiting " << MetricValue(m, "lockstep_num_requests_waiting") << " kv "
                << MetricValue(m, "lockstep_kv_cache_usage_ratio");
  return false;
}

// Polls /metrics until `sample` reaches `value` (false after ~10 s).
std::vector<std::string> StreamAndSignalOnceStarted(ServerProcess& server, const std::string& path,
                                                    const nlohmann::json& body, int signal) {
  std::atomic<bool> started{false};
  std::vector<std::string> events;
  std::thread client([&] {
    events = Stream(server.port(), path, body, [&](size_t, const std::string&) {
      started = true;
      return true;
    });
  });
  for (int i = 0; i < 5000 && !started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  server.Signal(signal);
  client.join();
  return events;
}

double SecondsForOneRequest(int port, const std::string& path, const nlohmann::json& body) {
  const auto start = std::chrono::steady_clock::now();
  const HttpResponse r = Post(port, path, body);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, 200) << path << ": " << r.body;
  return seconds;
}

bool WaitForMetric(int port, const std::string& sample, double value) {
  for (int i = 0; i < 500; ++i) {
    if (Metric(port, sample) >= value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace lockstep::server::testing
