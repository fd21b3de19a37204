// Flag values the CLI changed, cut or checked too late without a word, run through the real binary:
// regression tests for the CLI audit. A refused value exits 1 with a message naming the flag and the value.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli/cli_fixture.h"

namespace lockstep::testing {
namespace {

class FlagValuesTest : public CliTest {
 protected:
  // Runs ARGS: exit code 1 and `message` on stderr.
  static void ExpectRefused(const std::string& args, const std::string& message) {
    std::string out, err;
    EXPECT_EQ(Lockstep(args, &out, &err), 1) << args << "\n" << err;
    EXPECT_NE(err.find(message), std::string::npos) << args << "\n" << err;
  }
};

// --seed 99999999999999999999 became 9223372036854775807 (CLI11 reads it with strtoll and ignores ERANGE).
TEST_F(FlagValuesTest, SeedBeyondInt64IsRefused) {
  const std::string m = " -m " + *model_ + " -t 1 -n 1";
  const std::string range = "--seed: must be an integer from -1 to 9223372036854775807, got ";
  ExpectRefused("generate" + m + " -p hi --seed 99999999999999999999", range + "'99999999999999999999'");
  ExpectRefused("generate" + m + " -p hi --seed -2", range + "'-2'");
  ExpectRefused("chat" + m + " --seed 9223372036854775808 < /dev/null", range + "'9223372036854775808'");

  std::string out, err;
  EXPECT_EQ(Lockstep("generate" + m + " -p hi --seed 9223372036854775807", &out, &err), 0) << err;
  EXPECT_NE(err.find("seed 9223372036854775807,"), std::string::npos) << err;
}

// chat -c 100000 was cut to the model's 256 tokens without a word; -c 1 had a message naming no flag.
TEST_F(FlagValuesTest, ChatRefusesAContextBeyondTheModels) {
  const std::string chat = "chat -m " + *model_ + " -t 1 -n 2 < /dev/null -c ";
  const std::string range = "-c/--ctx-size must be from 2 to 256 (the model's context), or 0 for the default";
  ExpectRefused(chat + "100000", range + "; got 100000");
  ExpectRefused(chat + "257", range + "; got 257");
  ExpectRefused(chat + "1", range + "; got 1");
  ExpectRefused(chat + "99999999999999999999",
                "--ctx-size: must be an integer from 0 to 9223372036854775807, got '99999999999999999999'");

  std::string out, err;
  EXPECT_EQ(Lockstep(chat + "256", &out, &err), 0) << err;
  EXPECT_EQ(Lockstep(chat + "0", &out, &err), 0) << err;
}

// make-model --seed -1 wrote the model of seed 18446744073709551615 (CLI11 reads unsigned flags with
// strtoull, which wraps a negative number); bench serve's --seed the same.
TEST_F(FlagValuesTest, NegativeUnsignedSeedIsRefused) {
  const std::string output = *dir_ + "/seed.gguf";
  const std::string range = "--seed: must be an integer from 0 to 18446744073709551615, got '-1'";
  ExpectRefused("make-model --shape tiny --seed -1 -o " + output, range);
  EXPECT_FALSE(std::filesystem::exists(output));
  ExpectRefused("bench serve --url http://127.0.0.1:1 --model-name x --requests 1 --seed -1", range);

  std::string out, err;
  EXPECT_EQ(Lockstep("make-model --shape tiny --seed 18446744073709551615 -o " + output, &out, &err), 0)
      << err;
}

// serve --max-body -1 served bodies of any size (CLI11 reads an unsigned flag with strtoull, which wraps -1
// to 18446744073709551615); --kv-tokens 99999999999999999999 became INT64_MAX, which the engine rounded up to
// a negative number of blocks; bench batched --max-batch-tokens -1 meant the default. Refused now, naming
// the flag and its range, before anything is loaded or listened on. (--timeout -1, refused later, stops a
// serve whose flags were all taken.)
TEST_F(FlagValuesTest, IntegerFlagsOutOfRangeAreRefused) {
  const std::string serve = "serve -m " + *model_ + " -t 1 --port 0 --timeout -1 ";
  const std::string body = "--max-body: must be an integer from 0 to 18446744073709551615, got ";
  ExpectRefused(serve + "--max-body -1", body + "'-1'");
  ExpectRefused(serve + "--max-body 18446744073709551616", body + "'18446744073709551616'");
  const std::string kv = "--kv-tokens: must be an integer from 0 to 1099511627776, got ";
  ExpectRefused(serve + "--kv-tokens 99999999999999999999", kv + "'99999999999999999999'");
  const std::string text = Write("ppl.txt", "The quick brown fox jumps over the lazy dog. ");
  ExpectRefused("perplexity -m " + *model_ + " -f " + text + " -c 8 --kv-tokens -1", kv + "'-1'");
  ExpectRefused(serve + "--port 70000", "--port: must be an integer from 0 to 65535, got '70000'");
  ExpectRefused(serve + "--io-threads 99999999999",
                "--io-threads: must be an integer from 1 to 256, got '99999999999'");
  ExpectRefused(serve + "--max-connections -1",
                "--max-connections: must be an integer from 0 to 2147483647, got '-1'");
  ExpectRefused(serve + "--max-seqs 0", "--max-seqs: must be an integer from 1 to 2147483647, got '0'");
  ExpectRefused(serve + "--recurrent-slots -1",
                "--recurrent-slots: must be an integer from 0 to 2147483647, got '-1'");
  const std::string cache = "--recurrent-cache-slots: must be auto or an integer from 0 to 2147483647, got ";
  ExpectRefused(serve + "--recurrent-cache-slots -1", cache + "'-1'");
  ExpectRefused(serve + "--recurrent-cache-slots automatic", cache + "'automatic'");
  ExpectRefused(serve + "--recurrent-cache-slots ''", cache + "''");
  ExpectRefused(serve + "--max-seqs 2 --recurrent-slots 3",
                "--recurrent-slots 3 exceeds --max-seqs 2: each running request holds one state slot");
  ExpectRefused("bench batched -m " + *model_ + " --batches 1 --max-batch-tokens -1",
                "--max-batch-tokens: must be an integer from 0 to 2147483647, got '-1'");
  ExpectRefused("generate -m " + *model_ + " -p hi -n 1 -t 5000",
                "--threads: must be an integer from 0 to 1024, got '5000'");

  // The largest values are still taken: --timeout -1 is then what stops serve.
  ExpectRefused(
      "serve -m " + *model_ +
          " -t 1 --timeout -1 --max-body 18446744073709551615 --kv-tokens 1099511627776 --port 65535",
      "--timeout must be a number of seconds >= 0");
}

// ask --dry-run printed each question with %s, so a NUL byte (valid UTF-8, sent whole as \u0000) cut it
// short.
TEST_F(FlagValuesTest, AskDryRunShowsAQuestionPastANulByte) {
  const std::string questions = Write("nul_questions.txt", std::string("q1\0hidden\nq2\n", 13));
  std::string out, err;
  EXPECT_EQ(Lockstep("ask --dry-run --file " + questions, &out, &err), 0) << err;
  EXPECT_NE(out.find("1. q1\\0hidden\n2. q2\n"), std::string::npos) << out;
  EXPECT_EQ(Lockstep("ask --dry-run --json --file " + questions, &out, &err), 0) << err;
  EXPECT_NE(out.find("\"q1\\u0000hidden\""), std::string::npos) << out;
}

// serve logged "listening on ..." and only then, loading the model, failed on its --chat-template.
TEST_F(FlagValuesTest, ServeRefusesABadChatTemplateBeforeListening) {
  const std::string serve = "serve -m " + *model_ + " -t 1 --port 0 --chat-template ";
  const std::string broken = Write("broken.jinja", "{% for message in messages %}{{ message");
  for (const auto& [spec, message] :
       {std::pair<std::string, std::string>{"nosuch", "--chat-template 'nosuch': no such file"},
        {broken, "chat template (file " + broken + ") cannot be parsed"}}) {
    std::string out, err;
    EXPECT_EQ(Lockstep(serve + spec, &out, &err), 1) << err;
    EXPECT_NE(err.find(message), std::string::npos) << err;
    EXPECT_EQ(err.find("listening"), std::string::npos) << err;
  }
}

// A flag given an empty value (`--json "$UNSET"`) was taken as left out: --json and --timings-json wrote no
// file, --kv-memory took the automatic size, --chat-template the model's own, the client's --api-key fell
// back to $LOCKSTEP_API_KEY, pull's --endpoint to $HF_ENDPOINT, bench serve ran without its --dataset or
// --slo; generate's -f, ask's --file and --split, batch's --prompts and --prompt-ids-file were ignored
// beside another source of prompts. Refused now, naming the flag, before anything is loaded, reached or run.
// (Each command would otherwise finish quickly: serve stops at --timeout -1, pull finds its file already
// there, the servers are not there.)
TEST_F(FlagValuesTest, EmptyValuesAreRefused) {
  const std::string m = " -m " + *model_ + " -t 1";
  const std::string text = Write("empty_ppl.txt", "The quick brown fox jumps over the lazy dog. ");
  const std::string serve = "serve" + m + " --port 0 --timeout -1";
  const std::string nowhere = " --url http://127.0.0.1:1 --retries 0 --timeout 1";
  const std::string bench_serve =
      "bench serve" + nowhere + " --model-name x --requests 1 --out " + *dir_ + "/bs";
  const std::string compare = "bench compare" + nowhere + " --model-name x --out " + *dir_ + "/bc";
  const std::string ask = "ask --dry-run -q hi";
  // The file is already there, so pull stops before it reaches the hub.
  const std::string pull = "pull owner/repo/tiny.gguf -o " + *dir_;
  const std::pair<std::string, std::string> cases[] = {
      {"generate" + m + " -n 1 -p hi --timings-json ''", "--timings-json"},
      {"perplexity" + m + " -f " + text + " -c 8 --json ''", "--json"},
      {"bench batched" + m + " --batches 1 --prompt-len 2 --gen-len 2 --json ''", "--json"},
      {"perplexity" + m + " -f " + text + " -c 8 --kv-memory ''", "--kv-memory"},
      {serve + " --kv-memory ''", "--kv-memory"},
      {serve + " --chat-template ''", "--chat-template"},
      {"chat" + m + " -n 1 --chat-template '' < /dev/null", "--chat-template"},
      {"info -m " + *model_ + " --chat-template ''", "--chat-template"},
      {bench_serve + " --dataset ''", "--dataset"},
      {bench_serve + " --slo ''", "--slo"},
      {compare + " --builtin --context ''", "--context"},
      {compare + " --context builtin --questions ''", "--questions"},
      {"bench serve" + nowhere + " --requests 1 --model-name ''", "--model-name"},
      {ask + " --model-name ''", "--model-name"},
      {ask + " --api-key ''", "--api-key"},
      {ask + " --ca-file ''", "--ca-file"},
      {pull + " --endpoint ''", "--endpoint"},
      {pull + " --revision ''", "--revision"},
      {pull + " --ca-file ''", "--ca-file"},
      {"pull owner/repo/tiny.gguf --endpoint http://127.0.0.1:1 --retries 0 -o ''", "--output-dir"},
      // `-p hi -f ''` ran on `hi`; `ask -q hi --file ''` asked `hi`.
      {"generate" + m + " -n 1 -p hi -f ''", "--file"},
      {"ask --dry-run -q hi --file ''", "--file"},
      {"ask --dry-run -q hi --split ''", "--split"},
      {"batch" + m + " --prompt-ids-file ids.txt --prompts ''", "--prompts"},
      {"batch" + m + " --prompts p.txt --prompt-ids-file ''", "--prompt-ids-file"},
  };
  for (const auto& [args, flag] : cases) {
    ExpectRefused(args, flag + ": must not be empty (leave the flag out for its default)");
  }
}

}  // namespace
}  // namespace lockstep::testing

namespace lockstep::testing {
namespace {

// The local commands take llama-cli's DRY flags (checked as serve's sampling defaults are).
TEST_F(FlagValuesTest, DryFlagsStopGreedyRepeatsAndAreChecked) {
  const std::string generate =
      "generate -m " + *model_ + " -t 1 -n 40 -p 'one two three four one two three four'";
  std::string plain, dry, again, err;
  ASSERT_EQ(Lockstep(generate, &plain, &err), 0) << err;
  const std::string dry_flags = " --dry-multiplier 1000 --dry-sequence-breaker none";
  ASSERT_EQ(Lockstep(generate + dry_flags, &dry, &err), 0) << err;
  ASSERT_EQ(Lockstep(generate + dry_flags, &again, &err), 0) << err;
  EXPECT_NE(dry, plain);
  EXPECT_EQ(dry, again);  // greedy with DRY is deterministic
  // Off (multiplier 0), the other DRY flags change nothing.
  std::string off;
  ASSERT_EQ(Lockstep(generate + " --dry-multiplier 0 --dry-allowed-length 1", &off, &err), 0) << err;
  EXPECT_EQ(off, plain);
  ExpectRefused(generate + " --dry-base 0.5", "--dry-base must be from 1 to 1e6, got 0.5");
  ExpectRefused(generate + " --dry-penalty-last-n -2", "--dry-penalty-last-n must be -1");
}

}  // namespace
}  // namespace lockstep::testing
