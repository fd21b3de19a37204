// Deterministic test inputs and byte hashes for the tests that compare lockstep's quantizers with ggml's
// bytes: the throwaway C programs that recorded ggml's hashes computed the same inputs and the same FNV-1a.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep::testing {

// A float in [-1, 1) from an integer hash of i.
inline float HashedUnit(uint32_t i) {
  uint32_t h = i * 2654435761u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return static_cast<float>(static_cast<int32_t>(h)) * 0x1p-31f;
}

// 64-bit FNV-1a of n bytes.
inline uint64_t Fnv1a(const void* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(data)[i]) * 1099511628211ull;
  return h;
}

}  // namespace lockstep::testing
