// llama.cpp's slot actions with --slot-save-path (server/slot_files.h), end to end on the real binary: a
// slot's prompt and reply saved to a file, erased from the cache, restored — in the same server and in a
// new one — and then found cached by the same request, which replies exactly as before; every refusal.
#include "server/slot_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "e2e_util.h"
#include "test_client.h"

namespace lockstep::server::testing {
namespace {

const std::string& SlotDirectory() {
  static const std::string path =
      ::testing::TempDir() + "/slot_files_" + std::to_string(::getpid()) + "/saved";  // created by the server
  return path;
}

class SlotFilesTest : public SharedServerTest<SlotFilesTest> {
 public:
  static std::vector<std::string> Args() {
    return {"-t", "1", "--max-seqs", "2", "--slot-save-path", SlotDirectory()};
  }
};

// A greedy /completion of a ~100-token prompt (the tiny model's context is 256), in seat `id_slot`.
nlohmann::json Completion(int port, int id_slot = -1) {
  std::string prompt;
  for (int i = 0; i < 3; ++i)
    prompt += "The quick brown fox jumps over the lazy dog " + std::to_string(i) + ". ";
  const nlohmann::json body = {
      {"prompt", prompt}, {"n_predict", 12}, {"temperature", 0}, {"id_slot", id_slot}};
  const HttpResponse r = Request(port, "POST", "/completion", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.Json() : nlohmann::json::object();
}

HttpResponse Action(int port, int slot, const std::string& action, const std::string& filename = "") {
  return Request(port, "POST", "/slots/" + std::to_string(slot) + "?action=" + action,
                 filename.empty() ? "" : nlohmann::json{{"filename", filename}}.dump());
}

// The request's seat is reported free a step after its reply: wait for every seat to be idle.
void WaitForIdleSeats(int port) {
  for (int i = 0; i < 2000; ++i) {
    const HttpResponse r = Request(port, "GET", "/slots?fail_on_no_slot=1", "");
    const nlohmann::json slots = r.Json();
    bool busy = false;
    for (const nlohmann::json& slot : slots) busy = busy || slot.value("is_processing", false);
    if (r.status == 200 && !busy) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "the seats never became idle";
}

TEST_F(SlotFilesTest, SavedSlotIsRestoredAndFoundCachedWithTheSameReply) {
  const nlohmann::json first = Completion(port());
  const int prompt_tokens = first["tokens_evaluated"].get<int>();
  const int reply_tokens = first["tokens_predicted"].get<int>();
  ASSERT_GT(prompt_tokens, 64) << first;
  WaitForIdleSeats(port());

  const HttpResponse save = Action(port(), 0, "save", "doc.bin");
  ASSERT_EQ(save.status, 200) << save.body;
  const nlohmann::json saved = save.Json();
  EXPECT_EQ(saved["id_slot"], 0);
  EXPECT_EQ(saved["filename"], "doc.bin");
  const int n_saved = saved["n_saved"].get<int>();
  // Whole 16-token blocks of the prompt and reply whose KV was computed (the reply's last token's is not).
  EXPECT_EQ(n_saved, (prompt_tokens + reply_tokens - 1) / 16 * 16) << saved;
  EXPECT_EQ(saved["n_written"].get<uint64_t>(), std::filesystem::file_size(SlotDirectory() + "/doc.bin"));
  EXPECT_TRUE(saved["timings"]["save_ms"].is_number());

  // The same prompt now finds its blocks cached...
  EXPECT_GE(Completion(port())["tokens_cached"].get<int>(), prompt_tokens / 16 * 16);
  WaitForIdleSeats(port());
  // ...until the slot is erased: then nothing of it is.
  const HttpResponse erase = Action(port(), 0, "erase");
  ASSERT_EQ(erase.status, 200) << erase.body;
  EXPECT_EQ(erase.Json()["id_slot"], 0);
  EXPECT_EQ(erase.Json()["n_erased"].get<int>(), prompt_tokens + reply_tokens) << erase.body;
  EXPECT_EQ(Completion(port())["tokens_cached"], 0);
  WaitForIdleSeats(port());
  ASSERT_EQ(Action(port(), 0, "erase").status, 200);

  // Restored into slot 1, the blocks are cached again, and the reply is the same.
  const HttpResponse restore = Action(port(), 1, "restore", "doc.bin");
  ASSERT_EQ(restore.status, 200) << restore.body;
  const nlohmann::json restored = restore.Json();
  EXPECT_EQ(restored["id_slot"], 1);
  EXPECT_EQ(restored["n_restored"], n_saved);
  EXPECT_EQ(restored["n_read"], saved["n_written"]);
  EXPECT_TRUE(restored["timings"]["restore_ms"].is_number());
  const nlohmann::json again = Completion(port());
  EXPECT_EQ(again["tokens_cached"].get<int>(), prompt_tokens / 16 * 16) << again;
  EXPECT_EQ(again["content"], first["content"]);
  WaitForIdleSeats(port());
}

TEST_F(SlotFilesTest, ANewServerRestoresTheFile) {
  const nlohmann::json first = Completion(port());
  WaitForIdleSeats(port());
  ASSERT_EQ(Action(port(), 0, "save", "kept.bin").status, 200);
  ServerProcess fresh(TinyModel(), {"-t", "1", "--slot-save-path", SlotDirectory()});
  ASSERT_TRUE(fresh.ok()) << fresh.log();
  const HttpResponse restore = Action(fresh.port(), 0, "restore", "kept.bin");
  ASSERT_EQ(restore.status, 200) << restore.body;
  EXPECT_GT(restore.Json()["n_restored"].get<int>(), 64);
  const nlohmann::json again = Completion(fresh.port());
  EXPECT_EQ(again["tokens_cached"].get<int>(), first["tokens_evaluated"].get<int>() / 16 * 16) << again;
  EXPECT_EQ(again["content"], first["content"]);
  // A server of another model refuses the file.
  ServerProcess other(SlowModel(), {"-t", "1", "--slot-save-path", SlotDirectory()});
  ASSERT_TRUE(other.ok()) << other.log();
  const HttpResponse foreign = Action(other.port(), 0, "restore", "kept.bin");
  EXPECT_EQ(foreign.status, 400) << foreign.body;
  EXPECT_NE(foreign.body.find("another model file"), std::string::npos) << foreign.body;
}

// tiny-qwen35 (Gated DeltaNet layers): the file carries the recurrent state with the KV.
TEST_F(SlotFilesTest, AModelWithRecurrentLayersRestoresToo) {
  ServerProcess before(RecurrentModel(), {"-t", "1", "--slot-save-path", SlotDirectory()});
  ASSERT_TRUE(before.ok()) << before.log();
  const nlohmann::json first = Completion(before.port());
  WaitForIdleSeats(before.port());
  const HttpResponse save = Action(before.port(), 0, "save", "hybrid.bin");
  ASSERT_EQ(save.status, 200) << save.body;
  const int n_saved = save.Json()["n_saved"].get<int>();
  EXPECT_GT(n_saved, 64) << save.body;
  ServerProcess after(RecurrentModel(), {"-t", "1", "--slot-save-path", SlotDirectory()});
  ASSERT_TRUE(after.ok()) << after.log();
  const HttpResponse restore = Action(after.port(), 0, "restore", "hybrid.bin");
  ASSERT_EQ(restore.status, 200) << restore.body;
  EXPECT_EQ(restore.Json()["n_restored"], n_saved);
  const nlohmann::json again = Completion(after.port());
  EXPECT_GT(again["tokens_cached"].get<int>(), 0) << again;
  EXPECT_EQ(again["content"], first["content"]);
  // Without state snapshots the model has no prefix cache to restore into.
  ServerProcess without(RecurrentModel(),
                        {"-t", "1", "--slot-save-path", SlotDirectory(), "--recurrent-cache-slots", "0"});
  ASSERT_TRUE(without.ok()) << without.log();
  const HttpResponse refused = Action(without.port(), 0, "restore", "hybrid.bin");
  EXPECT_EQ(refused.status, 501) << refused.body;
  EXPECT_NE(refused.body.find("prefix caching is off"), std::string::npos) << refused.body;
}

// llama.cpp's id_slot picks the seat whose tokens a save writes; results say which seat ran the request.
TEST_F(SlotFilesTest, IdSlotChoosesTheSeatThatIsSaved) {
  ASSERT_EQ(Action(port(), 0, "erase").status, 200);
  ASSERT_EQ(Action(port(), 1, "erase").status, 200);
  const nlohmann::json first = Completion(port(), /*id_slot=*/1);
  EXPECT_EQ(first["id_slot"], 1) << first;
  WaitForIdleSeats(port());
  const HttpResponse empty = Action(port(), 0, "save", "seat0.bin");
  ASSERT_EQ(empty.status, 200) << empty.body;
  EXPECT_EQ(empty.Json()["n_saved"], 0) << empty.body;
  const HttpResponse seat1 = Action(port(), 1, "save", "seat1.bin");
  ASSERT_EQ(seat1.status, 200) << seat1.body;
  EXPECT_GT(seat1.Json()["n_saved"].get<int>(), 64) << seat1.body;
  EXPECT_EQ(Completion(port())["id_slot"], 0);  // no preference: the lowest free seat
  WaitForIdleSeats(port());
  // The OpenAI routes read it too, as llama.cpp's do.
  ASSERT_EQ(Action(port(), 1, "erase").status, 200);
  const nlohmann::json chat = {
      {"messages", {{{"role", "user"}, {"content", "Tell me about foxes and dogs."}}}},
      {"max_tokens", 20},
      {"id_slot", 1}};
  ASSERT_EQ(Request(port(), "POST", "/v1/chat/completions", chat.dump()).status, 200);
  WaitForIdleSeats(port());
  const HttpResponse chat_seat = Action(port(), 1, "save", "chat.bin");
  ASSERT_EQ(chat_seat.status, 200) << chat_seat.body;
  EXPECT_GT(chat_seat.Json()["n_saved"].get<int>(), 0) << chat_seat.body;
}

TEST_F(SlotFilesTest, RefusalsNameWhatIsWrong) {
  const auto expect = [&](const HttpResponse& r, int status, const std::string& part) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_NE(r.body.find(part), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find(SlotDirectory()), std::string::npos) << "the server's directory leaked: " << r.body;
  };
  expect(Action(port(), 2, "erase"), 400, "Invalid slot ID: '2' (slots are 0 to 1)");
  expect(Request(port(), "POST", "/slots/x?action=erase", ""), 400, "Invalid slot ID");
  expect(Action(port(), 0, "delete"), 400, "Invalid action: 'delete'");
  expect(Action(port(), 0, "save", "../escape.bin"), 400, "Invalid filename");
  expect(Action(port(), 0, "restore", ".."), 400, "Invalid filename");
  expect(Request(port(), "POST", "/slots/0?action=save", "{}"), 400, "\\\"filename\\\" is required");
  expect(Request(port(), "POST", "/slots/0?action=save", R"({"filename": 3})"), 400, "filename");
  expect(Request(port(), "POST", "/slots/0?action=save", "{"), 400, "");
  expect(Action(port(), 0, "restore", "missing.bin"), 404,
         "Failed to restore slot 'missing.bin': no such file");
  std::ofstream(SlotDirectory() + "/junk.bin") << "GGUF and then some";
  expect(Action(port(), 0, "restore", "junk.bin"), 400, "'junk.bin' is not a lockstep saved prefix");
  EXPECT_FALSE(std::filesystem::exists(SlotDirectory() + "/../escape.bin"));
}

TEST(SlotFilenameTest, PlainNamesOnly) {
  for (const std::string& name :
       std::vector<std::string>{"a.bin", "slot 0.bin", "日本語.bin", ".hidden", std::string(255, 'a')}) {
    EXPECT_TRUE(IsValidSlotFilename(name)) << name;
  }
  for (const std::string& name :
       std::vector<std::string>{"",      ".",       "..",         "a/b",
                                "../a",  "a\\b",    "c:x",        "a*",
                                "q?",    "\"q\"",   "<a>",        "a|b",
                                " lead", "trail ",  "dot.",       std::string("nul\0x", 5),
                                "tab\t", "del\x7f", "c1\xc2\x85", std::string(256, 'a')}) {
    EXPECT_FALSE(IsValidSlotFilename(name)) << name;
  }
}

}  // namespace
}  // namespace lockstep::server::testing
