#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/attention_kernels.h"
#include "tensor/float16.h"

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#include <immintrin.h>
#define LOCKSTEP_ATTN_AVX2 1
#endif

namespace lockstep {
namespace {

void StoreVector(KvDtype dtype, const float* src, std::byte* dst, int n) {
  if (dtype == KvDtype::kF32) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
    return;
  }
  uint16_t* h = reinterpret_cast<uint16_t*>(dst);
  int i = 0;
#ifdef LOCKSTEP_ATTN_AVX2
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  }
#endif
  for (; i < n; ++i) h[i] = F32ToF16(src[i]);
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

// Asks for the cache lines of [p, p + bytes): the next KV block's run lies elsewhere in memory (blocks hold
// every layer), beyond what the hardware prefetcher follows.
inline void Prefetch(const std::byte* p, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 64) __builtin_prefetch(p + i);
}

}  // namespace

void WriteKv(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t position,
             const float* k, const float* v) {
  std::byte* block = blocks[position / kv.block_tokens];
  const size_t slot_offset = size_t(position % kv.block_tokens) * size_t(kv.head_dim) * kv.ElementBytes();
  for (int32_t h = 0; h < kv.n_kv_head; ++h) {
    StoreVector(kv.dtype, k + size_t(h) * kv.head_dim, block + kv.KeyOffset(layer, h) + slot_offset,
                kv.head_dim);
    StoreVector(kv.dtype, v + size_t(h) * kv.head_dim, block + kv.ValueOffset(layer, h) + slot_offset,
                kv.head_dim);
  }
}

void AttendRows(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t kv_head,
                int32_t first_position, int32_t rows, const float* q, size_t q_stride, int32_t heads,
                float scale, float* out, size_t out_stride) {
  using attention::AccumulateValues;
  using attention::DotKeys;
  const int n = kv.head_dim;
  const int dp = attention::PaddedHeadDim(n);
  const int32_t bt = kv.block_tokens;
  const bool f16 = kv.dtype == KvDtype::kF16;
  const size_t k_off = kv.KeyOffset(layer, kv_head);
  const size_t v_off = kv.ValueOffset(layer, kv_head);
  const int32_t max_len = first_position + rows;
  const size_t run = size_t(n) * kv.ElementBytes();     // bytes of one position's K (or V) of this head
  const size_t stride = (size_t(max_len) + 7) / 8 * 8;  // scores per (row, head), room for softmax padding
  float* scores = Grow(scratch.scores, size_t(rows) * heads * stride);
  float* keys = Grow(scratch.keys, attention::PairedKeyFloats(bt, n));
  float* values = Grow(scratch.values, size_t(bt) * n);
  // Queries padded to a multiple of 8 dims (zeros) when head_dim is not one; either way a row's heads lie dp
  // floats apart.
  const float* queries = q;
  size_t query_stride = q_stride;
  if (dp != n) {
    float* padded = Grow(scratch.queries, size_t(rows) * heads * dp);
    for (int32_t r = 0; r < rows; ++r) {
      for (int32_t h = 0; h < heads; ++h) {
        float* dst = padded + (size_t(r) * heads + h) * dp;
        std::memcpy(dst, q + r * q_stride + size_t(h) * n, size_t(n) * sizeof(float));
        std::fill(dst + n, dst + dp, 0.0f);
      }
    }
    queries = padded;
    query_stride = size_t(heads) * dp;
  }
  auto row_scores = [&](int32_t r, int32_t h) { return scores + (size_t(r) * heads + h) * stride; };

  // Visits the blocks of K (or V) in position order: each block's run of this head is widened once into
  // `widened` (the next block's run prefetched meanwhile), then visit(r, t0, count) runs for every row that
  // reaches into the block, `count` being how many of its positions that row attends to.
  auto for_each_block = [&](size_t offset, auto widen, float* widened, auto visit) {
    Prefetch(blocks[0] + offset, size_t(std::min(max_len, bt)) * run);
    for (int32_t t0 = 0; t0 < max_len; t0 += bt) {
      if (t0 + bt < max_len) {
        Prefetch(blocks[(t0 + bt) / bt] + offset, size_t(std::min(max_len - t0 - bt, bt)) * run);
      }
      widen(blocks[t0 / bt] + offset, f16, std::min(max_len - t0, bt), n, widened);
      for (int32_t r = std::max(0, t0 - first_position); r < rows; ++r) {
        visit(r, t0, std::min(first_position + r + 1 - t0, bt));
      }
    }
  };
  // Scores; each widened key block serves every row and head.
  for_each_block(k_off, attention::WidenKeysPaired, keys, [&](int32_t r, int32_t t0, int32_t count) {
    DotKeys(kLevel, queries + r * query_stride, size_t(dp), heads, keys, count, n, scale,
            row_scores(r, 0) + t0, stride);
  });
  for (int32_t r = 0; r < rows; ++r) {
    for (int32_t h = 0; h < heads; ++h) {
      attention::Softmax(kLevel, row_scores(r, h), first_position + r + 1);
      std::memset(out + r * out_stride + size_t(h) * n, 0, size_t(n) * sizeof(float));
    }
  }
  for_each_block(v_off, attention::WidenValues, values, [&](int32_t r, int32_t t0, int32_t count) {
    AccumulateValues(kLevel, row_scores(r, 0) + t0, stride, heads, values, count, n, out + r * out_stride,
                     size_t(n));
  });
}

}  // namespace lockstep
