#include "model/batch_checks.h"

namespace lockstep {

std::string BatchRowWhere(size_t index) { return "batch row " + std::to_string(index) + ": "; }

Status CheckOutputBuffer(const char* what, std::span<float> buffer, int64_t rows, int64_t width) {
  const size_t needed = size_t(rows) * size_t(width);
  if (buffer.size() >= needed) return Status::Ok();
  return InvalidArgument(std::string(what) + " buffer holds " + std::to_string(buffer.size()) +
                         " floats, the batch needs " + std::to_string(needed));
}

Status CheckRowToken(const BatchRow& row, size_t index, int64_t n_vocab) {
  if (row.token >= 0 && row.token < n_vocab) return Status::Ok();
  return InvalidArgument(BatchRowWhere(index) + "token " + std::to_string(row.token) +
                         " is outside the vocabulary (0.." + std::to_string(n_vocab - 1) + ")");
}

Status CheckRowPositionEmbedding(const BatchRow& row, size_t index, int64_t n_ctx_train) {
  if (row.position >= 0 && row.position < n_ctx_train) return Status::Ok();
  return OutOfRange(BatchRowWhere(index) + "position " + std::to_string(row.position) +
                    " is beyond the model's position embeddings (n_ctx_train " + std::to_string(n_ctx_train) +
                    ")");
}

}  // namespace lockstep
