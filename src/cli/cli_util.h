// Small helpers shared by the subcommands: reporting a failed Status and exiting with code 1, and reading the
// files that flags name.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace lockstep::cli {

// `text` with each NUL byte shown as \0, for printing with %s (which would end the text there).
std::string ShowNul(const std::string& text);

// Prints "lockstep: error: <message>" to stderr and exits with status 1. A NUL byte in the message is shown
// as \0 (it does not end the message).
[[noreturn]] void Fail(const std::string& message);
[[noreturn]] void Fail(const Status& status);

// Returns the value or Fail()s with its status.
template <typename T>
T ValueOrDie(Result<T> result) {
  if (!result.ok()) Fail(result.status());
  return std::move(result).value();
}
// The same, its message prefixed with "<context>: ".
template <typename T>
T ValueOrDie(Result<T> result, const std::string& context) {
  if (!result.ok()) Fail(result.status().WithContext(context));
  return std::move(result).value();
}

// The bytes of the file a flag names ("-": standard input), exactly; Fail()s naming the flag and the file
// when it cannot be read or is a directory (base/file_util.h). Every CLI file flag reads through this.
std::string ReadFlagFileOrDie(const std::string& path, const std::string& flag);
// Writes `bytes` to the file a flag names (created or replaced); Fail()s "<flag>: cannot write '<path>'".
// Check the path first (base/file_util.h's CheckOutputFile) when it takes long work to get `bytes`.
void WriteFlagFileOrDie(const std::string& path, const std::string& flag, const std::string& bytes);

// The lines of `text` ('\n' ends a line, a '\r' before it is dropped; a last line without '\n' counts).
std::vector<std::string> SplitLines(const std::string& text);

// True when `line` holds only spaces and tabs (or nothing).
bool IsBlank(const std::string& line);

}  // namespace lockstep::cli
