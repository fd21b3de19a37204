// Engine::ExportPrefix / ImportPrefix / ForgetPrefix: saved prefixes' KV copied between the block pool and
// SavedPrefix on the engine thread (an Inbox task, run between steps), the caller waiting for the result.
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "engine/engine.h"
#include "engine/engine_loop.h"

namespace lockstep {
namespace {

// Runs `work` on the engine thread through `inbox` and waits for its result.
template <typename T>
Result<T> RunOnEngineThread(Inbox& inbox, std::function<Result<T>()> work) {
  auto promise = std::make_shared<std::promise<Result<T>>>();
  std::future<Result<T>> result = promise->get_future();
  const Status pushed = inbox.PushTask([promise, work = std::move(work)] { promise->set_value(work()); });
  if (!pushed.ok()) return pushed;
  return result.get();
}

}  // namespace

Result<SavedPrefix> Engine::ExportPrefix(std::vector<int32_t> tokens) {
  Loop* loop = loop_.get();
  return RunOnEngineThread<SavedPrefix>(
      *inbox_, [loop, tokens = std::move(tokens)] { return loop->ExportPrefix(tokens); });
}

Result<int32_t> Engine::ImportPrefix(std::shared_ptr<const SavedPrefix> prefix) {
  Loop* loop = loop_.get();
  return RunOnEngineThread<int32_t>(*inbox_, [loop, prefix] { return loop->ImportPrefix(*prefix); });
}

Result<int64_t> Engine::ForgetPrefix(std::vector<int32_t> tokens) {
  Loop* loop = loop_.get();
  return RunOnEngineThread<int64_t>(
      *inbox_, [loop, tokens = std::move(tokens)] { return loop->ForgetPrefix(tokens); });
}

Status Engine::Loop::SavedPrefixSupport() const {
  // Off also for a model with recurrent layers that keeps no state snapshots (the scheduler turns it off).
  if (!scheduler_.kv().prefix_caching()) {
    return Unimplemented(
        "prefix caching is off (--no-prefix-cache; for a model with recurrent layers also "
        "--recurrent-cache-slots 0), so there is no cached KV to save or restore");
  }
  return Status::Ok();
}

void Engine::Loop::CountCachedBlocks() {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  CountKvCache();
}

Result<SavedPrefix> Engine::Loop::ExportPrefix(std::span<const int32_t> tokens) {
  LOCKSTEP_RETURN_IF_ERROR(SavedPrefixSupport());
  std::vector<BlockId> run = scheduler_.kv().CachedRun(tokens);
  SavedPrefix prefix;
  if (snapshots_ != nullptr) {
    // Recurrent layers resume only where a snapshot of their state is kept: every one along the run goes
    // with it, and the run ends at the last.
    const std::vector<BlockHash> hashes = scheduler_.kv().RunHashes(tokens);
    prefix.state_floats = uint64_t(snapshots_->state_floats());
    for (size_t i = 0; i < run.size(); ++i) {
      if (!snapshots_->Contains(hashes[i])) continue;
      SavedState& saved = prefix.states.emplace_back();
      saved.after_blocks = int64_t(i) + 1;
      saved.state.resize(prefix.state_floats);
      LOCKSTEP_CHECK(snapshots_->Load(hashes[i], saved.state.data()));
    }
    run.resize(prefix.states.empty() ? 0 : size_t(prefix.states.back().after_blocks));
  }
  prefix.chain_root = scheduler_.kv().run_root();
  prefix.block_tokens = layout_.block_tokens;
  prefix.block_bytes = layout_.BlockBytes();
  prefix.tokens.assign(tokens.begin(), tokens.begin() + std::ptrdiff_t(run.size()) * layout_.block_tokens);
  prefix.data.resize(run.size() * prefix.block_bytes);
  for (size_t i = 0; i < run.size(); ++i) {
    std::memcpy(prefix.data.data() + i * prefix.block_bytes, blocks_->data(run[i]), prefix.block_bytes);
  }
  return prefix;
}

Result<int32_t> Engine::Loop::ImportPrefix(const SavedPrefix& prefix) {
  LOCKSTEP_RETURN_IF_ERROR(SavedPrefixSupport());
  if (prefix.chain_root != scheduler_.kv().run_root() || prefix.block_tokens != layout_.block_tokens ||
      prefix.block_bytes != layout_.BlockBytes()) {
    return InvalidArgument("it was saved with another KV layout (blocks of " +
                           std::to_string(prefix.block_tokens) + " tokens and " +
                           std::to_string(prefix.block_bytes) +
                           " bytes; this server's: " + std::to_string(layout_.block_tokens) + " and " +
                           std::to_string(layout_.BlockBytes()) + ", or another KV dtype or shape)");
  }
  const uint64_t state_floats = snapshots_ != nullptr ? uint64_t(snapshots_->state_floats()) : 0;
  if (!prefix.states.empty() && prefix.state_floats != state_floats) {
    return InvalidArgument("it holds recurrent states of " + std::to_string(prefix.state_floats) +
                           " floats; this model's are " + std::to_string(state_floats));
  }
  if (state_floats > 0 && prefix.states.empty() && !prefix.tokens.empty()) {
    return InvalidArgument("it holds no recurrent state, which this model's recurrent layers need");
  }
  const int64_t n_vocab = model_->config().n_vocab;
  for (size_t i = 0; i < prefix.tokens.size(); ++i) {
    if (prefix.tokens[i] < 0 || prefix.tokens[i] >= n_vocab) {
      return InvalidArgument("its token " + std::to_string(i) + " (id " + std::to_string(prefix.tokens[i]) +
                             ") is outside the model's vocabulary of " + std::to_string(n_vocab));
    }
  }
  const int64_t blocks = scheduler_.kv().CacheRun(prefix.tokens, [&](BlockId block, int64_t index) {
    std::memcpy(blocks_->data(block), prefix.data.data() + size_t(index) * prefix.block_bytes,
                prefix.block_bytes);
  });
  int64_t usable = blocks;
  if (snapshots_ != nullptr) {
    // The blocks serve up to the last state among them: its snapshot is where a prompt resumes.
    const std::vector<BlockHash> hashes = scheduler_.kv().RunHashes(prefix.tokens);
    usable = 0;
    for (const SavedState& saved : prefix.states) {
      if (saved.after_blocks > blocks) break;
      snapshots_->Store(hashes[size_t(saved.after_blocks) - 1], saved.state.data());
      usable = saved.after_blocks;
    }
  }
  CountCachedBlocks();
  return int32_t(usable * layout_.block_tokens);
}

Result<int64_t> Engine::Loop::ForgetPrefix(std::span<const int32_t> tokens) {
  LOCKSTEP_RETURN_IF_ERROR(SavedPrefixSupport());
  const int64_t dropped = scheduler_.kv().ForgetRun(tokens);
  CountCachedBlocks();
  return dropped;
}

}  // namespace lockstep
