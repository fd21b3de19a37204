#include "tensor/delta_rule.h"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_* placeholders.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang (the fuzz and sanitizer builds) has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace lockstep {
namespace {

// Rows [i0, v_dim) one at a time: the reference, and every SIMD level's tail.
void DeltaRuleRows(float* state, int64_t i0, int64_t v_dim, int64_t k_dim, const float* q, const float* k,
                   const float* v, float beta, float decay, float* o) {
  for (int64_t i = i0; i < v_dim; ++i) {
    float p = 0;
    for (int64_t j = 0; j < k_dim; ++j) p = std::fma(state[j * v_dim + i] * decay, k[j], p);
    const float delta = beta * (v[i] - p);
    float out = 0;
    for (int64_t j = 0; j < k_dim; ++j) {
      float& s = state[j * v_dim + i];
      s = std::fma(delta, k[j], s * decay);
      out = std::fma(s, q[j], out);
    }
    o[i] = out;
  }
}

// The SIMD levels (tensor/delta_rule-inl.h's Rows over each instruction set's lanes); the rows left over
// as the scalar.
#if defined(__x86_64__)
namespace avx2 {
struct V {
  using F = __m256;
  static constexpr int kLanes = 8;
  static F Zero() { return _mm256_setzero_ps(); }
  static F Set1(float x) { return _mm256_set1_ps(x); }
  static F Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, F x) { _mm256_storeu_ps(p, x); }
  static F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F Sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F Fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
};
#include "tensor/delta_rule-inl.h"
}  // namespace avx2

// Clang has no `#pragma GCC target`; its attribute pragma gives every function here the same target.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f")
#endif
namespace avx512 {
struct V {
  using F = __m512;
  static constexpr int kLanes = 16;
  static F Zero() { return _mm512_setzero_ps(); }
  static F Set1(float x) { return _mm512_set1_ps(x); }
  static F Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, F x) { _mm512_storeu_ps(p, x); }
  static F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F Sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F Fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
};
#include "tensor/delta_rule-inl.h"
}  // namespace avx512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#elif defined(__aarch64__) && defined(__ARM_NEON)
namespace neon {
struct V {
  using F = float32x4_t;
  static constexpr int kLanes = 4;
  static F Zero() { return vdupq_n_f32(0.0f); }
  static F Set1(float x) { return vdupq_n_f32(x); }
  static F Load(const float* p) { return vld1q_f32(p); }
  static void Store(float* p, F x) { vst1q_f32(p, x); }
  static F Mul(F a, F b) { return vmulq_f32(a, b); }
  static F Sub(F a, F b) { return vsubq_f32(a, b); }
  static F Fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }
};
#include "tensor/delta_rule-inl.h"
}  // namespace neon
#endif

}  // namespace

void DeltaRuleScalar(float* state, int64_t v_dim, int64_t k_dim, const float* q, const float* k,
                     const float* v, float beta, float decay, float* o) {
  DeltaRuleRows(state, 0, v_dim, k_dim, q, k, v, beta, decay, o);
}

#if defined(__x86_64__)
void DeltaRuleAvx2(float* state, int64_t v_dim, int64_t k_dim, const float* q, const float* k, const float* v,
                   float beta, float decay, float* o) {
  int64_t i = 0;
  for (; i + 32 <= v_dim; i += 32) avx2::Rows<4>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  for (; i + 8 <= v_dim; i += 8) avx2::Rows<1>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  DeltaRuleRows(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
}

__attribute__((target("avx512f"))) void DeltaRuleAvx512(float* state, int64_t v_dim, int64_t k_dim,
                                                        const float* q, const float* k, const float* v,
                                                        float beta, float decay, float* o) {
  int64_t i = 0;
  for (; i + 64 <= v_dim; i += 64) avx512::Rows<4>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  for (; i + 16 <= v_dim; i += 16) avx512::Rows<1>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  for (; i + 8 <= v_dim; i += 8) avx2::Rows<1>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  DeltaRuleRows(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
}
#elif defined(__aarch64__) && defined(__ARM_NEON)
void DeltaRuleNeon(float* state, int64_t v_dim, int64_t k_dim, const float* q, const float* k, const float* v,
                   float beta, float decay, float* o) {
  int64_t i = 0;
  for (; i + 32 <= v_dim; i += 32) neon::Rows<8>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  for (; i + 4 <= v_dim; i += 4) neon::Rows<1>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  DeltaRuleRows(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
}
#endif

}  // namespace lockstep
