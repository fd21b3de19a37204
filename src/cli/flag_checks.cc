#include "cli/flag_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cli/cli_util.h"
#include "tokenizer/utf8.h"

namespace lockstep::cli {
namespace {

// 2, 0.5, 1000000 (no "2.000000", no 309 digits).
std::string PlainNumber(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", x);
  return buf;
}

CLI::Validator FiniteNumberCheck(double min, bool min_open, double max) {
  std::string range;
  if (std::isinf(max)) {
    range = (min_open ? "> " : ">= ") + PlainNumber(min);
  } else if (min_open) {
    range = "> " + PlainNumber(min) + " and <= " + PlainNumber(max);
  } else {
    range = "from " + PlainNumber(min) + " to " + PlainNumber(max);
  }
  // For --help, as an interval: "[0, 2]", "(0, 1000000]", "[1, inf)".
  const std::string interval =
      (min_open ? "(" : "[") + PlainNumber(min) + ", " + (std::isinf(max) ? "inf)" : PlainNumber(max) + "]");
  auto check = [min, min_open, max, range](std::string& text) -> std::string {
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    const bool parsed = !text.empty() && end == text.c_str() + text.size();
    if (parsed && std::isfinite(x) && (min_open ? x > min : x >= min) && x <= max) return {};
    return "must be a finite number " + range + ", got '" + text + "'";
  };
  return CLI::Validator(check, interval, "FINITE_NUMBER");
}

// A signed or unsigned 64-bit integer read as CLI11 reads it (strtoll / strtoull, base 0), refusing what
// CLI11 would clamp (ERANGE) or wrap (a '-' for strtoull).
bool ParseInteger(const std::string& text, bool* negative, uint64_t* magnitude) {
  const size_t first = text.find_first_not_of(" \t\n\v\f\r");
  if (first == std::string::npos) return false;
  *negative = text[first] == '-';
  char* end = nullptr;
  errno = 0;
  if (*negative) {
    const long long value = std::strtoll(text.c_str(), &end, 0);
    *magnitude = uint64_t(0) - static_cast<uint64_t>(value);  // -INT64_MIN fits in uint64_t
  } else {
    *magnitude = std::strtoull(text.c_str(), &end, 0);
  }
  if (*magnitude == 0) *negative = false;  // "-0"
  return errno == 0 && end == text.c_str() + text.size();
}

}  // namespace

CLI::Validator IntegerIn(int64_t min, uint64_t max) {
  const std::string range = "from " + std::to_string(min) + " to " + std::to_string(max);
  auto check = [min, max, range](std::string& text) -> std::string {
    bool negative = false;
    uint64_t magnitude = 0;
    if (ParseInteger(text, &negative, &magnitude)) {
      // value >= min: a negative value's magnitude is at most -min; a non-negative one is at least min.
      const bool above_min = negative ? min < 0 && magnitude <= uint64_t(0) - static_cast<uint64_t>(min)
                                      : min <= 0 || magnitude >= static_cast<uint64_t>(min);
      if (above_min && (negative || magnitude <= max)) return {};
    }
    return "must be an integer " + range + ", got '" + text + "'";
  };
  return CLI::Validator(check, "[" + std::to_string(min) + ", " + std::to_string(max) + "]", "INTEGER");
}

CLI::Validator AutoOrIntegerIn(int64_t min, uint64_t max, int64_t auto_value) {
  const CLI::Validator integer = IntegerIn(min, max);
  const std::string range = "from " + std::to_string(min) + " to " + std::to_string(max);
  auto check = [integer, range, auto_value](std::string& text) -> std::string {
    if (text == "auto") {
      text = std::to_string(auto_value);
      return {};
    }
    if (integer(text).empty()) return {};
    return "must be auto or an integer " + range + ", got '" + text + "'";
  };
  return CLI::Validator(check, "auto|[" + std::to_string(min) + ", " + std::to_string(max) + "]",
                        "AUTO_OR_INTEGER");
}

CLI::Validator NotEmpty() {
  auto check = [](std::string& text) -> std::string {
    return text.empty() ? "must not be empty (leave the flag out for its default)" : "";
  };
  return CLI::Validator(check, "", "NOT_EMPTY");
}

CLI::Validator NumberIn(double min, double max) { return FiniteNumberCheck(min, false, max); }

CLI::Validator NumberAbove(double min, double max) { return FiniteNumberCheck(min, true, max); }

void CheckUtf8OrDie(std::string_view text, const std::string& what) {
  const size_t bad = utf8::FindInvalid(text);
  if (bad == std::string_view::npos) return;
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
  Fail(what + " is not valid UTF-8 (byte " + byte + " at offset " + std::to_string(bad) + ")");
}

void CheckQuestionsUtf8OrDie(const std::vector<std::string>& questions, const std::string& source) {
  for (size_t i = 0; i < questions.size(); ++i) {
    CheckUtf8OrDie(questions[i], "question " + std::to_string(i + 1) + " (of " + source + ")");
  }
}

}  // namespace lockstep::cli
