// Block hashes for the prefix cache. A full KV block is named by a hash chained over everything its KV
// depends on: the hash of the block before it (so a block's name covers the whole prefix), the block's token
// ids, and — in the chain's root — whatever else changes the KV (KV dtype, block size and the KV's shape;
// a caller's salt for the model or a tenant). Pure functions, safe from any thread.
//
//   root = RootBlockHash(layout, salt)
//   h0 = NextBlockHash(root, tokens[0 .. bt))     h1 = NextBlockHash(h0, tokens[bt .. 2bt))     ...
//
// 64-bit hashes (libstdc++'s std::hash over bytes, MurmurHash2-64A); BlockPool stores each cached block's
// parent hash and tokens beside its hash and compares them on lookup, so a hit needs the block's own tokens
// to match and a chain-hash collision at the level below it (~n^2 / 2^64 for n distinct prefixes) to go
// wrong.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/batch.h"

namespace lockstep {

using BlockHash = uint64_t;

// The chain's root for one KV layout (dtype, block_tokens, layers, KV heads, head dim) and salt.
BlockHash RootBlockHash(const KvLayout& layout, uint64_t salt);
// The hash of a block holding `tokens` after a block hashed `parent`.
BlockHash NextBlockHash(BlockHash parent, std::span<const int32_t> tokens);
// A sequence's own root: `root` for salt 0, else a hash of both (e.g. LoraCacheSalt: KV computed with other
// LoRA scales is never found).
BlockHash SaltedRoot(BlockHash root, uint64_t salt);
// A salt for LoRA adapter scales (model/lora_adapter.h): 0 when every scale is 0 (empty: the base model),
// else a hash of the scales' values up to the last non-zero one.
uint64_t LoraCacheSalt(std::span<const float> scales);
// Appends the hashes of tokens' full blocks not yet in `hashes` (hashes[i] names tokens[i*bt, (i+1)*bt)).
void ExtendBlockHashes(BlockHash root, std::span<const int32_t> tokens, int32_t block_tokens,
                       std::vector<BlockHash>& hashes);

}  // namespace lockstep
