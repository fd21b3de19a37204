// How a KV cache stores one head's keys or values for the `block_tokens` slots of a block (model/batch.h
// places these regions): the element types, their bytes, and the writes of one position. The readers are
// the attention kernels (tensor/attention_kernels.h, tensor/attention_decode.h), which widen what is stored
// to f32 exactly, so a widened element is a function of the stored bytes alone.
//
// f32 and f16: keys dim-major, [head_dim][block_tokens] elements (a head's dim d of all slots together);
// values slot-major, [block_tokens][head_dim].
// q8_0 (llama.cpp's `--cache-type-k/v q8_0`, about half the bytes of f16): each position's head_dim values
// are cut into scale groups of KvScaleGroup(head_dim) dims, each stored as int8 quants q in [-127, 127] and
// one f16 scale d, the value being q * d (exact in f32). Keys: int8 [head_dim][block_tokens] (dim-major as
// above), then f16 scales [head_dim / group][block_tokens]; values: int8 [block_tokens][head_dim], then f16
// scales [block_tokens][head_dim / group]. A position's quants and scales depend only on its own vector
// (d = f16(max|x| / 127), q = round-to-nearest-even(x / d) clamped to ±127; d = 0 gives q = 0), so storing
// is deterministic and batch invariant. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace lockstep {

enum class KvDtype { kF16, kF32, kQ8_0 };
inline constexpr KvDtype kKvDtypes[] = {KvDtype::kF16, KvDtype::kF32, KvDtype::kQ8_0};

// "f16", "f32", "q8_0"; ParseKvDtype takes those names (nullopt for anything else).
const char* KvDtypeName(KvDtype dtype);
std::optional<KvDtype> ParseKvDtype(std::string_view name);

// Dims sharing one q8_0 scale: 32 (llama.cpp's Q8_0 block) where head_dim is a multiple of 32, else the
// whole head_dim (one scale per position and head).
inline int KvScaleGroup(int head_dim) { return head_dim % 32 == 0 ? 32 : head_dim; }

// Bytes of one head's keys (or values) for a block of `block_tokens` slots.
size_t KvHeadBytes(KvDtype dtype, int32_t block_tokens, int head_dim);

// Where a q8_0 head region's f16 scales start (after its block_tokens * head_dim int8 quants).
inline size_t KvScaleOffset(int32_t block_tokens, int head_dim) {
  return size_t(block_tokens) * size_t(head_dim);
}

// Stores one position's key (or value) x[0..head_dim) at `slot` of the head region `head`.
void StoreKey(KvDtype dtype, const float* x, int head_dim, int32_t block_tokens, int32_t slot,
              std::byte* head);
void StoreValue(KvDtype dtype, const float* x, int head_dim, int32_t block_tokens, int32_t slot,
                std::byte* head);

// One q8_0 scale group: x[0..n) to quants q[0], q[q_stride], ... and the f16 bits of its scale, as described
// above.
uint16_t QuantizeKvGroup(const float* x, int n, int8_t* q, size_t q_stride);

}  // namespace lockstep
