#include "tensor/delta_rule.h"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_* placeholders.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
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

// The SIMD levels: rows [i, i + kRegs x lanes) as kRegs vectors (independent chains of fused multiply-adds
// that keep the FMA units busy), the canonical operations lane by lane; the rows left over as the scalar.
#if defined(__x86_64__)
template <int kRegs>
inline void RowsAvx2(float* state, int64_t i, int64_t v_dim, int64_t k_dim, const float* q, const float* k,
                     const float* v, float beta, float decay, float* o) {
  const __m256 dv = _mm256_set1_ps(decay);
  __m256 acc[kRegs], delta[kRegs];
  for (int u = 0; u < kRegs; ++u) acc[u] = _mm256_setzero_ps();
  for (int64_t j = 0; j < k_dim; ++j) {
    const float* s = state + j * v_dim + i;
    const __m256 kj = _mm256_set1_ps(k[j]);
    for (int u = 0; u < kRegs; ++u)
      acc[u] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(s + 8 * u), dv), kj, acc[u]);
  }
  for (int u = 0; u < kRegs; ++u) {
    delta[u] = _mm256_mul_ps(_mm256_set1_ps(beta), _mm256_sub_ps(_mm256_loadu_ps(v + i + 8 * u), acc[u]));
    acc[u] = _mm256_setzero_ps();
  }
  for (int64_t j = 0; j < k_dim; ++j) {
    float* s = state + j * v_dim + i;
    const __m256 kj = _mm256_set1_ps(k[j]), qj = _mm256_set1_ps(q[j]);
    for (int u = 0; u < kRegs; ++u) {
      const __m256 x = _mm256_fmadd_ps(delta[u], kj, _mm256_mul_ps(_mm256_loadu_ps(s + 8 * u), dv));
      _mm256_storeu_ps(s + 8 * u, x);
      acc[u] = _mm256_fmadd_ps(x, qj, acc[u]);
    }
  }
  for (int u = 0; u < kRegs; ++u) _mm256_storeu_ps(o + i + 8 * u, acc[u]);
}

template <int kRegs>
__attribute__((target("avx512f"))) inline void RowsAvx512(float* state, int64_t i, int64_t v_dim,
                                                          int64_t k_dim, const float* q, const float* k,
                                                          const float* v, float beta, float decay, float* o) {
  const __m512 dv = _mm512_set1_ps(decay);
  __m512 acc[kRegs], delta[kRegs];
  for (int u = 0; u < kRegs; ++u) acc[u] = _mm512_setzero_ps();
  for (int64_t j = 0; j < k_dim; ++j) {
    const float* s = state + j * v_dim + i;
    const __m512 kj = _mm512_set1_ps(k[j]);
    for (int u = 0; u < kRegs; ++u)
      acc[u] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_loadu_ps(s + 16 * u), dv), kj, acc[u]);
  }
  for (int u = 0; u < kRegs; ++u) {
    delta[u] = _mm512_mul_ps(_mm512_set1_ps(beta), _mm512_sub_ps(_mm512_loadu_ps(v + i + 16 * u), acc[u]));
    acc[u] = _mm512_setzero_ps();
  }
  for (int64_t j = 0; j < k_dim; ++j) {
    float* s = state + j * v_dim + i;
    const __m512 kj = _mm512_set1_ps(k[j]), qj = _mm512_set1_ps(q[j]);
    for (int u = 0; u < kRegs; ++u) {
      const __m512 x = _mm512_fmadd_ps(delta[u], kj, _mm512_mul_ps(_mm512_loadu_ps(s + 16 * u), dv));
      _mm512_storeu_ps(s + 16 * u, x);
      acc[u] = _mm512_fmadd_ps(x, qj, acc[u]);
    }
  }
  for (int u = 0; u < kRegs; ++u) _mm512_storeu_ps(o + i + 16 * u, acc[u]);
}
#elif defined(__aarch64__) && defined(__ARM_NEON)
template <int kRegs>
inline void RowsNeon(float* state, int64_t i, int64_t v_dim, int64_t k_dim, const float* q, const float* k,
                     const float* v, float beta, float decay, float* o) {
  const float32x4_t dv = vdupq_n_f32(decay);
  float32x4_t acc[kRegs], delta[kRegs];
  for (int u = 0; u < kRegs; ++u) acc[u] = vdupq_n_f32(0.0f);
  for (int64_t j = 0; j < k_dim; ++j) {
    const float* s = state + j * v_dim + i;
    const float32x4_t kj = vdupq_n_f32(k[j]);
    for (int u = 0; u < kRegs; ++u) acc[u] = vfmaq_f32(acc[u], vmulq_f32(vld1q_f32(s + 4 * u), dv), kj);
  }
  for (int u = 0; u < kRegs; ++u) {
    delta[u] = vmulq_f32(vdupq_n_f32(beta), vsubq_f32(vld1q_f32(v + i + 4 * u), acc[u]));
    acc[u] = vdupq_n_f32(0.0f);
  }
  for (int64_t j = 0; j < k_dim; ++j) {
    float* s = state + j * v_dim + i;
    const float32x4_t kj = vdupq_n_f32(k[j]), qj = vdupq_n_f32(q[j]);
    for (int u = 0; u < kRegs; ++u) {
      const float32x4_t x = vfmaq_f32(vmulq_f32(vld1q_f32(s + 4 * u), dv), delta[u], kj);
      vst1q_f32(s + 4 * u, x);
      acc[u] = vfmaq_f32(acc[u], x, qj);
    }
  }
  for (int u = 0; u < kRegs; ++u) vst1q_f32(o + i + 4 * u, acc[u]);
}
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
  for (; i + 32 <= v_dim; i += 32) RowsAvx2<4>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  for (; i + 8 <= v_dim; i += 8) RowsAvx2<1>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  DeltaRuleRows(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
}

__attribute__((target("avx512f"))) void DeltaRuleAvx512(float* state, int64_t v_dim, int64_t k_dim,
                                                        const float* q, const float* k, const float* v,
                                                        float beta, float decay, float* o) {
  int64_t i = 0;
  for (; i + 64 <= v_dim; i += 64) RowsAvx512<4>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  for (; i + 16 <= v_dim; i += 16) RowsAvx512<1>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  for (; i + 8 <= v_dim; i += 8) RowsAvx2<1>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  DeltaRuleRows(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
}
#elif defined(__aarch64__) && defined(__ARM_NEON)
void DeltaRuleNeon(float* state, int64_t v_dim, int64_t k_dim, const float* q, const float* k, const float* v,
                   float beta, float decay, float* o) {
  int64_t i = 0;
  for (; i + 32 <= v_dim; i += 32) RowsNeon<8>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  for (; i + 4 <= v_dim; i += 4) RowsNeon<1>(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
  DeltaRuleRows(state, i, v_dim, k_dim, q, k, v, beta, decay, o);
}
#endif

}  // namespace lockstep
