#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "tensor/activations.h"
#include "tensor/prefetch.h"

namespace lockstep {
namespace {

// Carves typed buffers, each 64-byte aligned, out of caller scratch; with a null base it only counts bytes
// (so the *ScratchBytes functions and the attention code carve the same buffers in the same order).
class ScratchCarver {
 public:
  explicit ScratchCarver(std::byte* base) : base_(base) {}
  template <typename T>
  T* Take(size_t n) {
    T* p = base_ != nullptr ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += (n * sizeof(T) + 63) / 64 * 64;
    return p;
  }
  size_t used() const { return used_; }

 private:
  std::byte* base_;
  size_t used_ = 0;
};

// Key positions widened per DotKeys call (about 64 KiB of f32 keys at head_dim 64).
constexpr int32_t kKeyChunk = 256;
// Value positions widened before they are accumulated (16 KiB of f32 values at head_dim 64, in L1): a call
// per block of 16 paid its accumulators' loads and stores once per 16 positions.
constexpr int32_t kValueChunk = 64;

// Buffers of one AttendRows call over widened blocks.
struct TileBuffers {
  size_t stride = 0;  // scores per (row, head), room for softmax padding
  float *scores, *values, *queries, *keys, *weights, *merged;
  attention::SoftmaxStats* stats;
};
TileBuffers TakeTileBuffers(ScratchCarver& c, const KvLayout& kv, int32_t first_position, int32_t rows,
                            int32_t heads, int32_t base) {
  const int32_t max_len = first_position + rows, bt = kv.block_tokens;
  const size_t queries = size_t(rows) * heads * kv.head_dim, outputs = size_t(rows) * heads * kv.ValueDim(),
               weights = size_t(rows) * heads * AttentionParts(max_len - 1);
  // A key chunk closes at a group boundary once it holds kKeyChunk positions; blocks add bt at a time.
  const int32_t key_chunk = std::min(max_len - base, kKeyChunk + 16 * bt);
  TileBuffers b;
  b.stride = (size_t(max_len - base) + 7) / 8 * 8;  // position t at t - base
  b.scores = c.Take<float>(size_t(rows) * heads * b.stride);
  b.values = c.Take<float>(size_t(kValueChunk + bt) * kv.ValueDim());
  // The queries side by side, query (r, h) at (r * heads + h) * n: one DotKeys call takes all rows' heads
  // (then reused for the part sums of the values).
  b.queries = c.Take<float>(std::max(queries, outputs));
  b.keys = c.Take<float>(attention::TransposedKeyFloats(key_chunk, kv.head_dim));
  b.stats = c.Take<attention::SoftmaxStats>(weights);
  b.weights = c.Take<float>(weights);
  b.merged = c.Take<float>(outputs);
  return b;
}

// Buffers of one decode row attended straight from the stored blocks.
struct StoredBuffers {
  float *scores, *partials, *weights;
  attention::SoftmaxStats* stats;
};
StoredBuffers TakeStoredBuffers(ScratchCarver& c, const KvLayout& kv, int32_t position, int32_t heads) {
  const size_t parts = size_t(AttentionParts(position));
  StoredBuffers b;
  b.scores = c.Take<float>(size_t(heads) * kAttentionPart);  // one part at a time
  b.partials = c.Take<float>(size_t(heads) * parts * kv.ValueDim());
  b.stats = c.Take<attention::SoftmaxStats>(size_t(heads) * parts);
  b.weights = c.Take<float>(size_t(heads) * parts);
  return b;
}

}  // namespace

void WriteKv(const KvLayout& kv, const std::vector<std::byte*>& blocks, int32_t layer, int32_t position,
             const float* k, const float* v) {
  std::byte* block = blocks[position / kv.block_tokens];
  const size_t slot = size_t(position % kv.block_tokens);
  for (int32_t h = 0; h < kv.n_kv_head; ++h) {  // layouts: tensor/kv_storage.h
    StoreKey(kv.dtype, k + size_t(h) * kv.head_dim, kv.head_dim, kv.block_tokens, int32_t(slot),
             block + kv.KeyOffset(layer, h));
    StoreValue(kv.dtype, v + size_t(h) * kv.ValueDim(), kv.ValueDim(), kv.block_tokens, int32_t(slot),
               block + kv.ValueOffset(layer, h));
  }
}

namespace {

// out[d] = fma(w, x[d], out[d]): one part's outputs merged into a row's (what AccumulateValues does per
// position; inline, as merges are many and small).
inline void MergePart(float w, const float* x, int n, float* out) {
  for (int d = 0; d < n; ++d) out[d] = std::fma(w, x[d], out[d]);
}

// Positions [begin, end) (at most one part) of one row straight from the stored blocks (k.decode_row);
// scores: room for heads x kAttentionPart floats.
void AttendStoredPart(const AttentionKernels& k, const KvLayout& kv, const std::vector<std::byte*>& blocks,
                      int32_t layer, int32_t kv_head, int32_t begin, int32_t end, const float* q,
                      int32_t heads, float scale, float* out, size_t out_stride,
                      attention::SoftmaxStats* stats, size_t stats_stride, float* scores) {
  const size_t stride = (size_t(end - begin) + 7) / 8 * 8;
  k.decode_row(blocks.data(), kv.KeyOffset(layer, kv_head), kv.ValueOffset(layer, kv_head), kv.dtype,
               kv.block_tokens, begin, end, q, size_t(kv.head_dim), heads, kv.head_dim, kv.ValueDim(), scale,
               scores, stride, out, out_stride, stats, stats_stride);
}

// MergeRowParts with its weights buffer (heads x parts floats) given.
void MergeParts(const AttentionKernels& k, const KvLayout& kv, int32_t position, int32_t heads,
                const float* partials, const attention::SoftmaxStats* stats, float* out, float* weights) {
  const int32_t parts = AttentionParts(position);
  const int n = kv.ValueDim();
  k.partition_weights(stats, parts, weights, heads, size_t(parts));  // every head at once
  for (int32_t h = 0; h < heads; ++h) {
    float* o = out + size_t(h) * n;
    std::memset(o, 0, size_t(n) * sizeof(float));
    for (int32_t p = 0; p < parts; ++p) {
      const size_t at = size_t(h) * parts + p;
      MergePart(weights[at], partials + at * n, n, o);
    }
  }
}

}  // namespace

void ApplySinks(const float* sinks, const attention::SoftmaxStats* stats, size_t stride, int32_t parts,
                int32_t heads, int32_t head_dim, float* out) {
  for (int32_t h = 0; h < heads; ++h) {
    const attention::SoftmaxStats* st = stats + size_t(h) * stride;
    float largest = -std::numeric_limits<float>::infinity();
    for (int32_t p = 0; p < parts; ++p) largest = std::max(largest, st[p].max);
    float sum = 0;
    for (int32_t p = 0; p < parts; ++p) {
      if (st[p].max != -std::numeric_limits<float>::infinity()) {
        sum = std::fma(ExpPolynomial(st[p].max - largest), st[p].sum, sum);
      }
    }
    const float factor = sum / (sum + ExpPolynomial(sinks[h] - largest));
    float* o = out + size_t(h) * head_dim;
    for (int32_t d = 0; d < head_dim; ++d) o[d] *= factor;
  }
}

int32_t AttentionStart(const KvLayout& kv, int32_t position, int32_t window) {
  if (window <= 0 || position < window) return 0;
  const int32_t align = std::lcm(attention::kKeyLanes, kv.block_tokens);
  return (position - window + 1) / align * align;
}

bool CanSplitRow(const AttentionKernels& k, const KvLayout& kv, int32_t heads, const AttentionRule& rule) {
  return rule.window == 0 && rule.softcap == 0 && rule.alibi_slopes == nullptr && k.decode_row != nullptr &&
         attention::CanAttendDecodeRow(k.level, kv.head_dim, kv.ValueDim(), kv.block_tokens, heads);
}

size_t AttendRowPartScratchBytes(int32_t heads) { return size_t(heads) * kAttentionPart * sizeof(float); }

void AttendRowPart(const AttentionKernels& k, const KvLayout& kv, const std::vector<std::byte*>& blocks,
                   int32_t layer, int32_t kv_head, int32_t position, int32_t part, const float* q,
                   int32_t heads, float scale, float* partials, attention::SoftmaxStats* stats,
                   std::byte* scratch) {
  const int32_t parts = AttentionParts(position);
  const int32_t begin = part * kAttentionPart, end = std::min(position + 1, begin + kAttentionPart);
  AttendStoredPart(k, kv, blocks, layer, kv_head, begin, end, q, heads, scale,
                   partials + size_t(part) * kv.ValueDim(), size_t(parts) * kv.ValueDim(), stats + part,
                   size_t(parts), reinterpret_cast<float*>(scratch));
}

size_t MergeRowPartsScratchBytes(int32_t position, int32_t heads) {
  return size_t(heads) * AttentionParts(position) * sizeof(float);
}

void MergeRowParts(const AttentionKernels& k, const KvLayout& kv, int32_t position, int32_t heads,
                   const float* partials, const attention::SoftmaxStats* stats, float* out,
                   std::byte* scratch, const float* sinks) {
  MergeParts(k, kv, position, heads, partials, stats, out, reinterpret_cast<float*>(scratch));
  const int32_t parts = AttentionParts(position);
  if (sinks != nullptr) ApplySinks(sinks, stats, size_t(parts), parts, heads, kv.ValueDim(), out);
}

size_t AttendRowsScratchBytes(const AttentionKernels& k, const KvLayout& kv, int32_t first_position,
                              int32_t rows, int32_t heads, const AttentionRule& rule) {
  ScratchCarver c(nullptr);
  if (rows == 1 && CanSplitRow(k, kv, heads, rule)) {
    TakeStoredBuffers(c, kv, first_position, heads);
  } else {
    TakeTileBuffers(c, kv, first_position, rows, heads, AttentionStart(kv, first_position, rule.window));
  }
  return c.used();
}

void AttendRows(const AttentionKernels& k, const KvLayout& kv, const std::vector<std::byte*>& blocks,
                int32_t layer, int32_t kv_head, int32_t first_position, int32_t rows, const float* q,
                size_t q_stride, int32_t heads, float scale, float* out, size_t out_stride,
                std::byte* scratch, const AttentionRule& rule) {
  const int n = kv.head_dim, nv = kv.ValueDim();  // a key's (and query's) dims, a value's
  const int32_t bt = kv.block_tokens;
  const int32_t max_len = first_position + rows;
  const int32_t max_parts = AttentionParts(max_len - 1);
  ScratchCarver c(scratch);
  if (rows == 1 && CanSplitRow(k, kv, heads, rule)) {  // straight from the stored blocks
    const StoredBuffers b = TakeStoredBuffers(c, kv, first_position, heads);
    if (max_parts == 1) {
      attention::SoftmaxStats stats[8];
      AttendStoredPart(k, kv, blocks, layer, kv_head, 0, max_len, q, heads, scale, out, size_t(nv), stats, 1,
                       b.scores);
      if (rule.sinks != nullptr) ApplySinks(rule.sinks, stats, 1, 1, heads, nv, out);
      return;
    }
    for (int32_t p = 0; p < max_parts; ++p) {
      const int32_t begin = p * kAttentionPart, end = std::min(max_len, begin + kAttentionPart);
      AttendStoredPart(k, kv, blocks, layer, kv_head, begin, end, q, heads, scale,
                       b.partials + size_t(p) * nv, size_t(max_parts) * nv, b.stats + p, size_t(max_parts),
                       b.scores);
    }
    MergeParts(k, kv, first_position, heads, b.partials, b.stats, out, b.weights);
    if (rule.sinks != nullptr) ApplySinks(rule.sinks, b.stats, size_t(max_parts), max_parts, heads, nv, out);
    return;
  }
  // Positions [base, max_len) are read (base = 0 without a window); row r attends to [lo(r), its position]
  // and its softmax runs from start(r) (AttentionStart), the positions in [base, lo(r)) weighing exactly 0.
  const int32_t base = AttentionStart(kv, first_position, rule.window);
  auto start = [&](int32_t r) { return AttentionStart(kv, first_position + r, rule.window); };
  auto lo = [&](int32_t r) {
    return rule.window > 0 ? std::max(0, first_position + r - rule.window + 1) : 0;
  };
  const size_t k_off = kv.KeyOffset(layer, kv_head);
  const size_t v_off = kv.ValueOffset(layer, kv_head);
  // Scores per (row, head), position t at t - base, with room for softmax padding.
  const TileBuffers buffers = TakeTileBuffers(c, kv, first_position, rows, heads, base);
  const size_t stride = buffers.stride;
  float* scores = buffers.scores;
  float* values = buffers.values;
  float* queries = buffers.queries;
  for (int32_t r = 0; r < rows; ++r) {
    std::memcpy(queries + size_t(r) * heads * n, q + r * q_stride, size_t(heads) * n * sizeof(float));
  }
  auto row_scores = [&](int32_t r, int32_t h) { return scores + (size_t(r) * heads + h) * stride; };

  // Visits the blocks of K (or V) in position order from base: widen(src, t0, count) widens each block's run
  // of this head once (the next block's run prefetched meanwhile), then visit(t0, count) runs, `count` being
  // how many of its positions the last row attends to.
  auto for_each_block = [&](size_t offset, int64_t head_bytes, auto widen, auto visit) {
    // The next block's run lies elsewhere in memory (blocks hold every layer): the hardware prefetcher does
    // not follow.
    PrefetchBytes(blocks[base / bt] + offset, 0, head_bytes);
    for (int32_t t0 = base; t0 < max_len; t0 += bt) {
      if (t0 + bt < max_len) PrefetchBytes(blocks[(t0 + bt) / bt] + offset, 0, head_bytes);
      widen(blocks[t0 / bt] + offset, t0, std::min(max_len - t0, bt));
      visit(t0, std::min(max_len - t0, bt));
    }
  };
  // Scores: key blocks widened side by side into chunks of about kKeyChunk positions (ending on a 16-position
  // group boundary, so they stay in L2 however long the context), each scored by one call for every row and
  // head (each key group serves every query while in L1; a decode row's few queries take several groups at
  // once). Rows also get scores past their own position, up to max_len: they lie in the row's buffer (stride
  // >= max_len - base) and are never read.
  int32_t chunk_start = base;
  auto widen_keys = [&](const std::byte* src, int32_t t0, int32_t count) {
    const int32_t end = t0 + count;
    float* keys = buffers.keys;
    attention::WidenKeysTransposed(src, kv.dtype, bt, count, n, keys, t0 - chunk_start);
    if (end == max_len || (end - chunk_start >= kKeyChunk && end % attention::kKeyLanes == 0)) {
      k.dot_keys(queries, size_t(n), rows * heads, keys, end - chunk_start, n, scale,
                 scores + (chunk_start - base), stride);
      chunk_start = end;
    }
  };
  for_each_block(k_off, int64_t(kv.HeadBytes()), widen_keys, [](int32_t, int32_t) {});
  // Soft-capping, the window's mask, then a softmax per part of each row (parts are kAttentionPart positions
  // from 0, a multiple of 8, and a row's first one begins at start(r), a multiple of 16: only a row's last
  // part pads), and, when the rows reach over several parts, the weights that merge their parts.
  attention::SoftmaxStats* stats = buffers.stats;
  for (int32_t r = 0; r < rows; ++r) {
    const int32_t len = first_position + r + 1, row_start = start(r), row_lo = lo(r);
    for (int32_t h = 0; h < heads; ++h) {
      float* x = row_scores(r, h) - base;  // x[t]: position t
      if (rule.softcap > 0) {
        for (int32_t t = row_start; t < len; ++t) x[t] = rule.softcap * std::tanh(x[t] / rule.softcap);
      }
      if (rule.alibi_slopes != nullptr) {  // keys at or before the row's position: t - (len - 1) <= 0
        const float slope = rule.alibi_slopes[h];
        for (int32_t t = row_start; t < len; ++t) x[t] = std::fma(slope, float(t - (len - 1)), x[t]);
      }
      for (int32_t t = row_start; t < row_lo; ++t) x[t] = -std::numeric_limits<float>::infinity();
      for (int32_t p = row_start / kAttentionPart; p * kAttentionPart < len; ++p) {
        const int32_t b = std::max(p * kAttentionPart, row_start);
        stats[(size_t(r) * heads + h) * max_parts + p] =
            k.softmax(x + b, std::min((p + 1) * kAttentionPart, len) - b);
      }
      // The masked positions weigh exactly 0 (the x86 exp gives e^-87 for -inf).
      for (int32_t t = base; t < row_lo; ++t) x[t] = 0.0f;
    }
  }
  const bool several_parts = (max_len - 1) / kAttentionPart > base / kAttentionPart;
  float* weights = nullptr;
  if (several_parts) {  // for each run of rows with the same parts, all their heads at once
    weights = buffers.weights;
    for (int32_t r = 0; r < rows;) {
      const int32_t first_part = start(r) / kAttentionPart, last_part = (first_position + r) / kAttentionPart;
      int32_t end = r + 1;
      while (end < rows && start(end) / kAttentionPart == first_part &&
             (first_position + end) / kAttentionPart == last_part) {
        ++end;
      }
      const size_t at = size_t(r) * heads * max_parts + first_part;
      k.partition_weights(stats + at, last_part - first_part + 1, weights + at, (end - r) * heads,
                          size_t(max_parts));
      r = end;
    }
  }
  // Values into part sums side by side like the queries (the queries' copy is done with), so that one call
  // accumulates every row that sees a whole block; each finished part is merged into `merged`.
  const size_t outputs = size_t(rows) * heads * nv;
  float* sums = queries;
  std::memset(sums, 0, outputs * sizeof(float));
  float* merged = several_parts ? buffers.merged : sums;
  if (several_parts) std::memset(merged, 0, outputs * sizeof(float));
  int32_t part_end = (base / kAttentionPart + 1) * kAttentionPart;
  auto merge_part = [&] {  // rows whose parts include [part_end - kAttentionPart, part_end)
    const int32_t p = part_end / kAttentionPart - 1;
    for (int32_t r = std::max(0, p * kAttentionPart - first_position); r < rows && start(r) < part_end; ++r) {
      for (int32_t h = 0; h < heads; ++h) {
        const size_t at = size_t(r) * heads + h;
        MergePart(weights[at * max_parts + p], sums + at * nv, nv, merged + at * nv);
      }
    }
    std::memset(sums, 0, outputs * sizeof(float));
  };
  // Positions [t0, t0 + count) of one part, widened at `vals`: rows before r_full attend to part of them
  // (the diagonal), one call each; the rest in one call.
  auto accumulate = [&](const float* vals, int32_t t0, int32_t count) {
    const int32_t r_first = std::max(0, t0 - first_position);
    const int32_t r_full = std::max(r_first, t0 + count - 1 - first_position);
    for (int32_t r = r_first; r < r_full; ++r) {
      k.accumulate_values(row_scores(r, 0) + (t0 - base), stride, heads, vals, first_position + r + 1 - t0,
                          nv, sums + size_t(r) * heads * nv, size_t(nv));
    }
    k.accumulate_values(row_scores(r_full, 0) + (t0 - base), stride, (rows - r_full) * heads, vals, count, nv,
                        sums + size_t(r_full) * heads * nv, size_t(nv));
  };
  // Value blocks widened side by side from chunk_start until about kValueChunk positions, then accumulated.
  chunk_start = base;
  auto widen_values = [&](const std::byte* src, int32_t t0, int32_t count) {
    attention::WidenValues(src, kv.dtype, bt, count, nv, values + size_t(t0 - chunk_start) * nv);
  };
  for_each_block(v_off, int64_t(kv.ValueHeadBytes()), widen_values, [&](int32_t t0, int32_t count) {
    const int32_t end = t0 + count;
    if (end - chunk_start < kValueChunk && end < max_len) return;
    for (int32_t t = chunk_start; t < end;) {  // split where a part ends (blocks need not divide parts)
      if (t == part_end) {
        merge_part();
        part_end += kAttentionPart;
      }
      const int32_t here = std::min(end, part_end) - t;
      accumulate(values + size_t(t - chunk_start) * nv, t, here);
      t += here;
    }
    chunk_start = end;
  });
  if (several_parts) merge_part();
  if (rule.sinks != nullptr) {
    for (int32_t r = 0; r < rows; ++r) {
      const int32_t first_part = start(r) / kAttentionPart, last_part = (first_position + r) / kAttentionPart;
      ApplySinks(rule.sinks, stats + size_t(r) * heads * max_parts + first_part, size_t(max_parts),
                 last_part - first_part + 1, heads, nv, merged + size_t(r) * heads * nv);
    }
  }
  for (int32_t r = 0; r < rows; ++r) {
    std::memcpy(out + r * out_stride, merged + size_t(r) * heads * nv, size_t(heads) * nv * sizeof(float));
  }
}

}  // namespace lockstep
