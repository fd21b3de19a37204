// The gated delta rule: one token's step of a Gated DeltaNet value head's recurrent state (model/delta_net.h
// runs it; the table in tensor/kernels.h picks a version per level). For S the head's [v_dim][k_dim] state,
// q and k of k_dim floats, v and o of v_dim:
//   S = decay S;  delta = beta (v - S k);  S = S + delta k^T;  o = S q
// The state is stored transposed, column j of S (over the value rows i) contiguous: S[i][j] at
// state[j * v_dim + i], so that the v_dim independent rows run side by side in the lanes of a vector while
// each row's sums over j keep one order. The canonical operations, per row i, that every level performs
// (the SIMD levels on 8, 16 or 4 rows at once, the rows past the last whole vector as the scalar does):
//   p = 0;  for j < k_dim: p = fma(S[i][j] * decay, k[j], p)
//   delta = beta * (v[i] - p)
//   o = 0;  for j < k_dim: S[i][j] = fma(delta, k[j], S[i][j] * decay);  o = fma(S[i][j], q[j], o)
//   o[i] = o
// so every level gives the same bits (tests/tensor/delta_rule_test.cc). Pure functions, thread-safe for
// distinct states.
#pragma once

#include <cstdint>

namespace lockstep {

void DeltaRuleScalar(float* state, int64_t v_dim, int64_t k_dim, const float* q, const float* k,
                     const float* v, float beta, float decay, float* o);
#if defined(__x86_64__)
void DeltaRuleAvx2(float* state, int64_t v_dim, int64_t k_dim, const float* q, const float* k, const float* v,
                   float beta, float decay, float* o);
void DeltaRuleAvx512(float* state, int64_t v_dim, int64_t k_dim, const float* q, const float* k,
                     const float* v, float beta, float decay, float* o);
#elif defined(__aarch64__) && defined(__ARM_NEON)
void DeltaRuleNeon(float* state, int64_t v_dim, int64_t k_dim, const float* q, const float* k, const float* v,
                   float beta, float decay, float* o);
#endif

}  // namespace lockstep
