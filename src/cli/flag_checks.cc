#include "cli/flag_checks.h"

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

}  // namespace

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
