// The rotation of rotary position embeddings (RoPE), given each pair's cos and sin (the angles are the
// model's business: model/rope.h). One version for every level. Pure function, thread-safe.
#pragma once

#include <cstdint>

namespace lockstep {

// Rotates the first 2 * pairs dims of each of `heads` heads of x ([heads][head_dim]): pair i is (2i, 2i + 1)
// (`halves` false: GPT-J / Llama GGUF order) or (i, i + pairs) (`halves` true: GPT-NeoX / Qwen2 order), by
// cos_sin[2i], cos_sin[2i + 1]: (a, b) <- (fma(a, c, -(b s)), fma(a, s, b c)), the same bits on every CPU.
void ApplyRope(const float* cos_sin, int64_t pairs, bool halves, int64_t head_dim, float* x, int64_t heads);

}  // namespace lockstep
