// Checks of a batch's inputs from outside (the engine, the CLI, tests) that every model's forward pass makes
// the same way: the output buffers' sizes and each row's token and position. Each returns Ok or an
// InvalidArgument / OutOfRange naming what was wrong and where ("batch row 3: token 70000 is outside the
// vocabulary (0..49151)"); the message is built only on error. Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "model/batch.h"

namespace lockstep {

// "batch row <index>: ", the start of every message about one row.
std::string BatchRowWhere(size_t index);

// `buffer` holds at least `rows` * `width` floats; `what` names it ("logits", "embeddings").
Status CheckOutputBuffer(const char* what, std::span<float> buffer, int64_t rows, int64_t width);

// Row `index`'s token is in [0, n_vocab).
Status CheckRowToken(const BatchRow& row, size_t index, int64_t n_vocab);

// Row `index`'s position has a learned position embedding: [0, n_ctx_train) (bert, gpt2, starcoder).
Status CheckRowPositionEmbedding(const BatchRow& row, size_t index, int64_t n_ctx_train);

}  // namespace lockstep
