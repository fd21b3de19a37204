// A deliberately naive reference forward pass for every supported architecture, for tests only: whole-tensor
// dequantization to f32, double accumulation everywhere, full causal attention recomputed from scratch for
// one sequence, written plainly with no batching, blocks or threads. Shares nothing with the fast path except
// the GGUF reader, the dequantizer and the metadata parser.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"

namespace lockstep::testing {

// Logits for every position of `tokens` (one sequence starting at position 0): [tokens.size()][n_vocab].
// `embeddings` (optional): every position's final hidden state after the output norm,
// [tokens.size()][n_embd].
Result<std::vector<std::vector<double>>> ReferenceForward(
    const GgufFile& file, const std::vector<int32_t>& tokens,
    std::vector<std::vector<double>>* embeddings = nullptr);

}  // namespace lockstep::testing
