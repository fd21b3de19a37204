// `lockstep chat`: an interactive multi-turn chat in the terminal, through the engine, with the model's chat
// template (or --chat-template). Each line read from stdin is a user message (a line ending in '\' continues
// on the next); the reply streams to stdout, followed by a newline. `/reset` forgets the conversation,
// `/exit` (or end of input) quits. Input may be piped: then no prompt or banner is printed and stdout holds
// only the replies. Every turn renders the whole conversation again; the engine's prefix cache finds the
// earlier turns' KV, so only the new message is computed. When the conversation outgrows the context, the
// oldest turns are dropped (chat/conversation.h). Ctrl-C stops the reply being written; at the prompt it
// quits. A turn that fails (a line that is not valid UTF-8 or cannot fit the context, a template error, a
// failed reply) is reported with its input line and the chat goes on; the exit code is then 1.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "base/file_util.h"
#include "chat/conversation.h"
#include "chat/template_selection.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/engine_setup.h"
#include "cli/flag_checks.h"
#include "engine/engine.h"

namespace lockstep::cli {
namespace {

struct ChatFlags {
  std::string model;
  std::string chat_template;
  std::optional<std::string> system;  // absent: none; "" is an empty system message
  int n_predict = -1;
  int64_t ctx_size = 0;
  SamplingFlags sampling;
  int threads = 0;
  std::string kv_type = "f16";
  int draft_max = 0;
  bool no_prefix_cache = false;
  bool verbose_prompt = false;
};

constexpr int64_t kDefaultContext = 4096;

// Ctrl-C: while a reply is being written it asks for that reply to stop; otherwise the default (quit).
std::atomic<bool> g_replying{false};
std::atomic<bool> g_interrupted{false};
extern "C" void OnInterrupt(int signal_number) {
  if (g_replying.load()) {
    g_interrupted.store(true);
    return;
  }
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

// One line of input, joining lines that end in '\'. False at end of input. `line_number`: lines read so far.
bool ReadMessage(std::string* message, int64_t* line_number) {
  message->clear();
  std::string line;
  bool any = false;
  while (std::getline(std::cin, line)) {
    any = true;
    ++*line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      *message += line + "\n";
      continue;
    }
    *message += line;
    return true;
  }
  return any;
}

struct TurnTotals {
  int64_t generated = 0;
  double generation_s = 0;
};

// Streams one reply to stdout; returns its text (as far as it got). Sets *failed when the reply failed.
// `cut_by_limit`: max_tokens is -n, so reaching it is no news.
std::string Reply(Engine& engine, Request request, bool cut_by_limit, TurnTotals* totals, bool* failed) {
  auto handle = engine.Submit(std::move(request));
  if (!handle.ok()) {
    std::fprintf(stderr, "lockstep: error: %s\n", handle.status().ToString().c_str());
    *failed = true;
    return "";
  }
  g_interrupted.store(false);
  g_replying.store(true);
  std::string text;
  bool cancelled = false;
  TokenEvent last;
  int64_t generated = 0;
  while (true) {
    if (g_interrupted.load() && !cancelled) {
      (*handle)->Cancel();
      cancelled = true;
    }
    std::optional<TokenEvent> event = (*handle)->Next(std::chrono::milliseconds(100));
    if (!event) continue;  // a timeout: look at Ctrl-C again
    if (event->token != kNoToken) ++generated;
    text += event->text_delta;
    std::fputs(event->text_delta.c_str(), stdout);
    std::fflush(stdout);
    if (event->last()) {
      last = std::move(*event);
      break;
    }
  }
  g_replying.store(false);
  std::fputs("\n", stdout);
  std::fflush(stdout);
  totals->generated += generated;
  totals->generation_s += std::max(0.0, last.timing.e2e_s - last.timing.ttft_s);
  if (last.finish_reason == FinishReason::kError) {
    std::fprintf(stderr, "lockstep: error: the reply failed: %s\n", last.error.c_str());
    *failed = true;
  } else if (last.finish_reason == FinishReason::kCancelled) {
    std::fprintf(stderr, "lockstep: reply stopped\n");
  } else if (last.finish_reason == FinishReason::kLength && !cut_by_limit) {
    std::fprintf(stderr, "lockstep: reply cut at %lld tokens: the context is full\n",
                 static_cast<long long>(generated));
  }
  return text;
}

void RunChat(const ChatFlags& f) {
  if (f.n_predict == 0 || f.n_predict < -1) Fail("-n must be -1 (until the end of the turn) or >= 1");
  if (Status s = RefuseDirectory(STDIN_FILENO, "chat", "standard input"); !s.ok()) Fail(s);
  LoadedModel loaded = LoadModelOrDie(f.model);
  if (loaded.tokenizer == nullptr) Fail(f.model + ": chat needs a model with a usable tokenizer");
  const ModelConfig& config = loaded.model->config();
  const auto selected =
      ValueOrDie(chat::SelectChatTemplate(*loaded.file, *loaded.tokenizer, f.chat_template));
  const chat::ChatTemplate& chat_template = *selected.chat_template;
  for (const std::string& warning : selected.warnings) {
    std::fprintf(stderr, "lockstep: warning: %s\n", warning.c_str());
  }

  // -c beyond the model's context is refused, as generate refuses a prompt and -n that do not fit it.
  if (f.ctx_size != 0 && (f.ctx_size < 2 || f.ctx_size > config.n_ctx_train)) {
    Fail("-c/--ctx-size must be from 2 to " + std::to_string(config.n_ctx_train) +
         " (the model's context), or 0 for the default; got " + std::to_string(f.ctx_size));
  }
  const int64_t context =
      f.ctx_size > 0 ? f.ctx_size : std::min<int64_t>(kDefaultContext, config.n_ctx_train);
  if (context < 2) Fail("the context (" + std::to_string(context) + " tokens) is too small for a chat");
  EngineFlags engine_flags;
  engine_flags.threads = f.threads;
  engine_flags.max_seqs = 1;
  engine_flags.kv_tokens = context + 2 * 16;  // two spare blocks: admission keeps one free per request
  engine_flags.kv_type = f.kv_type;
  engine_flags.no_prefix_cache = f.no_prefix_cache;
  engine_flags.draft_max = f.draft_max;
  EngineOptions options = EngineOptionsOrDie(engine_flags);
  options.max_context = static_cast<int>(context);
  std::unique_ptr<Engine> engine = ValueOrDie(Engine::Create(loaded.model, loaded.tokenizer, options));
  const SamplingParams sampling = SamplingParamsOrDie(f.sampling, loaded.tokenizer.get());

  // Room kept for the reply when old turns must go: -n, else a quarter of the context.
  const int64_t reply_room = f.n_predict > 0 ? std::min<int64_t>(f.n_predict, context - 1) : context / 4;
  const std::string end_of_turn(chat::EndOfTurnText(chat_template.family()));
  const Tokenizer& tokenizer = *loaded.tokenizer;
  const chat::PromptEncoder encode = [&tokenizer](const std::string& text) {
    return chat::EncodeChatPrompt(tokenizer, text);
  };

  if (f.system) {
    // A system message the template or the tokenizer cannot take would fail every turn: refuse it now.
    chat::Conversation probe(*f.system);
    if (auto p = probe.Ask("Hi", chat_template, encode, context); !p.ok())
      Fail(p.status().WithContext("--system"));
  }

  const bool interactive = isatty(STDIN_FILENO) != 0;
  if (interactive) {
    std::fprintf(stderr,
                 "lockstep chat: %s, chat template %s (%s), context %lld tokens, seed %llu\n"
                 "  /reset forgets the conversation, /exit or Ctrl-D quits, Ctrl-C stops a reply; end a line "
                 "with \\ to continue it\n",
                 std::filesystem::path(f.model).filename().c_str(), chat_template.family().c_str(),
                 selected.origin.c_str(), static_cast<long long>(context),
                 static_cast<unsigned long long>(sampling.seed));
  }
  std::signal(SIGINT, OnInterrupt);

  chat::Conversation conversation = f.system ? chat::Conversation(*f.system) : chat::Conversation();
  TurnTotals totals;
  int turns = 0;
  int failed_turns = 0;
  int64_t line_number = 0;
  std::string message;
  while (true) {
    if (interactive) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    const int64_t first_line = line_number + 1;
    if (!ReadMessage(&message, &line_number)) break;
    if (message == "/exit" || message == "/quit") break;
    if (message == "/reset") {
      conversation.Clear();
      if (interactive) std::fprintf(stderr, "lockstep: conversation forgotten\n");
      continue;
    }
    if (message.find_first_not_of(" \t\n") == std::string::npos) continue;

    auto prompt = conversation.Ask(message, chat_template, encode, context - reply_room);
    if (!prompt.ok()) {
      std::fprintf(stderr, "lockstep: error: input line %lld: %s\n", static_cast<long long>(first_line),
                   prompt.status().message().c_str());
      ++failed_turns;
      continue;
    }
    if (prompt->dropped_turns > 0) {
      const int32_t n = prompt->dropped_turns;
      const std::string which = n == 1 ? "its oldest turn" : "its " + std::to_string(n) + " oldest turns";
      std::fprintf(stderr, "lockstep: the conversation outgrew the context; dropped %s\n", which.c_str());
    }
    if (f.verbose_prompt) {
      std::fprintf(stderr, "lockstep: prompt (%zu tokens):\n%s\n", prompt->ids.size(), prompt->text.c_str());
    }
    Request request;
    const int64_t room = context - static_cast<int64_t>(prompt->ids.size());
    request.max_tokens = static_cast<int32_t>(f.n_predict > 0 ? std::min<int64_t>(f.n_predict, room) : room);
    request.prompt_ids = std::move(prompt->ids);
    request.sampling = sampling;
    if (!end_of_turn.empty()) request.stop.push_back(end_of_turn);
    request.label = "chat turn " + std::to_string(++turns);
    const bool cut_by_limit = f.n_predict > 0 && request.max_tokens == f.n_predict;
    bool failed = false;
    conversation.AddReply(Reply(*engine, std::move(request), cut_by_limit, &totals, &failed));
    failed_turns += failed ? 1 : 0;
  }
  std::signal(SIGINT, SIG_DFL);

  const EngineStats stats = engine->Stats();
  engine->Shutdown(/*drain=*/false);
  if (turns > 0) {
    std::fprintf(
        stderr,
        "lockstep chat: %d turn%s; prompt tokens %lld, %lld of them from the prefix cache; %lld "
        "generated (%.1f tok/s)\n",
        turns, turns == 1 ? "" : "s", static_cast<long long>(stats.prompt_tokens_total),
        static_cast<long long>(stats.prefix_cache_hits_total), static_cast<long long>(totals.generated),
        totals.generation_s > 0 ? double(std::max<int64_t>(totals.generated - turns, 0)) / totals.generation_s
                                : 0.0);
  }
  if (failed_turns > 0) {
    Fail(std::to_string(failed_turns) + (failed_turns == 1 ? " turn" : " turns") + " failed (see above)");
  }
}

}  // namespace

void RegisterChatCommand(CLI::App& app) {
  auto f = std::make_shared<ChatFlags>();
  CLI::App* cmd = app.add_subcommand(
      "chat",
      "Chat with a model in the terminal: one line of stdin per message, replies on stdout. A turn that "
      "fails (invalid UTF-8, too long for the context, a template error) is reported and the chat goes on; "
      "the exit code is then 1. A --system message that cannot be used is refused at the start.");
  AddModelFileFlag(*cmd, f->model);
  AddChatTemplateFlag(*cmd, f->chat_template);
  cmd->add_option("--system,--system-prompt", f->system,
                  "System message that starts the conversation (\"\" sends an empty one)")
      ->type_name("TEXT");
  cmd->add_option("-n,--n-predict", f->n_predict,
                  "Tokens per reply at most (-1: until the end of the turn or the context)")
      ->capture_default_str();
  cmd->add_option("-c,--ctx-size", f->ctx_size,
                  "Context in tokens for the whole conversation, at most the model's (default 0: the "
                  "model's, at most 4096)")
      ->type_name("N")
      ->check(IntegerIn(0, std::numeric_limits<int64_t>::max()));
  AddSamplingFlags(*cmd, f->sampling);
  AddThreadsFlag(*cmd, f->threads);
  AddKvTypeFlag(*cmd, f->kv_type);
  AddDraftFlags(*cmd, f->draft_max, nullptr);
  cmd->add_flag("--no-prefix-cache", f->no_prefix_cache,
                "Compute the whole conversation again every turn (default: reuse the earlier turns' KV)");
  cmd->add_flag("--verbose-prompt", f->verbose_prompt, "Print each turn's rendered prompt on stderr");
  cmd->callback([f] { RunChat(*f); });
}

}  // namespace lockstep::cli
