// SavedPrefix: a run of cached KV blocks written to a file and read back (llama.cpp's POST
// /slots/{id}?action=save|restore), so that a long prompt's KV outlives the server process. A file holds
// whole blocks only: the tokens of n full blocks and, for each, the block's bytes exactly as the pool keeps
// them (BlockPool: every layer's K and V), behind a header naming what those bytes mean — the chain root of
// the KV layout (kv/block_hash.h: dtype, block size, shapes) and a fingerprint of the model that computed
// them, both checked by whoever loads it (the engine the root, the server the fingerprint). Models with
// recurrent layers add their recurrent state at some block boundaries (the prefix cache's snapshots there,
// kv/recurrent_state_cache.h: the KV alone does not resume them; a prompt's end and a reply's, say).
//
//   "LSKVSAVE" | u32 version (1) | u32 block_tokens | u64 chain_root | u64 model_fingerprint |
//   u64 block_bytes | u64 blocks | u64 state_floats | u64 states |
//   i32 tokens[blocks × block_tokens] | bytes[blocks × block_bytes] |
//   states × (u64 after_blocks | f32 state[state_floats])
//   (little-endian, as every CPU lockstep builds for)
//
// Pure functions over files; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace lockstep {

// A recurrent state after the first `after_blocks` blocks of a SavedPrefix.
struct SavedState {
  int64_t after_blocks = 0;  // 1..blocks()
  std::vector<float> state;  // SavedPrefix::state_floats
};

struct SavedPrefix {
  uint64_t chain_root = 0;         // RootBlockHash(layout, 0) of the KV that `data` holds
  uint64_t model_fingerprint = 0;  // the model that computed it (the caller's choice of hash)
  int32_t block_tokens = 0;
  uint64_t block_bytes = 0;
  std::vector<int32_t> tokens;     // blocks() × block_tokens: the tokens whose KV `data` holds
  std::vector<std::byte> data;     // blocks() × block_bytes, block after block
  uint64_t state_floats = 0;       // of each state (0: the model has no recurrent layers)
  std::vector<SavedState> states;  // ascending after_blocks, each distinct

  int64_t blocks() const { return block_tokens > 0 ? int64_t(tokens.size()) / block_tokens : 0; }
  // Bytes of the file that holds it.
  uint64_t FileBytes() const;
};

// Writes `prefix` to `path` (through a temporary file beside it, `path`.tmp.<pid>.<n>, renamed: a reader
// never sees half a file, and two writers of one path never share a temporary file). Errors name the path and
// the system's reason.
Status WriteSavedPrefix(const std::string& path, const SavedPrefix& prefix);

// Reads a file WriteSavedPrefix wrote. NotFound when there is no such file; InvalidArgument naming the path
// and what is wrong ("not a lockstep saved prefix", "version 7, this build reads 1", "truncated: 1234 bytes,
// the header says 5678", "state 2 follows block 9 of 4", ...). Token ids are not checked against a
// vocabulary here.
Result<SavedPrefix> ReadSavedPrefix(const std::string& path);

// What SavedPrefix::model_fingerprint holds for a model file (the server's slot files and `generate
// --prompt-cache` stamp it and compare it): the file's size and the bytes of its first and last MiB (the
// header with every tensor's name, type and offset, and the last tensor's data), hashed. Errors name the
// path.
Result<uint64_t> ModelFileFingerprint(const std::string& path);

}  // namespace lockstep
