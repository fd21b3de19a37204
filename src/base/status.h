// Status and Result<T>: error values for everything that can come from outside (files, request bodies, CLI
// arguments). A Status is OK or carries a code and a message that names what was wrong and where. Assertions
// (LOCKSTEP_CHECK) are for internal invariants only. Value types; safe to copy between threads.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace lockstep {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // malformed input: a bad file, a bad request field, a bad flag
  kNotFound,           // a file, key, tensor or route that does not exist
  kOutOfRange,         // a value past a limit (context length, offsets)
  kResourceExhausted,  // queue full, KV pool too small, body too large
  kUnavailable,        // not ready, shutting down
  kCancelled,
  kDeadlineExceeded,
  kUnimplemented,  // a valid input we do not support (architecture, tensor type)
  kUnauthenticated,
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message" (or "OK").
  std::string ToString() const;

  // Returns a copy whose message is "context: message" (for adding where an error happened).
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Result<T> holds a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Internal("Result constructed from an OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

[[noreturn]] void CheckFailed(const char* file, int line, const char* condition, const std::string& message);

}  // namespace lockstep

// Internal invariant: aborts with the location when false. Never use for input from outside.
#define LOCKSTEP_CHECK(condition)                                                  \
  do {                                                                             \
    if (!(condition)) ::lockstep::CheckFailed(__FILE__, __LINE__, #condition, ""); \
  } while (0)
#define LOCKSTEP_CHECK_MSG(condition, message)                                            \
  do {                                                                                    \
    if (!(condition)) ::lockstep::CheckFailed(__FILE__, __LINE__, #condition, (message)); \
  } while (0)

// Propagates a non-OK Status out of the enclosing function.
#define LOCKSTEP_RETURN_IF_ERROR(expr)   \
  do {                                   \
    ::lockstep::Status status_ = (expr); \
    if (!status_.ok()) return status_;   \
  } while (0)

#define LOCKSTEP_CONCAT_INNER(a, b) a##b
#define LOCKSTEP_CONCAT(a, b) LOCKSTEP_CONCAT_INNER(a, b)
// LOCKSTEP_ASSIGN_OR_RETURN(auto x, MakeX()); declares x from a Result or returns its Status.
#define LOCKSTEP_ASSIGN_OR_RETURN(lhs, expr) \
  LOCKSTEP_ASSIGN_OR_RETURN_IMPL(LOCKSTEP_CONCAT(result_, __LINE__), lhs, expr)
#define LOCKSTEP_ASSIGN_OR_RETURN_IMPL(result, lhs, expr) \
  auto result = (expr);                                   \
  if (!result.ok()) return result.status();               \
  lhs = std::move(result).value()
