// The portable packed-weight kernel (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K: what NEON and other non-x86 CPUs run) on
// every Highway target this machine has, against the scalar reference of the packed order, bit for bit: odd
// input and output sizes (partial 16-output groups and 4-output slices), 1..N rows, quants of -128 and every
// nibble value.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "tensor/dequantize.h"
#include "tensor/matmul.h"
#include "tensor/matmul_internal.h"
#include "tensor/matmul_simd.h"
#include "tensor/packed_weights.h"
#include "testing/quantized_activations.h"
#include "testing/random_weights.h"

namespace lockstep {
namespace {

struct PortableCase {
  TensorType type;
  int64_t in, out, rows;
};

std::vector<float> Portable(const WeightMatrix& w, const std::vector<float>& x, int64_t rows) {
  const testing::QuantizedActivations quants(x.data(), rows, w.in, (w.in + 63) / 64 * 64);
  TileArgs a;
  quants.Into(&a);
  a.type = w.type;
  a.in = w.in;
  a.out = w.out;
  a.weights = w.data;
  a.row_bytes = RowBytes(w.type, w.in);
  a.rows = rows;
  a.packed = w.packed;
  std::vector<float> y(size_t(rows * w.out), -1.0f);
  a.y = y.data();
  for (int64_t o = 0; o < w.out; o += 48) RunPortablePackedTile(a, o, std::min(w.out, o + 48));
  return y;
}

TEST(PortablePackedKernel, EveryTargetMatchesTheScalarReferenceBitForBit) {
  const PortableCase cases[] = {
      {TensorType::kQ8_0, 32, 1, 1},     {TensorType::kQ8_0, 96, 17, 3},    {TensorType::kQ8_0, 160, 70, 9},
      {TensorType::kQ8_0, 544, 33, 2},   {TensorType::kQ4_0, 32, 5, 4},     {TensorType::kQ4_0, 96, 17, 1},
      {TensorType::kQ4_0, 160, 70, 9},   {TensorType::kQ4_0, 544, 50, 3},   {TensorType::kQ4_K, 256, 5, 4},
      {TensorType::kQ4_K, 512, 33, 5},   {TensorType::kQ6_K, 256, 17, 1},   {TensorType::kQ6_K, 512, 20, 6},
      {TensorType::kQ5_K, 256, 5, 4},    {TensorType::kQ5_K, 512, 33, 5},   {TensorType::kQ5_0, 32, 5, 4},
      {TensorType::kQ5_0, 160, 70, 9},   {TensorType::kQ5_1, 96, 17, 1},    {TensorType::kQ5_1, 544, 50, 6},
      {TensorType::kIQ4_NL, 32, 5, 4},   {TensorType::kIQ4_NL, 160, 70, 9}, {TensorType::kIQ4_XS, 256, 5, 4},
      {TensorType::kIQ4_XS, 512, 33, 5}, {TensorType::kQ3_K, 256, 17, 1},   {TensorType::kQ3_K, 512, 20, 6},
      {TensorType::kMXFP4, 32, 5, 4},    {TensorType::kMXFP4, 160, 70, 9}};
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const PortableCase& c : cases) {
    std::vector<std::byte> weights = testing::RandomQuantizedWeights(c.type, c.in, c.out, rng);
    WeightMatrix w{c.type, c.in, c.out, weights.data()};
    PackedWeightsPtr packed = PackWeights(w);
    ASSERT_NE(packed, nullptr);
    w.packed = packed.get();
    std::vector<float> x(size_t(c.rows * c.in));
    for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * float(1 + (i / 32) % 4);
    std::vector<float> expected(size_t(c.rows * c.out));
    MatMulReference(w, x.data(), c.rows, expected.data());
    const std::string name = std::string(TensorTypeName(c.type)) + " " + std::to_string(c.in) + "x" +
                             std::to_string(c.out) + " rows " + std::to_string(c.rows);
    for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
      hwy::SetSupportedTargetsForTest(target);
      const std::vector<float> y = Portable(w, x, c.rows);
      ASSERT_EQ(std::memcmp(y.data(), expected.data(), y.size() * sizeof(float)), 0)
          << name << " target " << hwy::TargetName(target);
    }
    hwy::SetSupportedTargetsForTest(0);
  }
}

}  // namespace
}  // namespace lockstep
