// Checks of what the subcommands take from the command line and from files, with messages that name the flag
// and what it allows:
// - NumberIn / NumberAbove: CLI11 checks of numeric flags that refuse NaN and infinities and say the range
//   in plain numbers (CLI11's PositiveNumber, NonNegativeNumber and Range let NaN through and print DBL_MAX
//   in full, 309 digits);
// - IntegerIn: the same for integer flags (CLI11 clamps a value beyond int64 to its limit and wraps a
//   negative one for an unsigned flag: --seed 99999999999999999999 became 9223372036854775807, -1 became
//   18446744073709551615, serve --max-body -1 no limit at all);
// - AutoOrIntegerIn: IntegerIn, or the word auto standing for a value outside the range;
// - NotEmpty: a CLI11 check of text flags for which an empty value means nothing (`--json "$UNSET"` wrote
//   no file, `--api-key ""` fell back to $LOCKSTEP_API_KEY, `--kv-memory ""` meant the automatic size);
// - CheckUtf8OrDie: text that goes into a JSON request (questions, --model-name) or to a tokenizer (a
//   prompt) must be valid UTF-8.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::cli {

inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();
// The largest value of an `int` flag (CLI11 refuses a larger one only as "Could not convert").
inline constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
// --kv-tokens at most: the most a KV pool can hold (2^30 blocks of at most 1024 tokens, kv/block_pool.h), so
// that rounding it up to whole blocks cannot overflow (99999999999999999999 was clamped to INT64_MAX and the
// engine then read a negative number of blocks).
inline constexpr int64_t kMaxKvTokens = int64_t(1) << 40;
// --temperature of the client commands: the OpenAI API's range, 0 to 2 (lockstep's server keeps it too).
inline constexpr double kMaxTemperature = 2;

// The value is a finite number with min <= value <= max. Fails as "--temperature: must be a finite number
// from 0 to 2, got 'nan'"; --help shows the range as "[0, 2]".
CLI::Validator NumberIn(double min, double max = kNoLimit);
// The value is a finite number with min < value <= max ("must be a finite number > 0, got '0'").
CLI::Validator NumberAbove(double min, double max = kNoLimit);

// The value is an integer (as CLI11 reads it: decimal, 0x hex or 0 octal) with min <= value <= max. Fails
// as "--seed: must be an integer from -1 to 9223372036854775807, got '99999999999999999999'"; --help shows
// "[-1, 9223372036854775807]".
CLI::Validator IntegerIn(int64_t min, uint64_t max);

// The value is "auto", which becomes `auto_value` (outside min..max), or an integer as IntegerIn takes it.
// Fails as "--recurrent-cache-slots: must be auto or an integer from 0 to 2147483647, got 'x'"; --help
// shows "auto|[0, 2147483647]".
CLI::Validator AutoOrIntegerIn(int64_t min, uint64_t max, int64_t auto_value);

// The value is not empty. Fails as "--json: must not be empty (leave the flag out for its default)"; --help
// shows nothing more. For flags whose default is what they do when left out, so that an empty value (an unset
// shell variable) is refused rather than taken as the default.
CLI::Validator NotEmpty();

// Fail()s unless `text` is valid UTF-8: "<what> is not valid UTF-8 (byte 0xFF at offset 3)".
void CheckUtf8OrDie(std::string_view text, const std::string& what);
// The same for each question, named by its position: "question 2 (of <source>) is not valid UTF-8 ...".
void CheckQuestionsUtf8OrDie(const std::vector<std::string>& questions, const std::string& source);

}  // namespace lockstep::cli
