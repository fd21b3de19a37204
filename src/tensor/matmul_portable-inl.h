// Portable (scalar) MatMul kernels for Highway targets without hand-written intrinsics; included inside
// namespace lockstep::HWY_NAMESPACE by tensor/matmul_simd.cc. Follows the canonical order exactly by
// delegating to the scalar reference one output at a time.

inline void QuantTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  for (int64_t o = o_begin; o < o_end; ++o) {
    for (int64_t r = 0; r < a.rows; ++r) {
      a.y[r * a.out + o] = QuantDotReference(a.type, a.weights + o * a.row_bytes, a.q + r * a.q_stride,
                                             a.d + r * (a.in / kActBlock), a.in / kActBlock);
    }
  }
}

inline void FloatTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  for (int64_t o = o_begin; o < o_end; ++o) {
    for (int64_t r = 0; r < a.rows; ++r) {
      a.y[r * a.out + o] = FloatDotReference(a.type, a.weights + o * a.row_bytes, a.x + r * a.in, a.in);
    }
  }
}

inline void PackedTile(const TileArgs& a, int64_t o_begin, int64_t o_end) {
  for (int64_t o = o_begin; o < o_end; ++o) {
    for (int64_t r = 0; r < a.rows; ++r) {
      a.y[r * a.out + o] = PackedDotReference(a.type, a.weights + o * a.row_bytes, a.q + r * a.q_stride,
                                              a.d + r * (a.in / kActBlock), a.in / kActBlock);
    }
  }
}

inline void QuantizeActivations(const float* x, int64_t in, int64_t r_begin, int64_t r_end, int8_t* q,
                                int64_t q_stride, float* d, int32_t* sums, int32_t* sums16) {
  const int64_t blocks = in / kActBlock;
  for (int64_t r = r_begin; r < r_end; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      int32_t* s16 = sums16 + (r * blocks + b) * 2;
      QuantizeActivationBlock(x + r * in + kActBlock * b, q + r * q_stride + kActBlock * b,
                              d + r * blocks + b, s16);
      sums[r * blocks + b] = s16[0] + s16[1];
    }
  }
}
