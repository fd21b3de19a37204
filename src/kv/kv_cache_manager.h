// KvCacheManager: the one seam between the scheduler and BlockPool (after vLLM v1's KVCacheManager). It owns
// every sequence's block table and answers "give me the blocks for these tokens" with how many of them are
// already computed: full blocks are found again by their chained hash (kv/block_hash.h) — from a finished
// request, a running neighbour, or a fork's parent — and shared read-only by reference count. The scheduler
// keeps the tokens and decides what runs; this class keeps which block holds what. Engine-thread only.
//
//   sequence A  tokens: [ system prompt ........ | doc .................. | question A ..]
//   A's table:          [ b0 ][ b1 ][ b2 ][ b3 ][ b4 ][ b5 ][ b6 ][ b7 ][ a8 ][ a9 ]
//   sequence B:         [ b0 ][ b1 ][ b2 ][ b3 ][ b4 ][ b5 ][ b6 ][ b7 ][ c8 ]         (b0..b7 ref 2)
//                        hash(b_i) = NextBlockHash(hash(b_{i-1}), tokens of block i); root = layout + salt
//
// Life of a block: allocated private to one table → written by that table's sequence only → once full and
// computed, Publish() names it by its hash (read-only from then on) → found by other prompts (ref +1) →
// released by every table (idle, LRU in BlockPool) → evicted only when a free block is needed.
// Rules that keep outputs exact:
//  - only full blocks are shared; a sequence never attaches the block holding its last known token (that
//    token must be computed for its logits), and a fork's partial block is copied, never shared (Share);
//  - a block written by a step (PrepareWrite) is private: ref_count 1 and not cached (asserted);
//  - Free/Remove drop only this sequence's references: a block another table holds stays;
//  - sliding windows (ReleaseBefore): a table's released blocks are a prefix of kNoBlock holes. A released
//    block was published first, so it is an idle cached block like any other (its content is the exact KV
//    of its tokens, found again by its hash until evicted, when its hash goes with it); a fork shares only
//    from a parent that still Holds the child's window.
// Claims: when a sequence is admitted it claims the full blocks of its known tokens that nobody has cached or
// claimed; another sequence needing a claimed block waits for it (ClaimedElsewhereFrom) and attaches it
// once published (AttachCached) instead of computing a copy. Claims end when published or the claimant is
// freed, so a wait always ends.
// With prefix caching off, nothing is hashed, matched, claimed or published; Share (forks) still works.
// Models with recurrent layers: a run of blocks is worth attaching only where a snapshot of the state at its
// end exists (kv/recurrent_state_cache.h), so Match and AttachCached take `usable_end`, which says whether a
// run may end after the block with a given hash; they attach the longest run that may.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"
#include "kv/block_pool.h"
#include "kv/block_table.h"

namespace lockstep {

using SequenceId = uint64_t;

struct KvCacheOptions {
  bool prefix_caching = true;
  uint64_t salt = 0;  // mixed into every chain's root (e.g. the model's identity)
};

// The cached run of full blocks at the start of a prompt (Match).
struct PrefixMatch {
  std::vector<BlockId> blocks;  // in order; their KV holds tokens [0, tokens)
  int32_t tokens = 0;           // blocks.size() × block_tokens
  int64_t idle_blocks = 0;  // matched blocks with no reference: attaching them takes them off the free pool
};

class KvCacheManager {
 public:
  KvCacheManager(BlockPool& pool, const KvCacheOptions& options);
  ~KvCacheManager();  // releases every block still held
  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  bool prefix_caching() const { return options_.prefix_caching; }
  const BlockPool& pool() const { return pool_; }
  int32_t block_tokens() const { return pool_.block_tokens(); }

  // Sequences. Add: a new id with an empty table. Free: releases its blocks (last first) and claims; it stays
  // known, empty (preemption). Remove: Free and forget.
  // `salt`: mixed into this sequence's chain root (SaltedRoot) only, so that its blocks are found only by
  // sequences with the same salt (LoRA scales: LoraCacheSalt).
  void Add(SequenceId id, uint64_t salt = 0);
  void Free(SequenceId id);
  void Remove(SequenceId id);
  bool Contains(SequenceId id) const { return seqs_.count(id) != 0; }

  const BlockTable& table(SequenceId id) const { return Get(id).table; }
  const std::vector<std::byte*>& addresses(SequenceId id) const { return Get(id).table.addresses(); }
  int64_t capacity_tokens(SequenceId id) const { return Get(id).table.capacity_tokens(block_tokens()); }

  // Whether a matched run may end after the block with this hash (empty: always).
  using UsableEnd = std::function<bool(BlockHash)>;

  // Admission of a sequence holding no blocks. Match: the longest cached run of full blocks of `tokens` (all
  // it knows), never including the block that holds the last token, that ends where usable_end allows.
  PrefixMatch Match(SequenceId id, std::span<const int32_t> tokens, const UsableEnd& usable_end = {});
  // Free-pool blocks Admit would take: the idle matched blocks plus new blocks up to capacity_tokens.
  int64_t BlocksToAdmit(const PrefixMatch& match, int64_t capacity_tokens) const;
  // Attaches the match and allocates blocks until capacity_tokens positions fit; claims the sequence's
  // full blocks that are neither cached nor claimed. False, nothing changed, when too few blocks are free.
  bool Admit(SequenceId id, std::span<const int32_t> tokens, const PrefixMatch& match,
             int64_t capacity_tokens);

  // Prefill. With `computed` at a block boundary: attaches the blocks of tokens from there on that are cached
  // now (published by another sequence since), replacing this table's unwritten blocks; returns the new
  // computed count (never past the block holding the last token; a run ends where usable_end allows).
  // Otherwise returns `computed`.
  int32_t AttachCached(SequenceId id, std::span<const int32_t> tokens, int32_t computed,
                       const UsableEnd& usable_end = {});
  // The chain hash of the full block of `tokens` (the sequence's) that ends at `position` (a positive
  // multiple of block_tokens, at most tokens.size()): what names a state snapshot taken there.
  BlockHash BoundaryHash(SequenceId id, std::span<const int32_t> tokens, int32_t position);
  // The first block start at or after `computed` whose block another sequence has claimed (is computing):
  // a chunk should stop there and wait. tokens.size() when there is none.
  int32_t ClaimedElsewhereFrom(SequenceId id, std::span<const int32_t> tokens, int32_t computed) const;
  // Fork: `child`'s KV for positions [0, shared_tokens) becomes parent's — its full blocks shared, the
  // partial block copied into the child's own block (the child writes it next). The child's blocks there
  // are released; it must hold blocks past shared_tokens and have computed at most shared_tokens; the parent
  // must have computed at least shared_tokens.
  void Share(SequenceId child, SequenceId parent, int32_t shared_tokens);

  // Writes. Blocks from the free pool that PrepareWrite(id, to) takes, and PrepareWrite itself: grows the
  // table to hold `to` positions (false, nothing changed, when too few blocks are free). Every block that
  // positions [from, to) fall in must be private (asserted).
  int64_t BlocksToWrite(SequenceId id, int32_t to) const;
  bool PrepareWrite(SequenceId id, int32_t from, int32_t to);

  // Sliding windows (every layer windowed): releases the sequence's blocks wholly below `position`, which no
  // row of it reads any more. Published blocks stay cached (idle, LRU) for other prompts to find.
  void ReleaseBefore(SequenceId id, int32_t position) {
    Get(id).table.ReleaseBefore(pool_, position / block_tokens());
  }
  // Whether the block holding `position` (inside the table) is still held: released blocks are a prefix of
  // the table, so then every block from it on is.
  bool Holds(SequenceId id, int32_t position) const {
    return Get(id).table.block(position / block_tokens()) != kNoBlock;
  }

  // After a step: the sequence's KV holds tokens [0, computed); its newly full blocks are published (a block
  // whose hash another block already holds stays private) and their claims end.
  void Publish(SequenceId id, std::span<const int32_t> tokens, int32_t computed);

  int64_t copies() const { return copies_; }  // partial blocks copied by Share

  // Runs of blocks outside any sequence, named by the unsalted chain (the base model's KV): what a saved
  // prefix is read from and written into (llama.cpp's slot save / restore / erase; kv/saved_prefix.h). All
  // three find nothing and change nothing with prefix caching off.
  // The cached blocks of tokens' full blocks from the start, in order, up to the first block not cached.
  std::vector<BlockId> CachedRun(std::span<const int32_t> tokens) const;
  // Caches the full blocks of `tokens` from the start: a block cached already is kept, a missing one is
  // allocated (evicting idle cached blocks of other prefixes, least recently used first, never this run's),
  // filled by `fill(block, index)` with the KV of block `index` and published. Stops where no block can be
  // had (every block in use). Returns the blocks cached from the start afterwards; they are left idle, the
  // run's last block first in the LRU order (so evicted first, as a finished sequence's are).
  int64_t CacheRun(std::span<const int32_t> tokens, const std::function<void(BlockId, int64_t)>& fill);
  // Drops the idle blocks of tokens' cached run from the cache (blocks some sequence holds stay cached).
  // Returns how many were dropped.
  int64_t ForgetRun(std::span<const int32_t> tokens);
  // Such runs' chain root, and the hashes of tokens' full blocks on it (hashes[i] names the run up to the
  // end of block i: what names a state snapshot there).
  BlockHash run_root() const { return root_; }
  std::vector<BlockHash> RunHashes(std::span<const int32_t> tokens) const;

 private:
  struct Sequence {
    BlockTable table;
    BlockHash root = 0;             // the chain's root: the manager's, salted by Add's salt
    std::vector<BlockHash> hashes;  // of the full blocks of the tokens seen so far
    int64_t published = 0;          // blocks [0, published) are cached or were left private as duplicates
    std::vector<BlockHash> claims;
  };

  Sequence& Get(SequenceId id);
  const Sequence& Get(SequenceId id) const;
  BlockKey Key(const Sequence& seq, std::span<const int32_t> tokens, int64_t index) const;
  // The key of block `index` of a run hashed from root_ (hashes: ExtendBlockHashes of its tokens).
  BlockKey RunKey(std::span<const BlockHash> hashes, std::span<const int32_t> tokens, int64_t index) const;
  void DropClaims(SequenceId id, Sequence& seq);

  BlockPool& pool_;
  KvCacheOptions options_;
  BlockHash root_;
  std::unordered_map<SequenceId, std::unique_ptr<Sequence>> seqs_;
  std::unordered_map<BlockHash, SequenceId> claims_;  // block hash → the sequence computing it
  int64_t copies_ = 0;
};

}  // namespace lockstep
