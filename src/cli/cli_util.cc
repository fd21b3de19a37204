#include "cli/cli_util.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "base/file_util.h"

namespace lockstep::cli {

std::string ShowNul(const std::string& text) {
  std::string shown;
  for (char c : text) {
    if (c == '\0') {
      shown += "\\0";
    } else {
      shown += c;
    }
  }
  return shown;
}

void Fail(const std::string& message) {
  std::fprintf(stderr, "lockstep: error: %s\n", ShowNul(message).c_str());
  std::fflush(stdout);
  std::exit(1);
}

void Fail(const Status& status) { Fail(status.message()); }

std::string ReadFlagFileOrDie(const std::string& path, const std::string& flag) {
  return ValueOrDie(ReadFlagFile(path, flag));
}

void WriteFlagFileOrDie(const std::string& path, const std::string& flag, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  out.close();
  if (!out) Fail(flag + ": cannot write '" + path + "'");
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

bool IsBlank(const std::string& line) { return line.find_first_not_of(" \t") == std::string::npos; }

}  // namespace lockstep::cli
