#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/attention_decode.h"
#include "model/attention_kernels.h"
#include "tensor/float16.h"
#include "tensor/prefetch.h"

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#include <immintrin.h>
#define LOCKSTEP_ATTN_AVX2 1
#endif

namespace lockstep {
namespace {

// src[0..n) stored as dtype at element 0, stride, 2 * stride, ... of dst.
void StoreVector(KvDtype dtype, const float* src, std::byte* dst, int n, size_t stride) {
  if (dtype == KvDtype::kF32) {
    float* f = reinterpret_cast<float*>(dst);
    if (stride == 1) {
      std::memcpy(f, src, size_t(n) * sizeof(float));
    } else {
      for (int i = 0; i < n; ++i) f[i * stride] = src[i];
    }
    return;
  }
  uint16_t* h = reinterpret_cast<uint16_t*>(dst);
  int i = 0;
#ifdef LOCKSTEP_ATTN_AVX2
  for (; i + 8 <= n; i += 8) {
    alignas(16) uint16_t eight[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(eight),
                    _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    if (stride == 1) {
      std::memcpy(h + i, eight, sizeof(eight));
    } else {
      for (int j = 0; j < 8; ++j) h[(i + j) * stride] = eight[j];
    }
  }
#endif
  for (; i < n; ++i) h[i * stride] = F32ToF16(src[i]);
}

template <typename T>
T* Grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Per-thread scratch, grown on demand and then reused: no allocation per step once warm.
struct Scratch {
  std::vector<float> scores, keys, values, queries;
};
thread_local Scratch scratch;

const attention::KernelLevel kLevel = attention::BestKernelLevel();
// Key positions widened per DotKeys call (about 64 KiB of f32 keys at head_dim 64).
constexpr int32_t kKeyChunk = 256;

}  // namespace

void WriteKv(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t position,
             const float* k, const float* v) {
  std::byte* block = blocks[position / kv.block_tokens];
  const size_t slot = size_t(position % kv.block_tokens);
  for (int32_t h = 0; h < kv.n_kv_head; ++h) {  // keys dim-major, values slot-major (model/batch.h)
    StoreVector(kv.dtype, k + size_t(h) * kv.head_dim,
                block + kv.KeyOffset(layer, h) + slot * kv.ElementBytes(), kv.head_dim,
                size_t(kv.block_tokens));
    StoreVector(kv.dtype, v + size_t(h) * kv.head_dim,
                block + kv.ValueOffset(layer, h) + slot * size_t(kv.head_dim) * kv.ElementBytes(),
                kv.head_dim, 1);
  }
}

void AttendRows(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t kv_head,
                int32_t first_position, int32_t rows, const float* q, size_t q_stride, int32_t heads,
                float scale, float* out, size_t out_stride) {
  using attention::AccumulateValues;
  using attention::DotKeys;
  const int n = kv.head_dim;
  const int32_t bt = kv.block_tokens;
  const bool f16 = kv.dtype == KvDtype::kF16;
  const size_t k_off = kv.KeyOffset(layer, kv_head);
  const size_t v_off = kv.ValueOffset(layer, kv_head);
  const int32_t max_len = first_position + rows;
  const size_t stride = (size_t(max_len) + 7) / 8 * 8;  // scores per (row, head), room for softmax padding
  float* scores = Grow(scratch.scores, size_t(rows) * heads * stride);
  if (rows == 1 && attention::CanAttendDecodeRow(kLevel, n, bt, heads)) {  // straight from the stored blocks
    attention::AttendDecodeRow(kLevel, blocks.data(), k_off, v_off, f16, bt, max_len, q, size_t(n), heads, n,
                               scale, scores, stride, out, size_t(n));
    return;
  }
  float* values = Grow(scratch.values, size_t(bt) * n);
  // The queries side by side, query (r, h) at (r * heads + h) * n: one DotKeys call takes all rows' heads.
  float* queries = Grow(scratch.queries, size_t(rows) * heads * n);
  for (int32_t r = 0; r < rows; ++r) {
    std::memcpy(queries + size_t(r) * heads * n, q + r * q_stride, size_t(heads) * n * sizeof(float));
  }
  auto row_scores = [&](int32_t r, int32_t h) { return scores + (size_t(r) * heads + h) * stride; };

  // Visits the blocks of K (or V) in position order: widen(src, t0, count) widens each block's run of this
  // head once (the next block's run prefetched meanwhile), then visit(r_first, t0, count) runs, rows before
  // r_first not reaching into the block and `count` being how many of its positions the last row attends to.
  const int64_t head_bytes = int64_t(kv.HeadBytes());
  auto for_each_block = [&](size_t offset, auto widen, auto visit) {
    // The next block's run lies elsewhere in memory (blocks hold every layer): the hardware prefetcher does
    // not follow.
    PrefetchBytes(blocks[0] + offset, 0, head_bytes);
    for (int32_t t0 = 0; t0 < max_len; t0 += bt) {
      if (t0 + bt < max_len) PrefetchBytes(blocks[(t0 + bt) / bt] + offset, 0, head_bytes);
      widen(blocks[t0 / bt] + offset, t0, std::min(max_len - t0, bt));
      visit(std::max(0, t0 - first_position), t0, std::min(max_len - t0, bt));
    }
  };
  // Scores: key blocks widened side by side into chunks of about kKeyChunk positions (ending on a 16-position
  // group boundary, so they stay in L2 however long the context), each scored by one call for every row and
  // head (each key group serves every query while in L1; a decode row's few queries take several groups at
  // once). Rows also get scores past their own position, up to max_len: they lie in the row's buffer (stride
  // >= max_len) and are never read.
  int32_t chunk_start = 0;
  auto widen_keys = [&](const std::byte* src, int32_t t0, int32_t count) {
    const int32_t end = t0 + count;
    float* keys = Grow(scratch.keys, attention::TransposedKeyFloats(end - chunk_start, n));
    attention::WidenKeysTransposed(src, f16, bt, count, n, keys, t0 - chunk_start);
    if (end == max_len || (end - chunk_start >= kKeyChunk && end % attention::kKeyLanes == 0)) {
      DotKeys(kLevel, queries, size_t(n), rows * heads, keys, end - chunk_start, n, scale,
              scores + chunk_start, stride);
      chunk_start = end;
    }
  };
  for_each_block(k_off, widen_keys, [](int32_t, int32_t, int32_t) {});
  for (int32_t r = 0; r < rows; ++r) {
    for (int32_t h = 0; h < heads; ++h) attention::Softmax(kLevel, row_scores(r, h), first_position + r + 1);
  }
  // Outputs side by side like the queries (the queries' copy is done with), so that one call accumulates
  // every row that sees a whole block.
  float* sums = queries;
  std::memset(sums, 0, size_t(rows) * heads * n * sizeof(float));
  auto widen_values = [&](const std::byte* src, int32_t, int32_t count) {
    attention::WidenValues(src, f16, count, n, values);
  };
  for_each_block(v_off, widen_values, [&](int32_t r_first, int32_t t0, int32_t count) {
    // Rows before r_full attend to part of this block (the diagonal), one call each.
    const int32_t r_full = std::max(r_first, t0 + count - 1 - first_position);
    for (int32_t r = r_first; r < r_full; ++r) {
      AccumulateValues(kLevel, row_scores(r, 0) + t0, stride, heads, values, first_position + r + 1 - t0, n,
                       sums + size_t(r) * heads * n, size_t(n));
    }
    AccumulateValues(kLevel, row_scores(r_full, 0) + t0, stride, (rows - r_full) * heads, values, count, n,
                     sums + size_t(r_full) * heads * n, size_t(n));
  });
  for (int32_t r = 0; r < rows; ++r) {
    std::memcpy(out + r * out_stride, sums + size_t(r) * heads * n, size_t(heads) * n * sizeof(float));
  }
}

}  // namespace lockstep
