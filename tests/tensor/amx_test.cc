// The AMX-INT8 packed-weight kernel (Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS,
// MXFP4; Q3_K as Q6_K)
// (tensor/matmul_amx_kernel.h). On any AVX-512 machine it runs on a software model of the tile unit
// (testing/amx_tile_model.h) that enforces the architecture's configuration and shape rules; its results must
// equal the AVX-512 packed kernel's bit for bit over odd sizes, partial row chunks and partial output groups.
// On a CPU with AMX the same cases also run on the real tiles.

// GCC 12 warns about the deliberately undefined pass-through operand inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#if defined(__x86_64__)  // the kernel and its tile model are x86 code (AVX-512 epilogue)

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tensor/cpu_features.h"
#include "tensor/dequantize.h"
#include "tensor/kernels.h"
#include "tensor/matmul.h"
#include "tensor/matmul_amx.h"
#include "tensor/matmul_amx_kernel.h"
#include "tensor/matmul_internal.h"
#include "tensor/matmul_simd.h"
#include "tensor/packed_weights.h"
#include "testing/amx_tile_model.h"
#include "testing/quantized_activations.h"
#include "testing/random_weights.h"

namespace lockstep {
namespace {

// The avx512 level's kernels (the AMX kernel's reference; its epilogue needs the same AVX-512 subsets), if
// this CPU runs them. Every x86 level's packed kernels give the same bits.
const MatMulKernels* Avx512Kernels() {
  static const Result<Kernels> k = KernelsForLevel(CpuLevel::kAvx512, ProbeCpuFeatures());
  return k.ok() ? &k->matmul : nullptr;
}
bool HasAvx512() { return Avx512Kernels() != nullptr; }
// The reference: the avx512 packed kernel for the args' type.
void RunPackedTile(const TileArgs& a, int64_t begin, int64_t end) {
  Avx512Kernels()->packed_tile[QuantWeightIndex(a.type)](a, begin, end);
}

struct AmxCase {
  TensorType type;
  int64_t in, out, rows;
};

const AmxCase kCases[] = {
    {TensorType::kQ8_0, 32, 16, 1},
    {TensorType::kQ8_0, 96, 17, 8},
    {TensorType::kQ8_0, 160, 70, 16},
    {TensorType::kQ8_0, 544, 50, 21},
    {TensorType::kQ8_0, 64, 130, 33},
    {TensorType::kQ4_0, 32, 5, 3},
    {TensorType::kQ4_0, 96, 48, 16},
    {TensorType::kQ4_0, 160, 70, 17},
    {TensorType::kQ4_0, 544, 33, 40},
    {TensorType::kQ4_K, 256, 16, 1},
    {TensorType::kQ4_K, 512, 70, 17},
    {TensorType::kQ4_K, 768, 33, 40},
    {TensorType::kQ6_K, 256, 5, 3},
    {TensorType::kQ6_K, 512, 70, 17},
    {TensorType::kQ6_K, 768, 48, 33},
    {TensorType::kQ5_K, 256, 16, 1},
    {TensorType::kQ5_K, 512, 70, 17},
    {TensorType::kQ5_K, 768, 33, 40},
    {TensorType::kQ5_0, 32, 5, 3},
    {TensorType::kQ5_0, 160, 70, 17},
    {TensorType::kQ5_0, 544, 33, 40},
    {TensorType::kQ5_1, 32, 16, 1},
    {TensorType::kQ5_1, 160, 70, 17},
    {TensorType::kQ5_1, 544, 48, 33},
    // Past one row band (64 rows) and one chunk of blocks (8).
    {TensorType::kQ8_0, 288, 40, 77},
    {TensorType::kQ4_0, 320, 33, 130},
    {TensorType::kQ4_K, 512, 17, 66},
    {TensorType::kQ6_K, 512, 20, 70},
    {TensorType::kQ5_0, 288, 16, 65},
    {TensorType::kQ5_K, 768, 18, 80},
    {TensorType::kIQ4_NL, 32, 5, 3},
    {TensorType::kIQ4_NL, 288, 70, 77},
    {TensorType::kIQ4_XS, 256, 16, 1},
    {TensorType::kIQ4_XS, 768, 33, 70},
    {TensorType::kMXFP4, 32, 5, 3},
    {TensorType::kMXFP4, 288, 70, 77},
    {TensorType::kQ3_K, 256, 5, 3},
    {TensorType::kQ3_K, 768, 33, 70},
};

// A packed weight matrix, activations quantized for it, and TileArgs over both.
class Product {
 public:
  explicit Product(const AmxCase& c, std::mt19937& rng)
      : c_(c),
        weights_(testing::RandomQuantizedWeights(c.type, c.in, c.out, rng)),
        x_(size_t(c.rows * c.in)) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const size_t row_bytes = RowBytes(c.type, c.in);
    for (size_t i = 0; i < x_.size(); ++i) x_[i] = normal(rng) * float(1 + (i / 32) % 4);
    std::fill(x_.end() - c.in, x_.end() - c.in + 32, 0.0f);  // an all-zero block (scale 0) in the last row
    WeightMatrix w{c.type, c.in, c.out, weights_.data()};
    packed_ = PackWeights(w);
    quants_ =
        std::make_unique<testing::QuantizedActivations>(x_.data(), c.rows, c.in, (c.in + 63) / 64 * 64 + 64);
    quants_->Into(&args_);
    args_.type = c.type;
    args_.in = c.in;
    args_.out = c.out;
    args_.weights = weights_.data();
    args_.row_bytes = row_bytes;
    args_.rows = c.rows;
    args_.packed = packed_.get();
  }

  // y from `run(args, begin, end)` over output ranges of `step` outputs.
  template <class Run>
  std::vector<float> Compute(int64_t step, Run run) {
    std::vector<float> y(size_t(c_.rows * c_.out), -7.0f);
    args_.y = y.data();
    for (int64_t o = 0; o < c_.out; o += step) run(args_, o, std::min(c_.out, o + step));
    return y;
  }

  // Whether the kernels may take the min terms from the activations' sum_d (as computed: true for these
  // activations; false makes every kernel take the other path).
  void SetSumDExact(bool exact) { args_.sum_d_exact = exact; }
  bool sum_d_exact() const { return args_.sum_d_exact; }

  std::string Name() const {
    return std::string(TensorTypeName(c_.type)) + " " + std::to_string(c_.in) + "x" + std::to_string(c_.out) +
           " rows " + std::to_string(c_.rows);
  }

 private:
  AmxCase c_;
  std::vector<std::byte> weights_;
  std::vector<float> x_;
  PackedWeightsPtr packed_;
  std::unique_ptr<testing::QuantizedActivations> quants_;
  TileArgs args_;
};

TEST(AmxKernel, OnTheTileModelEqualsThePackedKernelBitForBit) {
  if (!HasAvx512()) GTEST_SKIP() << "the AMX kernel's epilogue needs AVX-512";
  std::mt19937 rng(11);
  for (const AmxCase& c : kCases) {
    Product p(c, rng);
    ASSERT_TRUE(p.sum_d_exact()) << p.Name();
    for (bool sum_d_exact : {true, false}) {  // both min-term paths (Q5_1, Q4_K, Q5_K)
      p.SetSumDExact(sum_d_exact);
      const std::vector<float> expected = p.Compute(48, RunPackedTile);
      for (int64_t step : {int64_t{48}, int64_t{16}, int64_t{1024}}) {  // MatMul's tasks, single groups, all
        testing::AmxTileModel model;
        amx::AmxScratch scratch;
        const std::vector<float> y = p.Compute(step, [&](const TileArgs& a, int64_t begin, int64_t end) {
          amx::PackedTile(model, a, begin, end, scratch);
          EXPECT_FALSE(model.configured()) << "tiles not released";
        });
        ASSERT_EQ(std::memcmp(y.data(), expected.data(), y.size() * sizeof(float)), 0)
            << p.Name() << " step " << step << " sum_d_exact " << sum_d_exact;
        EXPECT_GT(model.products(), 0);
        EXPECT_EQ(model.releases(), (c.out + step - 1) / step);
      }
    }
  }
}

TEST(AmxKernel, OnTheCpuTilesEqualsThePackedKernelBitForBit) {
  if (!CpuRunsLevel(ProbeCpuFeatures(), CpuLevel::kAmx)) GTEST_SKIP() << "no AMX-INT8 on this machine";
  std::mt19937 rng(12);
  for (const AmxCase& c : kCases) {
    Product p(c, rng);
    for (bool sum_d_exact : {true, false}) {
      p.SetSumDExact(sum_d_exact);
      const std::vector<float> expected = p.Compute(48, RunPackedTile);
      const std::vector<float> y = p.Compute(48, AmxPackedTileOnStack);
      ASSERT_EQ(std::memcmp(y.data(), expected.data(), y.size() * sizeof(float)), 0)
          << p.Name() << " sum_d_exact " << sum_d_exact;
    }
  }
}

// The start-up self-check, with the tile model in place of the CPU's tiles: passes for the kernel, fails for
// a kernel one output off.
void RunOnTileModel(const TileArgs& a, int64_t begin, int64_t end) {
  testing::AmxTileModel model;
  static amx::AmxScratch scratch;
  amx::PackedTile(model, a, begin, end, scratch);
}
void RunOnTileModelOneOutputOff(const TileArgs& a, int64_t begin, int64_t end) {
  RunOnTileModel(a, begin, end);
  a.y[begin] = std::nextafter(a.y[begin], 1e30f);
}

TEST(AmxKernel, SelfCheckPassesForTheKernelAndCatchesAnError) {
  if (!HasAvx512()) GTEST_SKIP() << "the AMX kernel's epilogue needs AVX-512";
  for (TensorType type : kAmxKernelTypes) {
    EXPECT_TRUE(PackedKernelMatches(*Avx512Kernels(), type, RunOnTileModel)) << TensorTypeName(type);
    EXPECT_FALSE(PackedKernelMatches(*Avx512Kernels(), type, RunOnTileModelOneOutputOff))
        << TensorTypeName(type);
  }
}

TEST(AmxKernel, TileModelReportsBrokenRules) {
  testing::AmxTileModel model;
  EXPECT_NONFATAL_FAILURE(model.Zero<0>(), "before LDTILECFG");
  amx::AmxTileConfig config = amx::MakeTileConfig<TensorType::kQ8_0>(16);
  config.rows[amx::kTileA] = 8;  // A rows no longer match C rows
  model.Configure(config);
  model.Zero<amx::kTileC>();
  EXPECT_NONFATAL_FAILURE((model.DotSignedUnsigned<amx::kTileC, amx::kTileA, amx::kTileB>()),
                          "shapes do not match");
  EXPECT_NONFATAL_FAILURE((model.DotSignedSigned<amx::kTileC, amx::kTileA, amx::kTileB>()),
                          "shapes do not match");
  config = amx::MakeTileConfig<TensorType::kQ8_0>(16);
  config.colsb[9] = 64;
  EXPECT_NONFATAL_FAILURE(model.Configure(config), "tile 8..15");
  config = amx::MakeTileConfig<TensorType::kQ8_0>(16);
  config.palette = 0;
  EXPECT_NONFATAL_FAILURE(model.Configure(config), "palette");
}

// C = A x B on the tile model for 1 x 8 signed A bytes and 2 outputs of 8 B bytes, signed or unsigned.
void TileModelProduct(bool signed_b, const int8_t (&a)[8], const uint8_t (&b)[2][8], int32_t (&c)[2]) {
  testing::AmxTileModel model;
  amx::AmxTileConfig config;
  config.palette = 1;
  config.rows[0] = 1, config.colsb[0] = 8;  // A: 1 x 8 bytes
  config.rows[1] = 2, config.colsb[1] = 8;  // B: 2 rows (K = 8) x 2 outputs
  config.rows[2] = 1, config.colsb[2] = 8;  // C: 1 x 2 int32
  model.Configure(config);
  model.Load<0>(a, 8);
  model.Load<1>(b, 8);
  model.Zero<2>();
  if (signed_b) {
    model.DotSignedSigned<2, 0, 1>();
  } else {
    model.DotSignedUnsigned<2, 0, 1>();
  }
  model.Store<2>(c, 8);
}

TEST(AmxKernel, TileModelMultipliesSignedByUnsignedOrSignedBytes) {
  const int8_t a[8] = {-1, 2, -3, 4, 5, -6, 7, -128};
  uint8_t b[2][8];
  for (int k = 0; k < 8; ++k) {
    b[k / 4][k % 4] = uint8_t(200 + k);  // output 0
    b[k / 4][4 + k % 4] = uint8_t(k);    // output 1
  }
  for (bool signed_b : {false, true}) {
    int32_t c[2];
    TileModelProduct(signed_b, a, b, c);
    int32_t expected[2] = {0, 0};
    for (int k = 0; k < 8; ++k) {
      expected[0] += a[k] * (signed_b ? 200 + k - 256 : 200 + k);
      expected[1] += a[k] * k;
    }
    EXPECT_EQ(c[0], expected[0]) << "signed B " << signed_b;
    EXPECT_EQ(c[1], expected[1]) << "signed B " << signed_b;
  }
}

}  // namespace
}  // namespace lockstep
#endif  // __x86_64__
