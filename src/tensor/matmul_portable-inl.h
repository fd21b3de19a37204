// Portable MatMul kernels for Highway targets without hand-written intrinsics; included inside namespace
// lockstep::HWY_NAMESPACE by tensor/matmul_simd.cc. Packed Q8_0 / Q4_0 weights use the Highway kernel of
// tensor/matmul_portable_packed-inl.h; the rest follows the canonical order exactly by delegating to the
// scalar reference one output at a time.

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
  PortablePackedTile(a, o_begin, o_end);
}

inline void QuantizeActivations(const float* x, int64_t in, int64_t r_begin, int64_t r_end,
                                const ActivationQuants& out) {
  const int64_t blocks = in / kActBlock;
  for (int64_t r = r_begin; r < r_end; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t i = r * blocks + b;
      int32_t* s16 = out.sums16 + 2 * i;
      QuantizeActivationBlock(x + r * in + kActBlock * b, out.q + r * out.q_stride + kActBlock * b, out.d + i,
                              s16);
      out.sums[i] = s16[0] + s16[1];
      out.q8_starts[i] = -PackedValueOffset(TensorType::kQ8_0) * out.sums[i];
      out.q4_starts[i] = Q4StartOf(out.sums[i]);
      out.sum_d[i] = static_cast<float>(out.sums[i]) * out.d[i];
    }
  }
}
