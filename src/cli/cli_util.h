// Small helpers shared by the subcommands: reporting a failed Status and exiting with code 1.
#pragma once

#include <string>

#include "base/status.h"

namespace lockstep::cli {

// Prints "lockstep: error: <message>" to stderr and exits with status 1.
[[noreturn]] void Fail(const std::string& message);
[[noreturn]] void Fail(const Status& status);

// Returns the value or Fail()s with its status.
template <typename T>
T ValueOrDie(Result<T> result) {
  if (!result.ok()) Fail(result.status());
  return std::move(result).value();
}

}  // namespace lockstep::cli
