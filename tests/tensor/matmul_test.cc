// MatMul against (1) the scalar reference of the canonical order, bit for bit, at every CPU level the
// machine runs; (2) a double-precision product with dequantized weights, within derived bounds; (3)
// itself with fewer rows and other thread counts (batch invariance).
#include "tensor/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tensor/dequantize.h"
#include "tensor/matmul_internal.h"
#include "tensor/quant_blocks.h"
#include "tensor/thread_pool.h"
#include "testing/levels.h"

namespace lockstep {
namespace {

struct MatMulCase {
  TensorType type;
  int64_t in, out, rows;
  bool packed = false;  // weights repacked with PackWeights
};

// Weights (quantized from normal values, with a few outliers), stored one byte past an aligned address.
class TestWeights {
 public:
  TestWeights(const MatMulCase& c, uint32_t seed) : TestWeights(c.type, c.in, c.out, seed) {
    if (c.packed) {
      packed_ = PackWeights({type_, in_, out_, data()});
      EXPECT_NE(packed_, nullptr);
    }
  }
  TestWeights(TensorType type, int64_t in, int64_t out, uint32_t seed) : type_(type), in_(in), out_(out) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    const size_t row_bytes = RowBytes(type, in);
    storage_.resize(1 + row_bytes * out);
    std::vector<float> row(in);
    for (int64_t o = 0; o < out; ++o) {
      for (float& v : row) v = normal(rng);
      if (in > 3) row[(o * 7) % in] = 4.0f;
      QuantizeRow(type, row.data(), data() + o * row_bytes, in);
    }
  }
  std::byte* data() { return storage_.data() + 1; }
  WeightMatrix matrix() { return {type_, in_, out_, data(), packed_.get()}; }
  std::vector<float> Dequantized() {
    std::vector<float> out(in_ * out_);
    for (int64_t o = 0; o < out_; ++o)
      DequantizeRow(type_, data() + o * RowBytes(type_, in_), &out[o * in_], in_);
    return out;
  }

 private:
  TensorType type_;
  int64_t in_, out_;
  std::vector<std::byte> storage_;
  PackedWeightsPtr packed_;
};

// Activations at x.data() + 1 (not 16-byte aligned), with varied magnitudes per block and some zero blocks.
std::vector<float> TestActivations(int64_t rows, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(1 + rows * in);
  for (int64_t i = 0; i < rows * in; ++i) x[1 + i] = normal(rng) * (1.0f + static_cast<float>((i / 32) % 5));
  if (rows * in > 64) std::fill(x.begin() + 33, x.begin() + 65, 0.0f);
  return x;
}

std::vector<float> RunMatMul(WeightMatrix w, const float* x, int64_t rows, int threads,
                             const MatMulKernels& kernels = testing::BestKernels().matmul) {
  ThreadPool pool(threads);
  std::vector<float> y(1 + rows * w.out, -1.0f);
  MatMul(kernels, w, x, rows, y.data() + 1, pool);
  return std::vector<float>(y.begin() + 1, y.end());
}

void ExpectBitEqual(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(float)), 0)
        << what << " element " << i << ": " << a[i] << " vs " << b[i];
  }
}

// Every distinct matmul level's result for `m` (packed or not, as it is) against MatMulReference, bit for
// bit, with 2 threads; `what` names the case in failures.
void ExpectEveryLevelMatchesReference(const WeightMatrix& m, const float* x, int64_t rows,
                                      const std::string& what) {
  std::vector<float> expected(rows * m.out);
  MatMulReference(m, x, rows, expected.data());
  for (const Kernels& k : testing::DistinctMatMulKernels()) {
    ExpectBitEqual(RunMatMul(m, x, rows, 2, k.matmul), expected, "level=" + testing::LevelName(k) + what);
  }
}

std::vector<MatMulCase> Cases() {
  std::vector<MatMulCase> cases;
  const int64_t outs[] = {1, 3, 17, 33};
  const int64_t rows[] = {1, 2, 5, 40};
  for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kBF16}) {
    for (int64_t in : {1, 7, 17, 200}) cases.push_back({t, in, outs[in % 4], rows[in % 4]});
    cases.push_back(
        {t, 203, 6, 19});  // 8-row tiles (AVX-512 pairs rows), then the rest; a partial last group
  }
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ5_0, TensorType::kQ5_1,
                       TensorType::kIQ4_NL, TensorType::kMXFP4}) {
    for (int64_t in : {32, 96, 544}) cases.push_back({t, in, outs[(in / 32) % 4], rows[(in / 32) % 4]});
  }
  for (TensorType t : {TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ4_K, TensorType::kQ5_K,
                       TensorType::kQ6_K, TensorType::kIQ4_XS}) {
    for (int64_t in : {256, 768}) cases.push_back({t, in, outs[(in / 256) % 4], rows[(in / 256) % 4]});
  }
  cases.push_back({TensorType::kQ8_0, 96, 33, 40});
  cases.push_back({TensorType::kQ6_K, 256, 33, 40});
  cases.push_back({TensorType::kQ5_K, 512, 33, 9});
  cases.push_back({TensorType::kQ2_K, 512, 33, 9});  // Q2_K is not packed: its unpacked tiles only
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ5_0, TensorType::kQ5_1,
                       TensorType::kIQ4_NL, TensorType::kMXFP4}) {
    for (int64_t in : {32, 96, 544}) {
      for (int64_t out : {1, 8, 17, 33}) cases.push_back({t, in, out, 1 + (in / 32 + out) % 40, true});
    }
    cases.push_back({t, 64, 40, 40, true});
    cases.push_back({t, 160, 70, 9, true});  // several 32-output tasks, a partial 16-output group
    cases.push_back({t, 96, 40, 3, true});   // AVX2: 3 rows alone (both halves), then 4 + 3
    cases.push_back({t, 96, 24, 7, true});
  }
  for (TensorType t :
       {TensorType::kQ3_K, TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kIQ4_XS}) {
    cases.push_back({t, 256, 1, 1, true});
    cases.push_back({t, 256, 21, 6, true});
    cases.push_back({t, 768, 40, 13, true});
    cases.push_back({t, 256, 24, 3, true});
  }
  return cases;
}

std::string Name(const MatMulCase& c) {
  return std::string(TensorTypeName(c.type)) + " in=" + std::to_string(c.in) +
         " out=" + std::to_string(c.out) + " rows=" + std::to_string(c.rows) + (c.packed ? " packed" : "");
}

TEST(MatMul, EveryLevelMatchesScalarReferenceBitForBit) {
  const std::vector<Kernels> levels = testing::DistinctMatMulKernels();
  for (const MatMulCase& c : Cases()) {
    TestWeights weights(c, 11);
    const std::vector<float> x = TestActivations(c.rows, c.in, 12);
    std::vector<float> expected(c.rows * c.out);
    MatMulReference(weights.matrix(), x.data() + 1, c.rows, expected.data());
    for (const Kernels& k : levels) {
      // Every thread count at the best level; the others (slow under qemu) at 2 threads.
      const std::vector<int> thread_counts =
          k.level == testing::BestKernels().level ? std::vector<int>{1, 2, 3} : std::vector<int>{2};
      for (int threads : thread_counts) {
        ExpectBitEqual(RunMatMul(weights.matrix(), x.data() + 1, c.rows, threads, k.matmul), expected,
                       Name(c) + " level=" + testing::LevelName(k) + " threads=" + std::to_string(threads));
      }
    }
  }
}

TEST(MatMul, RowResultsDoNotDependOnTheOtherRows) {
  for (const MatMulCase& c : Cases()) {
    TestWeights weights(c, 21);
    const std::vector<float> x = TestActivations(c.rows, c.in, 22);
    const std::vector<float> all = RunMatMul(weights.matrix(), x.data() + 1, c.rows, 2);
    for (int64_t r = 0; r < c.rows; ++r) {
      const std::vector<float> one = RunMatMul(weights.matrix(), x.data() + 1 + r * c.in, 1, 1 + r % 3);
      ExpectBitEqual(one, std::vector<float>(all.begin() + r * c.out, all.begin() + (r + 1) * c.out),
                     Name(c) + " row " + std::to_string(r));
    }
  }
}

// |computed - exact product of dequantized weights and the original activations| is bounded by the
// activation quantization (half a step per element: sum |w| * d_block / 2, d_block the block's power-of-two
// scale) plus f32 rounding of the accumulation (a generous n * 2^-23 relative to sum |w x|).
TEST(MatMul, CloseToDoublePrecisionProduct) {
  for (const MatMulCase& c : Cases()) {
    TestWeights weights(c, 31);
    const std::vector<float> w = weights.Dequantized();
    const std::vector<float> x = TestActivations(c.rows, c.in, 32);
    const std::vector<float> y = RunMatMul(weights.matrix(), x.data() + 1, c.rows, 2);
    const bool quantized = IsQuantizedMatMulType(c.type);
    for (int64_t r = 0; r < c.rows; ++r) {
      const float* xr = x.data() + 1 + r * c.in;
      for (int64_t o = 0; o < c.out; ++o) {
        double exact = 0, magnitude = 0, quant_bound = 0;
        for (int64_t i = 0; i < c.in; ++i) {
          exact += static_cast<double>(w[o * c.in + i]) * xr[i];
          magnitude += std::fabs(static_cast<double>(w[o * c.in + i]) * xr[i]);
        }
        if (quantized) {
          for (int64_t b = 0; b < c.in / 32; ++b) {
            double amax = 0, wsum = 0;
            for (int i = 0; i < 32; ++i) {
              amax = std::max(amax, static_cast<double>(std::fabs(xr[32 * b + i])));
              wsum += std::fabs(w[o * c.in + 32 * b + i]);
            }
            float inverse;
            const double step = ActivationScale(static_cast<float>(amax), &inverse);
            quant_bound += wsum * step / 2 * 1.0001;
            magnitude += wsum * amax;
          }
        }
        const double bound = quant_bound + magnitude * static_cast<double>(c.in + 16) * std::ldexp(1.0, -23);
        ASSERT_LE(std::fabs(y[r * c.out + o] - exact), bound) << Name(c) << " r=" << r << " o=" << o;
      }
    }
  }
}

// Q8_0 quants of -128 never come out of ggml's quantizer but are valid in a file; every path must handle them
// (the sign trick of the AVX2 kernels is only exact because activations stay within +-127).
TEST(MatMul, Q8_0MinusOneTwentyEightIsExactEverywhere) {
  for (bool pack : {false, true}) {
    TestWeights weights(MatMulCase{TensorType::kQ8_0, 64, 9, 5, pack}, 41);
    WeightMatrix m = weights.matrix();
    std::vector<std::byte> bytes(weights.data(), weights.data() + RowBytes(TensorType::kQ8_0, 64) * 9);
    for (size_t i = 2; i < bytes.size(); i += 5) {
      if (i % 34 >= 2) bytes[i] = std::byte{0x80};
    }
    m.data = bytes.data();
    PackedWeightsPtr packed = pack ? PackWeights(m) : nullptr;
    m.packed = packed.get();
    const std::vector<float> x = TestActivations(5, 64, 42);
    ExpectEveryLevelMatchesReference(m, x.data() + 1, 5, "");
  }
}

// The AVX2 Q4_0 kernel adds a block's 8 VPMADDUBSW results in 16 bits and cancels the nibbles' offset of 8
// inside those sums (their start is -8 * sum(x) in the high half of each 32-bit lane): exact only while
// both 16-bit sums stay within +-32767. Nibbles 15 on the low pair of every 4 elements and 0 on the high
// pair with all activation quants at -127 (or +127) reach the bounds, 30480 and 32512, in the same lane.
TEST(MatMul, Q4_0ExtremeNibbleSumsAreExactEverywhere) {
  constexpr int64_t kIn = 96, kOut = 40, kBlockBytes = 18;
  std::vector<std::byte> bytes(kOut * (kIn / 32) * kBlockBytes);
  for (int64_t o = 0; o < kOut; ++o) {
    for (int64_t b = 0; b < kIn / 32; ++b) {
      std::byte* block = bytes.data() + (o * (kIn / 32) + b) * kBlockBytes;
      block[0] = std::byte{0x00};  // d = 1.0 (f16 0x3c00)
      block[1] = std::byte{0x3c};
      for (int j = 0; j < 16; ++j) {  // byte j: element j (low nibble) and element j + 16 (high nibble)
        const bool low_pair = j % 4 < 2;
        block[2 + j] = (o + b) % 3 == 2 ? std::byte(0x5a + j) : std::byte(low_pair ? 0xff : 0x00);
      }
    }
  }
  for (int64_t rows : {1, 2, 3, 4, 5, 8}) {
    std::vector<float> x(rows * kIn);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < kIn; ++i) {  // +-127 / 64: quants of exactly +-127
        const float sign = r % 3 == 0 ? -1.0f : r % 3 == 1 ? 1.0f : (i % 4 < 2 ? 1.0f : -1.0f);
        x[r * kIn + i] = sign * 127.0f / 64.0f;
      }
    }
    for (bool pack : {false, true}) {
      WeightMatrix m{TensorType::kQ4_0, kIn, kOut, bytes.data()};
      PackedWeightsPtr packed = pack ? PackWeights(m) : nullptr;
      m.packed = packed.get();
      ExpectEveryLevelMatchesReference(m, x.data(), rows, " rows=" + std::to_string(rows));
    }
  }
}

// K-quant weights `blocks` ([out][in]) against activations of exactly +-127 / 64 (quants of +-127): every
// element negative (rows r % 3 == 0), positive (1) or alternating every 16 elements (2), for 1-8 rows, at
// every level, unpacked and packed.
void ExpectExtremeActivationsMatch(TensorType type, const std::byte* blocks, int64_t in, int64_t out) {
  for (int64_t rows : {1, 2, 3, 4, 5, 8}) {
    std::vector<float> x(rows * in);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < in; ++i) {
        const float sign = r % 3 == 0 ? -1.0f : r % 3 == 1 ? 1.0f : (i / 16 % 2 == 0 ? 1.0f : -1.0f);
        x[r * in + i] = sign * 127.0f / 64.0f;
      }
    }
    for (bool pack : {false, true}) {
      WeightMatrix m{type, in, out, blocks};
      PackedWeightsPtr packed = pack ? PackWeights(m) : nullptr;
      m.packed = packed.get();
      ExpectEveryLevelMatchesReference(m, x.data(), rows, " rows=" + std::to_string(rows));
    }
  }
}

// Q6_K at the bounds of the avx2 tile's 16-bit arithmetic: quants of 63 against activation quants of +-127
// make two pair sums of +-32004, the half sums reach +-2032 and the scales -128 and 127 (the offset term's
// 16-bit factors 32 * scale reach -4096); quants of 0 give the other end of the offset.
TEST(MatMul, Q6_KExtremeSumsAreExactEverywhere) {
  constexpr int64_t kIn = 512, kOut = 40;
  std::vector<BlockQ6_K> blocks(kOut * (kIn / 256));
  for (int64_t i = 0; i < static_cast<int64_t>(blocks.size()); ++i) {
    BlockQ6_K& b = blocks[i];
    const uint8_t fill = i % 3 == 2 ? 0x00 : 0xff;
    std::memset(b.ql, fill, sizeof(b.ql));
    std::memset(b.qh, fill, sizeof(b.qh));
    for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>((s + i) % 2 == 0 ? -128 : 127);
    b.d = 0x3c00;  // 1.0
  }
  ExpectExtremeActivationsMatch(TensorType::kQ6_K, reinterpret_cast<const std::byte*>(blocks.data()), kIn,
                                kOut);
}

// Q3_K (run by Q6_K's packed tiles as quants + 32, scales - 32) at its ends: every quant -4 (hmask and qs 0)
// or 3 (all ones) with scales -32 (0) and 31 (63), against activation quants of +-127.
TEST(MatMul, Q3_KExtremeSumsAreExactEverywhere) {
  constexpr int64_t kIn = 512, kOut = 40;
  std::vector<BlockQ3_K> blocks(kOut * (kIn / 256));
  for (size_t i = 0; i < blocks.size(); ++i) {
    BlockQ3_K& b = blocks[i];
    const uint8_t fill = i % 3 == 2 ? 0x00 : 0xff;
    std::memset(b.hmask, fill, sizeof(b.hmask));
    std::memset(b.qs, fill, sizeof(b.qs));
    std::memset(b.scales, i % 2 == 0 ? 0x00 : 0xff, sizeof(b.scales));
    b.d = 0x3c00;  // 1.0
  }
  ExpectExtremeActivationsMatch(TensorType::kQ3_K, reinterpret_cast<const std::byte*>(blocks.data()), kIn,
                                kOut);
}

// Q2_K (unpacked only) at its ends: quants 0 or 3, scales and mins 0 or 15, dmin up to 65504.
TEST(MatMul, Q2_KExtremeSumsAreExactEverywhere) {
  constexpr int64_t kIn = 512, kOut = 40;
  std::vector<BlockQ2_K> blocks(kOut * (kIn / 256));
  for (size_t i = 0; i < blocks.size(); ++i) {
    BlockQ2_K& b = blocks[i];
    std::memset(b.qs, i % 3 == 2 ? 0x00 : 0xff, sizeof(b.qs));
    for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<uint8_t>((j + i) % 2 == 0 ? 0xff : 0x0f);
    b.d = 0x3c00;                                                  // 1.0
    b.dmin = static_cast<uint16_t>(i % 4 == 0 ? 0x7bff : 0x3c00);  // 65504 or 1
  }
  ExpectExtremeActivationsMatch(TensorType::kQ2_K, reinterpret_cast<const std::byte*>(blocks.data()), kIn,
                                kOut);
}

// Q5_K at the bounds of the avx2 tile's 16-bit sums: quants of 31 against activation quants of +-127 make
// pair sums of +-7874, four of which (+-31496) are summed before each widening (eight would overflow); quants
// of 0 and mixed fifth bits in the other blocks.
TEST(MatMul, Q5_KExtremeSumsAreExactEverywhere) {
  constexpr int64_t kIn = 512, kOut = 40;
  std::vector<BlockQ5_K> blocks(kOut * (kIn / 256));
  for (int64_t i = 0; i < static_cast<int64_t>(blocks.size()); ++i) {
    BlockQ5_K& b = blocks[i];
    b.d = 0x3c00;     // 1.0
    b.dmin = 0x3800;  // 0.5
    std::memset(b.scales, i % 3 == 1 ? 0x55 : 0xff, sizeof(b.scales));
    const uint8_t fill = i % 3 == 2 ? 0x00 : 0xff;
    std::memset(b.qs, fill, sizeof(b.qs));
    for (int l = 0; l < 32; ++l) b.qh[l] = i % 3 == 1 ? static_cast<uint8_t>(0x5a ^ (l * 29)) : fill;
  }
  ExpectExtremeActivationsMatch(TensorType::kQ5_K, reinterpret_cast<const std::byte*>(blocks.data()), kIn,
                                kOut);
}

// Q5_0 / Q5_1 at the bounds of the avx2 tile's 16-bit sums (as Q5_K's): quants of 31 (all bits set) against
// activation quants of +-127, quants of 0, and mixed fifth bits; Q5_1 with mins of 0.5 and -65504.
TEST(MatMul, Q5_0AndQ5_1ExtremeSumsAreExactEverywhere) {
  constexpr int64_t kIn = 96, kOut = 40;
  for (TensorType type : {TensorType::kQ5_0, TensorType::kQ5_1}) {
    const bool q5_1 = type == TensorType::kQ5_1;
    const size_t block_bytes = q5_1 ? sizeof(BlockQ5_1) : sizeof(BlockQ5_0);
    std::vector<std::byte> bytes(kOut * (kIn / 32) * block_bytes);
    for (size_t i = 0; i < bytes.size() / block_bytes; ++i) {
      const uint16_t d = 0x3c00, m = i % 2 == 0 ? 0x3800 : 0xfbff;  // 1.0; 0.5 or -65504
      uint8_t qh[4], qs[16];
      const uint8_t fill = i % 3 == 2 ? 0x00 : 0xff;
      for (int j = 0; j < 4; ++j) qh[j] = i % 3 == 1 ? static_cast<uint8_t>(0x5a ^ (j * 29)) : fill;
      std::memset(qs, fill, sizeof(qs));
      std::byte* block = bytes.data() + i * block_bytes;
      std::memcpy(block, &d, 2);
      if (q5_1) std::memcpy(block + 2, &m, 2);
      std::memcpy(block + (q5_1 ? 4 : 2), qh, 4);
      std::memcpy(block + (q5_1 ? 8 : 6), qs, 16);
    }
    ExpectExtremeActivationsMatch(type, bytes.data(), kIn, kOut);
  }
}

// IQ4_NL / IQ4_XS at the bounds of the signed (non-VNNI) tiles' 16-bit pair sums and the VNNI tiles' offset:
// every index 0 (-127) or 15 (113) against activation quants of +-127 (pair sums of +-32258), and mixed
// indices; IQ4_XS scales from -32 to 31 (0 included).
TEST(MatMul, IQ4ExtremeSumsAreExactEverywhere) {
  constexpr int64_t kIn = 512, kOut = 40;
  std::vector<BlockIQ4_NL> nl(kOut * (kIn / 32));
  for (size_t i = 0; i < nl.size(); ++i) {
    nl[i].d = 0x3c00;  // 1.0
    std::memset(nl[i].qs, i % 3 == 0 ? 0x00 : i % 3 == 1 ? 0xff : static_cast<int>(0x0f + 16 * (i % 16)), 16);
  }
  ExpectExtremeActivationsMatch(TensorType::kIQ4_NL, reinterpret_cast<const std::byte*>(nl.data()), kIn,
                                kOut);
  std::vector<BlockIQ4_XS> xs(kOut * (kIn / 256));
  for (size_t i = 0; i < xs.size(); ++i) {
    xs[i].d = 0x3c00;
    xs[i].scales_h = static_cast<uint16_t>(i % 2 == 0 ? 0x0000 : 0xffff);  // with scales_l: 0 / 15, 48 / 63
    for (int j = 0; j < 4; ++j) xs[i].scales_l[j] = static_cast<uint8_t>(i % 3 == 0 ? 0x00 : 0xf0 | j);
    for (int j = 0; j < 128; ++j) xs[i].qs[j] = static_cast<uint8_t>((j / 16 + i) % 2 == 0 ? 0x00 : 0xff);
  }
  ExpectExtremeActivationsMatch(TensorType::kIQ4_XS, reinterpret_cast<const std::byte*>(xs.data()), kIn,
                                kOut);
}

// MXFP4 at the ends of its E8M0 scale (2^-128 and 2^-127, subnormal floats; 2^-126; 1; 2^126; 2^127) and of
// its table (every index 7 (12) or 15 (-12), and mixed) against activation quants of +-127 at scales from
// 2^-6 to 2^121: weight scale * activation scale is then exact, subnormal, underflows to 0 or overflows to
// inf, the same in every level's order as in the reference.
TEST(MatMul, MXFP4ExtremeScalesMatchEverywhere) {
  constexpr int64_t kIn = 512, kOut = 40;
  const uint8_t exponents[] = {0, 1, 2, 128, 254, 255};
  std::vector<BlockMXFP4> blocks(kOut * (kIn / 32));
  for (size_t i = 0; i < blocks.size(); ++i) {
    blocks[i].e = exponents[(i + i / 16) % 6];
    std::memset(blocks[i].qs,
                i % 3 == 0   ? 0x77
                : i % 3 == 1 ? 0xff
                             : static_cast<int>(0x07 + 16 * (i % 16)),
                16);
  }
  const auto* bytes = reinterpret_cast<const std::byte*>(blocks.data());
  ExpectExtremeActivationsMatch(TensorType::kMXFP4, bytes, kIn, kOut);
  for (int64_t rows : {1, 3, 5}) {
    std::vector<float> x(rows * kIn);
    for (int64_t i = 0; i < rows * kIn; ++i) {  // blocks of max |x| 2^-100 ... 2^127
      const float scale = (i / 32) % 3 == 0 ? 0x1p-100f : (i / 32) % 3 == 1 ? 0x1p127f : 0x1p60f;
      x[i] = (i % 2 == 0 ? 1.0f : -0.75f) * scale;
    }
    for (bool pack : {false, true}) {
      WeightMatrix m{TensorType::kMXFP4, kIn, kOut, bytes};
      PackedWeightsPtr packed = pack ? PackWeights(m) : nullptr;
      m.packed = packed.get();
      ExpectEveryLevelMatchesReference(m, x.data(), rows, " huge/tiny rows=" + std::to_string(rows));
    }
  }
}

// Q4_K against activations so large that (min scale) * (activation scale) or float(sum) * (activation scale)
// overflows (blocks of +-2^118 and 2^126, d = 2^112 and 2^120), with mins of up to 65504 * 63 and of 0, and
// block sums of 0: the products are inf and NaN where the canonical order makes them so. The x86 tiles take
// their min term as float(sum) * d times the min scale only where no such overflow can happen (SumDIsExact,
// checked by every quantization task: with 35 rows only the last row, in the third task, has huge blocks).
// Q5_K and Q5_1 (mins of +-65504 and 0) share the Q4_K tiles' min term: the same check.
template <class Block>
void ExpectHugeActivationsMatch(TensorType type) {
  constexpr int64_t kIn = 512, kOut = 40;
  constexpr bool kQ5_1 = std::is_same_v<Block, BlockQ5_1>;
  std::vector<Block> blocks(kOut * (kIn / (kQ5_1 ? 32 : 256)));
  for (int64_t i = 0; i < static_cast<int64_t>(blocks.size()); ++i) {
    Block& b = blocks[i];
    b.d = 0x3c00;  // 1.0
    for (size_t j = 0; j < sizeof(b.qs); ++j) b.qs[j] = static_cast<uint8_t>(37 * (i + j) + 11);
    if constexpr (kQ5_1) {
      b.m = i % 3 == 0 ? 0x7bff : i % 3 == 1 ? 0xfbff : 0x0000;  // 65504, -65504 or 0
      for (int j = 0; j < 4; ++j) b.qh[j] = static_cast<uint8_t>(53 * (i + j) + 7);
    } else {
      b.dmin = i % 2 == 0 ? 0x7bff : 0x3c00;  // 65504 or 1.0
      for (int j = 0; j < 12; ++j) b.scales[j] = static_cast<uint8_t>((i + j) % 3 == 0 ? 0x00 : 0xff);
    }
    if constexpr (std::is_same_v<Block, BlockQ5_K>) {
      for (int j = 0; j < 32; ++j) b.qh[j] = static_cast<uint8_t>(53 * (i + j) + 7);
    }
  }
  for (int64_t rows : {1, 2, 3, 4, 5, 8, 35}) {
    std::vector<float> x(rows * kIn);
    for (int64_t r = 0; r < rows; ++r) {
      const bool huge = rows < 16 || r == rows - 1;
      for (int64_t i = 0; i < kIn; ++i) {
        const int64_t kind = huge ? (i / 32 + r) % 4 : 3;
        const float sign = i % 2 == 0 ? 1.0f : -1.0f;
        x[r * kIn + i] = kind == 0   ? sign * 0x1p118f  // block sum 0
                         : kind == 1 ? 0x1p118f
                         : kind == 2 ? 0x1p126f
                                     : sign * static_cast<float>(1 + i % 7);
      }
    }
    WeightMatrix m{type, kIn, kOut, reinterpret_cast<const std::byte*>(blocks.data())};
    PackedWeightsPtr packed = PackWeights(m);
    m.packed = packed.get();
    ExpectEveryLevelMatchesReference(m, x.data(), rows, " rows=" + std::to_string(rows));
  }
}

TEST(MatMul, Q4_KHugeActivationsMatchEverywhere) { ExpectHugeActivationsMatch<BlockQ4_K>(TensorType::kQ4_K); }
TEST(MatMul, Q5_KHugeActivationsMatchEverywhere) { ExpectHugeActivationsMatch<BlockQ5_K>(TensorType::kQ5_K); }
TEST(MatMul, Q5_1HugeActivationsMatchEverywhere) { ExpectHugeActivationsMatch<BlockQ5_1>(TensorType::kQ5_1); }

TEST(MatMul, SharedInputMatchesSeparateCalls) {
  const int64_t in = 96, rows = 7;
  TestWeights a(MatMulCase{TensorType::kQ8_0, in, 17, rows, true}, 51);
  TestWeights b(MatMulCase{TensorType::kQ4_0, in, 5, rows, false}, 52);
  TestWeights c(MatMulCase{TensorType::kF16, in, 40, rows, false}, 53);
  const std::vector<float> x = TestActivations(rows, in, 54);
  ThreadPool pool(2);
  const std::vector<WeightMatrix> ws = {a.matrix(), b.matrix(), c.matrix()};
  std::vector<std::vector<float>> ys(3);
  std::vector<float*> y_ptrs;
  for (size_t i = 0; i < ws.size(); ++i) {
    ys[i].assign(rows * ws[i].out, 0.0f);
    y_ptrs.push_back(ys[i].data());
  }
  MatMulShared(testing::BestKernels().matmul, ws, x.data() + 1, rows, y_ptrs, pool);
  for (size_t i = 0; i < ws.size(); ++i) {
    ExpectBitEqual(ys[i], RunMatMul(ws[i], x.data() + 1, rows, 3), "matrix " + std::to_string(i));
  }
}

// Matrices packed side by side into one buffer give the same products as each packed alone; a type with no
// packed form gets null and takes no room.
TEST(MatMul, PackedTogetherMatchesPackedAlone) {
  const int64_t rows = 5;
  TestWeights a(TensorType::kQ8_0, 64, 17, 61), b(TensorType::kF16, 64, 9, 62),
      c(TensorType::kQ4_0, 96, 33, 63), d(TensorType::kQ4_K, 256, 20, 64), f(TensorType::kQ5_K, 512, 7, 66),
      e(TensorType::kQ6_K, 256, 3, 65);
  std::vector<WeightMatrix> ws = {a.matrix(), b.matrix(), c.matrix(), d.matrix(), f.matrix(), e.matrix()};
  const std::vector<const WeightMatrix*> list = {&ws[0], &ws[1], &ws[2], &ws[3], &ws[4], &ws[5]};
  for (int threads : {1, 3}) {
    std::vector<PackedWeightsPtr> together = PackWeightsTogether(list, threads);
    ASSERT_EQ(together.size(), ws.size());
    EXPECT_EQ(together[1], nullptr);
    for (size_t i = 0; i < ws.size(); ++i) {
      if (i == 1) continue;
      ASSERT_NE(together[i], nullptr);
      WeightMatrix alone = ws[i], shared = ws[i];
      const PackedWeightsPtr own = PackWeights(ws[i]);
      alone.packed = own.get();
      shared.packed = together[i].get();
      const std::vector<float> x = TestActivations(rows, ws[i].in, 70 + uint32_t(i));
      ExpectBitEqual(RunMatMul(shared, x.data() + 1, rows, 2), RunMatMul(alone, x.data() + 1, rows, 2),
                     "matrix " + std::to_string(i) + ", " + std::to_string(threads) + " threads");
    }
    together.erase(together.begin());  // the rest keep the shared buffer alive
    WeightMatrix last = ws[5];
    last.packed = together.back().get();
    const std::vector<float> x = TestActivations(rows, 256, 80);
    const PackedWeightsPtr own = PackWeights(ws[5]);
    WeightMatrix alone = ws[5];
    alone.packed = own.get();
    ExpectBitEqual(RunMatMul(last, x.data() + 1, rows, 2), RunMatMul(alone, x.data() + 1, rows, 2),
                   "after erase");
  }
}

TEST(MatMul, ZeroRowsIsANoOp) {
  TestWeights weights(TensorType::kQ8_0, 64, 3, 1);
  ThreadPool pool(2);
  float y = 7.0f;
  MatMul(testing::BestKernels().matmul, weights.matrix(), nullptr, 0, &y, pool);
  EXPECT_EQ(y, 7.0f);
}

}  // namespace
}  // namespace lockstep
