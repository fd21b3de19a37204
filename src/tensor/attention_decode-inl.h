// The decode-row kernels of tensor/attention_decode.cc, written once over a 16-lane vector type V (its own
// namespace per instruction set; see there) and per stored element type (tensor/kv_storage.h: q8_0 quants
// are widened, then multiplied by their scales, exactly). No include guard: included once per instruction
// set.

// Bytes of one stored element.
template <KvDtype kType>
constexpr size_t kElementBytes = kType == KvDtype::kF32   ? 4
                                 : kType == KvDtype::kF16 ? 2
                                                          : 1;

// Keys are asked for this many positions ahead of the scores being computed (4 blocks of 16).
inline constexpr int32_t kKeyPrefetchPositions = 64;

// Scores of kQueries queries against the kGroups 16-position key groups from group `first` (positions at or
// past end not stored; position p's score at scores[p - begin]). Spread over the dims, it asks for the keys
// kKeyPrefetchPositions ahead (into L1) and for the same groups' values (towards L2, for Values after the
// Softmax): blocks lie apart in memory, and a burst of one block's lines at a time filled the miss queue
// while the values, asked for only one block ahead, arrived late (long contexts read KV at ~20 GB/s).
template <KvDtype kType, int kQueries, int kGroups>
void ScoreGroups(const StoredHead& keys, const StoredHead& values, int32_t first, int32_t begin, int32_t end,
                 const float* q, size_t q_stride, int head_dim, float scale, float* scores,
                 size_t scores_stride) {
  constexpr size_t kBytes = kElementBytes<kType>;
  constexpr bool kQ8 = kType == KvDtype::kQ8_0;
  const int32_t bt = keys.block_tokens;
  const size_t dim_bytes = size_t(bt) * kBytes;  // a block's key rows: dim d's bt positions, then d + 1's
  const std::byte* row[kGroups];
  const std::byte* scale_row[kGroups];  // q8_0: the group's positions' scales of dims [0, group)
  const std::byte* key_ahead[kGroups];  // the group's place kKeyPrefetchPositions on (or its own, past end)
  const std::byte* value_row[kGroups];  // the group's 16 value rows (quants), consecutive
  for (int g = 0; g < kGroups; ++g) {
    const int32_t p = (first + g) * kKeyLanes, ahead = p + kKeyPrefetchPositions;
    row[g] = keys.blocks[p / bt] + keys.offset + size_t(p % bt) * kBytes;
    scale_row[g] = keys.blocks[p / bt] + keys.offset + KvScaleOffset(bt, head_dim) + size_t(p % bt) * 2;
    key_ahead[g] = ahead < end ? keys.blocks[ahead / bt] + keys.offset + size_t(ahead % bt) * kBytes : row[g];
    value_row[g] = values.blocks[p / bt] + values.offset + size_t(p % bt) * size_t(values.dim) * kBytes;
    if constexpr (kQ8) {  // and the group's value scales (one line for 64 dims)
      const size_t slot_scales = size_t(values.dim / KvScaleGroup(values.dim)) * 2;
      const std::byte* scales = values.blocks[p / bt] + values.offset + KvScaleOffset(bt, values.dim) +
                                size_t(p % bt) * slot_scales;
      for (size_t o = 0; o < kKeyLanes * slot_scales; o += 64) PrefetchToL2(scales + o);
    }
  }
  // A key line holds 64 / dim_bytes dims of a group; a group's values take 16 * value dim * kBytes / 64
  // lines (asked for over the first of the head_dim steps).
  const int key_line_mask = dim_bytes >= 64 ? 0 : int(64 / dim_bytes) - 1;
  const int value_lines = int(kKeyLanes * size_t(values.dim) * kBytes / 64);
  typename V::F acc[kQueries][kGroups];
  for (int j = 0; j < kQueries; ++j) {
    for (int g = 0; g < kGroups; ++g) acc[j][g] = V::Zero();
  }
  const int scale_group = KvScaleGroup(head_dim);
  typename V::F key_scale[kGroups] = {};  // set at d = 0 (GCC 12 for NEON cannot tell)
  for (int d = 0; d < head_dim; ++d) {
    if ((d & key_line_mask) == 0) {
      for (int g = 0; g < kGroups; ++g) __builtin_prefetch(key_ahead[g] + size_t(d) * dim_bytes);
    }
    if (d < value_lines) {
      for (int g = 0; g < kGroups; ++g) PrefetchToL2(value_row[g] + 64 * size_t(d));
    }
    typename V::F k[kGroups];
    if constexpr (kQ8) {
      if (d % scale_group == 0) {
        for (int g = 0; g < kGroups; ++g) {
          key_scale[g] = V::template Load16<KvDtype::kF16>(scale_row[g] + size_t(d / scale_group) * bt * 2);
        }
      }
      for (int g = 0; g < kGroups; ++g) {
        k[g] = V::Mul(V::template Load16<kType>(row[g] + size_t(d) * dim_bytes), key_scale[g]);
      }
    } else {
      for (int g = 0; g < kGroups; ++g) k[g] = V::template Load16<kType>(row[g] + size_t(d) * dim_bytes);
    }
    for (int j = 0; j < kQueries; ++j) {
      const typename V::F qd = V::Set1(q[j * q_stride + d]);
      for (int g = 0; g < kGroups; ++g) acc[j][g] = V::Fma(qd, k[g], acc[j][g]);
    }
  }
  const typename V::F sv = V::Set1(scale);
  for (int g = 0; g < kGroups; ++g) {
    const int32_t p = (first + g) * kKeyLanes;
    const int n = std::min<int32_t>(kKeyLanes, end - p);
    for (int j = 0; j < kQueries; ++j)
      V::StoreFirst(scores + j * scores_stride + (p - begin), V::Mul(acc[j][g], sv), n);
  }
}

// Scores of positions [begin, end) (begin a multiple of 16): ceil(V::kScoreChains / kQueries) groups at a
// time, so that enough FMA chains are in flight. First asks for the keys of the blocks after the first,
// up to kKeyPrefetchPositions on (ScoreGroups asks for the rest as it goes).
template <KvDtype kType, int kQueries>
void Scores(const StoredHead& keys, const StoredHead& values, int32_t begin, int32_t end, const float* q,
            size_t q_stride, int head_dim, float scale, float* scores, size_t scores_stride) {
  constexpr int kGroups = (V::kScoreChains + kQueries - 1) / kQueries;
  const int32_t bt = keys.block_tokens;
  const int64_t region_bytes = int64_t(KvHeadBytes(kType, bt, head_dim));
  for (int32_t p = begin / bt * bt + bt; p < std::min(end, begin + kKeyPrefetchPositions); p += bt)
    PrefetchBytes(keys.blocks[p / bt] + keys.offset, 0, region_bytes);
  const int32_t groups = (end + kKeyLanes - 1) / kKeyLanes;
  int32_t g = begin / kKeyLanes;
  for (; g + kGroups <= groups; g += kGroups) {
    ScoreGroups<kType, kQueries, kGroups>(keys, values, g, begin, end, q, q_stride, head_dim, scale, scores,
                                          scores_stride);
  }
  for (; g < groups; ++g) {
    ScoreGroups<kType, kQueries, 1>(keys, values, g, begin, end, q, q_stride, head_dim, scale, scores,
                                    scores_stride);
  }
}

// out[d] = sum over positions s in [begin, end) in order of fma(w[s - begin], v_s[d], .) from 0, for dims
// [d0, d0 + 16 * kChunks) of kQueries weight vectors (w + j * w_stride) and outputs (out + j * out_stride).
template <KvDtype kType, int kQueries, int kChunks>
void AccumulateStoredValues(const StoredHead& values, int32_t begin, int32_t end, const float* w,
                            size_t w_stride, int head_dim, int d0, float* out, size_t out_stride) {
  constexpr size_t kBytes = kElementBytes<kType>;
  constexpr bool kQ8 = kType == KvDtype::kQ8_0;
  const int32_t bt = values.block_tokens;
  const size_t row_bytes = size_t(head_dim) * kBytes;  // a block's values: slot-major rows of head_dim
  const size_t chunk_offset = size_t(d0) * kBytes, chunk_bytes = size_t(kChunks) * kKeyLanes * kBytes;
  // q8_0: a slot's scales, [head_dim / scale_group] f16 after the quants; chunk c's dims share one.
  const int scale_group = KvScaleGroup(head_dim), scale_groups = head_dim / scale_group;
  const size_t scale_offset = KvScaleOffset(bt, head_dim);
  typename V::F acc[kQueries][kChunks];
  for (int j = 0; j < kQueries; ++j) {
    for (int c = 0; c < kChunks; ++c) acc[j][c] = V::Zero();
  }
  for (int32_t t = begin; t < end;) {  // the run of positions [t, t + n) within block t / bt
    const int32_t b = t / bt, first = t % bt, n = std::min(bt - first, end - t);
    const std::byte* region = values.blocks[b] + values.offset;
    const std::byte* block = region + chunk_offset;
    const uint16_t* scales = reinterpret_cast<const uint16_t*>(region + scale_offset);
    if ((b + 1) * bt < end) {
      const std::byte* next = values.blocks[b + 1] + values.offset;
      for (int32_t s = 0; s < bt; ++s) {
        PrefetchBytes(next + chunk_offset + size_t(s) * row_bytes, 0, int64_t(chunk_bytes));
      }
      if constexpr (kQ8) {
        PrefetchBytes(next + scale_offset, 0, int64_t(size_t(bt) * size_t(scale_groups) * 2));
      }
    }
    const float* wt = w + (t - begin);  // weights of positions t, t + 1, ...
    for (int32_t s = first; s < first + n; ++s) {
      typename V::F v[kChunks];
      for (int c = 0; c < kChunks; ++c) {
        v[c] = V::template Load16<kType>(block + size_t(s) * row_bytes + c * kKeyLanes * kBytes);
        if constexpr (kQ8) {
          const int group = (d0 + kKeyLanes * c) / scale_group;
          v[c] = V::Mul(v[c], V::Set1(HalfToFloat(scales[size_t(s) * scale_groups + group])));
        }
      }
      for (int j = 0; j < kQueries; ++j) {
        const typename V::F wv = V::Set1(wt[j * w_stride + (s - first)]);
        for (int c = 0; c < kChunks; ++c) acc[j][c] = V::Fma(wv, v[c], acc[j][c]);
      }
    }
    t += n;
  }
  for (int j = 0; j < kQueries; ++j) {
    for (int c = 0; c < kChunks; ++c) V::Store(out + j * out_stride + d0 + kKeyLanes * c, acc[j][c]);
  }
}

// Dims in chunks of V::kValueChunks x 16, then the remaining 16-dim chunks in one call.
template <KvDtype kType, int kQueries>
void Values(const StoredHead& values, int32_t begin, int32_t end, const float* w, size_t w_stride,
            int head_dim, float* out, size_t out_stride) {
  constexpr int kChunks = V::kValueChunks;
  int d = 0;
  for (; d + kChunks * kKeyLanes <= head_dim; d += kChunks * kKeyLanes) {
    AccumulateStoredValues<kType, kQueries, kChunks>(values, begin, end, w, w_stride, head_dim, d, out,
                                                     out_stride);
  }
  if constexpr (kChunks > 1) {
    if (d < head_dim) {
      WithCount<kChunks - 1>((head_dim - d) / kKeyLanes, [&](auto c) {
        AccumulateStoredValues<kType, kQueries, c>(values, begin, end, w, w_stride, head_dim, d, out,
                                                   out_stride);
      });
    }
  }
}

// One decode row's positions [begin, end) (attention_decode.h) on this instruction set.
void AttendStored(KvDtype dtype, const StoredHead& keys, const StoredHead& values, int32_t begin, int32_t end,
                  const float* q, size_t q_stride, int queries, int head_dim, float scale, float* scores,
                  size_t scores_stride, float* out, size_t out_stride, SoftmaxStats* stats,
                  size_t stats_stride) {
  auto run = [&](auto type_constant) {
    constexpr KvDtype kType = decltype(type_constant)::value;
    WithCount<8>(queries, [&](auto k) {
      Scores<kType, k>(keys, values, begin, end, q, q_stride, head_dim, scale, scores, scores_stride);
    });
    for (int j = 0; j < queries; ++j) {
      stats[j * stats_stride] = Softmax(V::kLevel, scores + j * scores_stride, end - begin);
    }
    for (int j = 0; j < queries; j += V::kValueQueries) {  // each value vector loaded once per query block
      WithCount<V::kValueQueries>(std::min(V::kValueQueries, queries - j), [&](auto k) {
        Values<kType, k>(values, begin, end, scores + j * scores_stride, scores_stride, values.dim,
                         out + j * out_stride, out_stride);
      });
    }
  };
  switch (dtype) {
    case KvDtype::kF16:
      return run(std::integral_constant<KvDtype, KvDtype::kF16>{});
    case KvDtype::kF32:
      return run(std::integral_constant<KvDtype, KvDtype::kF32>{});
    case KvDtype::kQ8_0:
      return run(std::integral_constant<KvDtype, KvDtype::kQ8_0>{});
  }
}
