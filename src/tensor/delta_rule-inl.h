// The delta rule's SIMD rows over a lane type V (tensor/delta_rule.cc includes this once per instruction set,
// inside that set's namespace, after defining V): V::F a vector of V::kLanes floats; Zero, Set1, Load,
// Store, Mul, Sub, and Fma(a, b, c) = c + a * b fused per lane (std::fma), so every V gives the scalar's
// bits. No include guard: meant to be included several times.

// Rows [i, i + kRegs x V::kLanes) as kRegs vectors (independent chains of fused multiply-adds that keep the
// FMA units busy), the canonical operations of tensor/delta_rule.h lane by lane.
template <int kRegs>
inline void Rows(float* state, int64_t i, int64_t v_dim, int64_t k_dim, const float* q, const float* k,
                 const float* v, float beta, float decay, float* o) {
  constexpr int kLanes = V::kLanes;
  const typename V::F dv = V::Set1(decay);
  typename V::F acc[kRegs], delta[kRegs];
  for (int u = 0; u < kRegs; ++u) acc[u] = V::Zero();
  for (int64_t j = 0; j < k_dim; ++j) {
    const float* s = state + j * v_dim + i;
    const typename V::F kj = V::Set1(k[j]);
    for (int u = 0; u < kRegs; ++u) acc[u] = V::Fma(V::Mul(V::Load(s + kLanes * u), dv), kj, acc[u]);
  }
  for (int u = 0; u < kRegs; ++u) {
    delta[u] = V::Mul(V::Set1(beta), V::Sub(V::Load(v + i + kLanes * u), acc[u]));
    acc[u] = V::Zero();
  }
  for (int64_t j = 0; j < k_dim; ++j) {
    float* s = state + j * v_dim + i;
    const typename V::F kj = V::Set1(k[j]), qj = V::Set1(q[j]);
    for (int u = 0; u < kRegs; ++u) {
      const typename V::F x = V::Fma(delta[u], kj, V::Mul(V::Load(s + kLanes * u), dv));
      V::Store(s + kLanes * u, x);
      acc[u] = V::Fma(x, qj, acc[u]);
    }
  }
  for (int u = 0; u < kRegs; ++u) V::Store(o + i + kLanes * u, acc[u]);
}
