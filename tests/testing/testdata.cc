#include "testing/testdata.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace lockstep::testing {

std::string TestDataDir() {
  if (const char* env = std::getenv("LOCKSTEP_TESTDATA"); env != nullptr && *env != '\0') {
    return std::filesystem::exists(env) ? std::string(env) : std::string();
  }
  const std::filesystem::path beside =
      std::filesystem::path(LOCKSTEP_SOURCE_DIR).parent_path() / "shared" / "testdata";
  return std::filesystem::exists(beside) ? beside.string() : std::string();
}

std::string TestDataPath(const std::string& relative) { return TestDataDir() + "/" + relative; }

std::string LockstepBinary() {
  const char* env = std::getenv("LOCKSTEP_BINARY");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(LOCKSTEP_BINARY);
}

std::string MakeTempDir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      (prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

int RunCommand(const std::string& command, std::string* out) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    if (out != nullptr) out->append(buffer.data(), n);
  }
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace lockstep::testing
