// GgufWriter: builds a GGUF v3 file: metadata in insertion order, then tensor infos, then tensor data, each
// tensor aligned to general.alignment (default 32). Tensor bytes are either copied in at AddTensor, or (for
// files too large to hold in memory) declared with DeclareTensor and produced one at a time while
// WriteFile streams them out. Single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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
  // Declares a tensor whose bytes are produced during WriteFile.
  Status DeclareTensor(const std::string& name, TensorType type, std::vector<int64_t> dims);

  // Serialises the whole file (every tensor must have been added with its data).
  std::vector<std::byte> ToBytes() const;

  // Fills `data` with the bytes of declared tensor `index` (in declaration order among all tensors).
  using TensorProducer = std::function<Status(size_t index, std::vector<std::byte>& data)>;
  // Writes to `path` (through a temporary file `path`.tmp renamed into place, removed again on any error;
  // an empty `path` is refused). Tensors declared without data are produced by `produce`, one at a time, so
  // memory stays bounded by the largest tensor.
  Status WriteFile(const std::string& path, const TensorProducer& produce = nullptr) const;

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> dims;
    size_t bytes = 0;
    bool has_data = false;
    std::vector<std::byte> data;
  };
  size_t Alignment() const;
  Result<size_t> CheckTensor(const std::string& name, TensorType type,
                             const std::vector<int64_t>& dims) const;
  // Magic, counts, metadata and tensor infos, padded to the alignment.
  std::vector<std::byte> HeaderBytes() const;
  // WriteFile's writing part: the whole file to `temporary`.
  Status WriteTemporary(const std::string& temporary, const TensorProducer& produce) const;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace lockstep
