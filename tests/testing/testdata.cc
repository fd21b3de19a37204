#include "testing/testdata.h"

#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

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

namespace {

// Every scratch directory of this test process lies under one root, <temp>/lockstep-tests-<pid>, removed when
// the process exits (unless LOCKSTEP_KEEP_TEMP is set): the tests write models of several MB each, and
// leaving them behind filled a CI machine's disk. Only the process that made the root removes it (a forked
// child that exits must not delete its parent's files).
struct TempRoot {
  std::filesystem::path path;
  pid_t owner = 0;
};

TempRoot& Root() {
  static TempRoot root;
  return root;
}

void RemoveTempRoot() {
  const TempRoot& root = Root();
  if (root.owner != getpid() || root.path.empty()) return;
  if (const char* keep = std::getenv("LOCKSTEP_KEEP_TEMP"); keep != nullptr && *keep != '\0') return;
  std::error_code ignored;
  std::filesystem::remove_all(root.path, ignored);
}

const std::filesystem::path& TempRootPath() {
  static const std::filesystem::path& path = []() -> const std::filesystem::path& {
    TempRoot& root = Root();
    root.owner = getpid();
    root.path = std::filesystem::temp_directory_path() / ("lockstep-tests-" + std::to_string(getpid()));
    std::filesystem::remove_all(root.path);
    std::filesystem::create_directories(root.path);
    std::atexit(RemoveTempRoot);
    return root.path;
  }();
  return path;
}

}  // namespace

std::string MakeTempDir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const std::filesystem::path dir = TempRootPath() / (prefix + "-" + std::to_string(counter++));
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
