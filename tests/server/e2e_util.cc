#include "e2e_util.h"

#include <gtest/gtest.h>

#include "testing/testdata.h"

namespace lockstep::server::testing {
namespace {
std::string MakeModel(const std::string& shape) {
  const std::string path = ::lockstep::testing::MakeTempDir("lockstep-server-model") + "/" + shape + ".gguf";
  const std::string cmd = ::lockstep::testing::LockstepBinary() + " make-model --shape " + shape + " -o " + path +
                          " > /dev/null 2>&1";
  EXPECT_EQ(::lockstep::testing::RunCommand(cmd), 0) << cmd;
  return path;
}
}  // namespace

const std::string& TinyModel() {
  static const std::string path = MakeModel("tiny");
  return path;
}

const std::string& SlowModel() {
  static const std::string path = MakeModel("stories15m");
  return path;
}

std::map<int, std::string> CollectOpenAiText(const std::vector<std::string>& events, bool chat, bool* saw_done) {
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

}  // namespace lockstep::server::testing
