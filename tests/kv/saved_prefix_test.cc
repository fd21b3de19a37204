// Saved prefixes: runs of cached blocks outside any sequence (KvCacheManager::CachedRun / CacheRun /
// ForgetRun) and their file (kv/saved_prefix.h): what is found, what an import keeps or evicts, and every
// way a file can be refused.
#include "kv/saved_prefix.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "kv/kv_cache_manager.h"

namespace lockstep {
namespace {

constexpr int32_t kRunBlock = 4;

struct RunFixture {
  explicit RunFixture(int64_t blocks, bool caching = true) {
    KvLayout layout;
    layout.n_layer = 1;
    layout.n_kv_head = 1;
    layout.head_dim = 2;
    layout.block_tokens = kRunBlock;
    layout.dtype = KvDtype::kF32;
    pool = std::move(*BlockPool::Create(layout, blocks));
    kv = std::make_unique<KvCacheManager>(*pool, KvCacheOptions{caching, 0});
  }
  // A sequence computes `tokens` (each slot stamped with its token) and finishes: its full blocks stay
  // cached.
  void Compute(SequenceId id, const std::vector<int32_t>& tokens) {
    kv->Add(id);
    const PrefixMatch match = kv->Match(id, tokens);
    ASSERT_TRUE(kv->Admit(id, tokens, match, int64_t(tokens.size())));
    ASSERT_TRUE(kv->PrepareWrite(id, match.tokens, int32_t(tokens.size())));
    for (size_t p = size_t(match.tokens); p < tokens.size(); ++p) {
      Slots(kv->table(id).block(int64_t(p) / kRunBlock))[p % kRunBlock] = float(tokens[p]);
    }
    kv->Publish(id, tokens, int32_t(tokens.size()));
    kv->Remove(id);
  }
  float* Slots(BlockId block) const { return reinterpret_cast<float*>(pool->data(block)); }
  std::unique_ptr<BlockPool> pool;
  std::unique_ptr<KvCacheManager> kv;
};

std::vector<int32_t> RunOf(int first, int count) {
  std::vector<int32_t> t(static_cast<size_t>(count));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(CachedRunTest, FindsTheFullBlocksFromTheStartUpToTheFirstMissing) {
  RunFixture f(8);
  f.Compute(1, RunOf(0, 10));  // blocks [0..4) and [4..8) cached; 8, 9 in a partial block
  EXPECT_EQ(f.kv->CachedRun(RunOf(0, 10)).size(), 2u);
  EXPECT_EQ(f.kv->CachedRun(RunOf(0, 7)).size(), 1u);  // only full blocks of the tokens given
  std::vector<int32_t> other = RunOf(0, 8);
  other[5] = 99;
  EXPECT_EQ(f.kv->CachedRun(other).size(), 1u);
  EXPECT_TRUE(f.kv->CachedRun(RunOf(1, 8)).empty());
  const std::vector<BlockId> run = f.kv->CachedRun(RunOf(0, 8));
  EXPECT_EQ(f.Slots(run[1])[3], 7.0f);
  EXPECT_TRUE(RunFixture(8, /*caching=*/false).kv->CachedRun(RunOf(0, 8)).empty());
}

TEST(CachedRunTest, CacheRunFillsMissingBlocksThatASequenceThenFinds) {
  RunFixture f(8);
  f.Compute(1, RunOf(0, 4));  // block 0 cached already
  std::vector<int64_t> filled;
  const int64_t cached = f.kv->CacheRun(RunOf(0, 12), [&](BlockId block, int64_t index) {
    filled.push_back(index);
    for (int s = 0; s < kRunBlock; ++s) f.Slots(block)[s] = float(100 + index * kRunBlock + s);
  });
  EXPECT_EQ(cached, 3);
  EXPECT_EQ(filled, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(f.pool->num_used(), 0);  // left idle
  EXPECT_EQ(f.pool->num_cached_idle(), 3);
  // A prompt that starts so finds all three (not the block of its last token).
  f.kv->Add(7);
  const std::vector<int32_t> prompt = RunOf(0, 13);
  const PrefixMatch match = f.kv->Match(7, prompt);
  ASSERT_EQ(match.tokens, 12);
  EXPECT_EQ(f.Slots(match.blocks[0])[1], 1.0f);    // computed by sequence 1
  EXPECT_EQ(f.Slots(match.blocks[2])[3], 111.0f);  // filled by the import
  f.kv->Remove(7);
}

TEST(CachedRunTest, CacheRunEvictsOtherPromptsButNeverItsOwnBlocks) {
  RunFixture f(4);
  f.Compute(1, RunOf(50, 8));  // two idle cached blocks of another prompt
  int64_t fills = 0;
  // Six blocks asked for, four exist: the other prompt's two are evicted, the run keeps its first four.
  EXPECT_EQ(f.kv->CacheRun(RunOf(0, 24), [&](BlockId, int64_t) { ++fills; }), 4);
  EXPECT_EQ(fills, 4);
  EXPECT_TRUE(f.kv->CachedRun(RunOf(50, 8)).empty());
  EXPECT_EQ(f.kv->CachedRun(RunOf(0, 24)).size(), 4u);
  // The run's last block is the least recently used: a new allocation evicts it, not its first.
  const BlockId taken = f.pool->Allocate();
  EXPECT_EQ(f.kv->CachedRun(RunOf(0, 24)).size(), 3u);
  f.pool->Release(taken);
  // Every block in use: nothing can be cached.
  RunFixture full(2);
  full.kv->Add(3);
  ASSERT_TRUE(full.kv->PrepareWrite(3, 0, 8));
  EXPECT_EQ(full.kv->CacheRun(RunOf(0, 8), [](BlockId, int64_t) { FAIL() << "no block to fill"; }), 0);
  full.kv->Remove(3);
  EXPECT_EQ(RunFixture(4, false).kv->CacheRun(RunOf(0, 8), [](BlockId, int64_t) {}), 0);
}

TEST(CachedRunTest, ForgetRunDropsIdleBlocksAndKeepsThoseInUse) {
  RunFixture f(8);
  f.Compute(1, RunOf(0, 12));
  f.Compute(2, RunOf(70, 8));
  // Sequence 3 holds the first block of the run.
  f.kv->Add(3);
  const std::vector<int32_t> prompt = RunOf(0, 5);
  const PrefixMatch match = f.kv->Match(3, prompt);
  ASSERT_EQ(match.tokens, 4);
  ASSERT_TRUE(f.kv->Admit(3, prompt, match, 5));
  EXPECT_EQ(f.kv->ForgetRun(RunOf(0, 12)), 2);
  EXPECT_EQ(f.kv->CachedRun(RunOf(0, 12)).size(), 1u);  // the held block stays findable
  EXPECT_EQ(f.kv->CachedRun(RunOf(70, 8)).size(), 2u);  // another prompt's untouched
  f.kv->Remove(3);
  EXPECT_EQ(f.kv->ForgetRun(RunOf(0, 12)), 1);
  EXPECT_TRUE(f.kv->CachedRun(RunOf(0, 12)).empty());
  EXPECT_EQ(f.pool->num_free(), 8);
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/saved_prefix_" + std::to_string(::getpid()) + "_" + name;
}

SavedPrefix SamplePrefix() {
  SavedPrefix prefix;
  prefix.chain_root = 0x1234;
  prefix.model_fingerprint = 0xabcd;
  prefix.block_tokens = 2;
  prefix.block_bytes = 3;
  prefix.tokens = {5, 6, 7, 8};
  for (int i = 0; i < 6; ++i) prefix.data.push_back(std::byte(i * 17));
  prefix.state_floats = 2;
  prefix.states = {{1, {1.5f, -2.25f}}, {2, {3.0f, 4.0f}}};
  return prefix;
}

TEST(SavedPrefixFileTest, RoundTripsEveryField) {
  const std::string path = TempPath("round_trip");
  const SavedPrefix prefix = SamplePrefix();
  ASSERT_TRUE(WriteSavedPrefix(path, prefix).ok());
  Result<SavedPrefix> read = ReadSavedPrefix(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->chain_root, prefix.chain_root);
  EXPECT_EQ(read->model_fingerprint, prefix.model_fingerprint);
  EXPECT_EQ(read->block_tokens, 2);
  EXPECT_EQ(read->block_bytes, 3u);
  EXPECT_EQ(read->tokens, prefix.tokens);
  EXPECT_EQ(read->data, prefix.data);
  EXPECT_EQ(read->state_floats, 2u);
  ASSERT_EQ(read->states.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(read->states[i].after_blocks, prefix.states[i].after_blocks);
    EXPECT_EQ(read->states[i].state, prefix.states[i].state);
  }
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  EXPECT_EQ(uint64_t(file.tellg()), prefix.FileBytes());
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    EXPECT_EQ(entry.path().string().find(path + ".tmp"), std::string::npos) << entry.path();
  }
  // No blocks at all is a valid file too.
  SavedPrefix empty = SamplePrefix();
  empty.tokens.clear();
  empty.data.clear();
  empty.states.clear();
  ASSERT_TRUE(WriteSavedPrefix(path, empty).ok());
  ASSERT_TRUE(ReadSavedPrefix(path).ok());
  EXPECT_EQ(ReadSavedPrefix(path)->blocks(), 0);
  std::remove(path.c_str());
}

// The message of reading `bytes` as a saved prefix.
std::string RefusalOf(const std::string& bytes) {
  const std::string path = TempPath("refused");
  std::ofstream(path, std::ios::binary) << bytes;
  Result<SavedPrefix> read = ReadSavedPrefix(path);
  std::remove(path.c_str());
  EXPECT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument);
  return read.status().message();
}

TEST(SavedPrefixFileTest, RefusesDamagedFilesNamingWhatIsWrong) {
  const std::string path = TempPath("good");
  ASSERT_TRUE(WriteSavedPrefix(path, SamplePrefix()).ok());
  std::ifstream in(path, std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  ASSERT_EQ(good.size(), 64u + 16 + 6 + 2 * (8 + 8));
  EXPECT_NE(RefusalOf(good.substr(0, 20)).find("shorter than the header"), std::string::npos);
  EXPECT_NE(RefusalOf("GGUF" + good.substr(4)).find("not \"LSKVSAVE\""), std::string::npos);
  std::string version = good;
  version[8] = 7;
  EXPECT_NE(RefusalOf(version).find("version 7, this build reads 1"), std::string::npos);
  EXPECT_NE(RefusalOf(good.substr(0, good.size() - 1)).find("truncated or damaged"), std::string::npos);
  EXPECT_NE(RefusalOf(good.substr(0, good.size() - 16)).find("and 2 states of 2 floats"), std::string::npos);
  std::string unordered = good;
  unordered[64 + 16 + 6 + 16] = 1;  // the second state's block: the first's again
  EXPECT_NE(RefusalOf(unordered).find("state 1 follows block 1 of 2"), std::string::npos);
  std::string past_end = good;
  past_end[64 + 16 + 6 + 16] = 3;
  EXPECT_NE(RefusalOf(past_end).find("state 1 follows block 3 of 2"), std::string::npos);
  EXPECT_NE(RefusalOf(good + "x").find("truncated or damaged"), std::string::npos);
  std::string huge_count = good;
  huge_count[47] = char(0x7f);  // blocks' top byte: the product with the block size would overflow
  std::string huge_state = good;
  huge_state[48 + 7] = char(0x7f);  // state_floats
  EXPECT_NE(RefusalOf(huge_state).find("a state of"), std::string::npos);
  EXPECT_NE(RefusalOf(huge_count).find("truncated or damaged"), std::string::npos);
  std::string no_tokens = good;
  no_tokens[12] = 0;  // block_tokens 0
  EXPECT_NE(RefusalOf(no_tokens).find("block of 0 tokens"), std::string::npos);
  std::string negative = good;
  negative[64 + 7] = char(0x80);  // token 1's top byte
  EXPECT_NE(RefusalOf(negative).find("token 1 is negative"), std::string::npos);
  const Result<SavedPrefix> missing = ReadSavedPrefix(TempPath("never_written"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace lockstep
