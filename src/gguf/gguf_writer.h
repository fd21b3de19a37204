// GgufWriter: builds a GGUF v3 file: metadata in insertion order, then tensor infos, then tensor data, each
// tensor aligned to general.alignment (default 32). Tensor bytes are copied in at AddTensor. Single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_value.h"
#include "gguf/tensor_type.h"

namespace lockstep {

class GgufWriter {
 public:
  // Sets (or replaces) a metadata key.
  void Set(const std::string& key, GgufValue value);
  // Adds a tensor. dims in GGUF order (dims[0] innermost); data must be RowBytes(type, dims[0]) * rows bytes.
  Status AddTensor(const std::string& name, TensorType type, std::vector<int64_t> dims,
                   std::span<const std::byte> data);
  // Serialises the whole file.
  std::vector<std::byte> ToBytes() const;
  // Writes to `path` (through a temporary file renamed into place).
  Status WriteFile(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> dims;
    std::vector<std::byte> data;
  };
  size_t Alignment() const;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace lockstep
