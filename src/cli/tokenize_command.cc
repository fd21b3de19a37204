// `lockstep tokenize` and `lockstep detokenize`: text <-> token ids with a model's (or vocab-only GGUF's)
// tokenizer. Errors (unreadable model, unsupported vocabulary, invalid UTF-8, bad ids) exit with code 1.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool has_text = false;  // TEXT was given (it may be empty)
  bool no_bos = false;
  bool no_special = false;
  bool pieces = false;
  bool skip_special = false;
  std::vector<std::string> ids;
};

std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& path) {
  auto file = GgufFile::Open(path);
  if (!file.ok()) Fail(file.status());
  auto tokenizer = Tokenizer::FromGguf(**file);
  if (!tokenizer.ok()) Fail(tokenizer.status());
  return std::move(tokenizer).value();
}

// Quotes a piece for display: printable text as is; quote, backslash and control bytes escaped.
std::string Quote(const std::string& piece) {
  std::string out = "'";
  for (char c : piece) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (b < 0x20 || b == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", b);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "'";
}

void RunTokenize(const TokenizeOptions& opt) {
  std::string text = opt.text;
  if (!opt.file.empty()) {
    if (opt.has_text) Fail("give either TEXT or -f FILE, not both");
    text = ReadFlagFileOrDie(opt.file, "-f/--file");
  }
  const std::unique_ptr<Tokenizer> tokenizer = LoadTokenizer(opt.model);
  auto ids = tokenizer->Encode(text, !opt.no_bos, !opt.no_special);
  if (!ids.ok()) Fail(ids.status().WithContext(opt.file.empty() ? "TEXT" : opt.file));
  if (opt.pieces) {
    for (int32_t id : *ids) std::printf("%d:%s\n", id, Quote(tokenizer->TokenPiece(id)).c_str());
    return;
  }
  std::string line;
  for (size_t i = 0; i < ids->size(); ++i) {
    if (i > 0) line += ' ';
    line += std::to_string((*ids)[i]);
  }
  std::printf("%s\n", line.c_str());
}

// Parses the id arguments: each may hold several ids separated by spaces or commas.
std::vector<int32_t> ParseIds(const std::vector<std::string>& args, int32_t vocab_size) {
  std::vector<int32_t> ids;
  for (const std::string& arg : args) {
    std::string normalized = arg;
    for (char& c : normalized) {
      if (c == ',' || c == '\t' || c == '\n' || c == '[' || c == ']') c = ' ';
    }
    std::istringstream words(normalized);
    std::string word;
    while (words >> word) {
      // The whole word, NUL bytes included, must be the number.
      long long value = -1;
      const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
      if (error != std::errc() || end != word.data() + word.size()) Fail("'" + word + "' is not a token id");
      if (value < 0 || value >= vocab_size) {
        Fail("token id " + word + " is out of range (the vocabulary has " + std::to_string(vocab_size) +
             " tokens: 0.." + std::to_string(vocab_size - 1) + ")");
      }
      ids.push_back(static_cast<int32_t>(value));
    }
  }
  if (ids.empty()) Fail("no token ids given");
  return ids;
}

void RunDetokenize(const TokenizeOptions& opt) {
  const std::unique_ptr<Tokenizer> tokenizer = LoadTokenizer(opt.model);
  std::vector<std::string> args = opt.ids;
  if (!opt.file.empty()) args.push_back(ReadFlagFileOrDie(opt.file, "-f/--file"));
  const std::vector<int32_t> ids = ParseIds(args, tokenizer->vocab_size());
  const std::string text = tokenizer->Decode(ids, opt.skip_special);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

}  // namespace

void RegisterTokenizeCommands(CLI::App& app) {
  auto opt = std::make_shared<TokenizeOptions>();
  CLI::App* tok = app.add_subcommand(
      "tokenize",
      "Print the token ids of TEXT (or of the bytes of FILE, trailing newline included), space separated on "
      "one "
      "line. With --pieces: one token per line as ID:'PIECE' (the raw vocabulary piece, e.g. '▁Hello' or "
      "'Ġworld'; quote, backslash and control bytes escaped).");
  AddModelFileFlag(*tok, opt->model, "Model or vocabulary GGUF file");
  CLI::Option* text_option = tok->add_option("text", opt->text, "Text to tokenize");
  CLI::Option* file_option = tok->add_option("-f,--file", opt->file, "Tokenize this file's bytes exactly");
  tok->add_flag("--no-bos", opt->no_bos, "Do not add BOS/EOS (by default added as the vocabulary says)");
  tok->add_flag("--no-special", opt->no_special,
                "Treat special-token text (e.g. <|im_end|>, <s>) as plain text instead of the special token");
  tok->add_flag("--pieces", opt->pieces, "Print one ID:'PIECE' per line");
  tok->callback([opt, text_option, file_option] {
    opt->has_text = text_option->count() > 0;
    if (!opt->has_text && file_option->count() == 0) Fail("tokenize: give TEXT or -f FILE");
    RunTokenize(*opt);
  });

  CLI::App* detok = app.add_subcommand(
      "detokenize",
      "Print the text of token ids (\"1 2 3\", several arguments, or -f FILE), followed by a newline");
  AddModelFileFlag(*detok, opt->model, "Model or vocabulary GGUF file");
  detok->add_option("ids", opt->ids, "Token ids, separated by spaces or commas");
  detok->add_option("-f,--file", opt->file,
                    "Read the token ids from this file (e.g. `lockstep tokenize` output)");
  detok->add_flag("--skip-special", opt->skip_special, "Leave out control tokens (BOS, EOS, ...)");
  detok->callback([opt] { RunDetokenize(*opt); });
}

}  // namespace lockstep::cli
