// GgufFile: a parsed GGUF v2/v3 file. Open() memory-maps the file read-only and validates the whole header:
// magic, version, every metadata value (bounded counts and string lengths), tensor infos (dims, types,
// aligned offsets inside the data section). Tensor data is borrowed straight from the mapping, so a GgufFile
// must outlive every pointer it hands out. Malformed input gives a Status naming the problem and the key or
// byte offset; nothing in a file can crash the reader or make it allocate more than the file could hold.
// Immutable after Open(): safe to read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_value.h"
#include "gguf/tensor_type.h"

namespace lockstep {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
inline constexpr size_t kGgufDefaultAlignment = 32;
inline constexpr int kGgufMaxDims = 4;

struct GgufTensorInfo {
  std::string name;
  // Shape in GGUF (ggml) order: dims[0] is the innermost, contiguous dimension (the row length);
  // a weight matrix [out][in] has dims {in, out}.
  std::vector<int64_t> dims;
  TensorType type = TensorType::kF32;
  uint64_t offset = 0;  // from the start of the data section
  size_t size_bytes = 0;
  const std::byte* data = nullptr;  // points into the mapping (or buffer)

  int64_t elements() const;
  int64_t rows() const { return elements() / dims[0]; }  // product of dims[1..]
};

class GgufFile {
 public:
  // Maps and parses `path`.
  static Result<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses an in-memory image (copied); for tests and tools. `name` is used in error messages.
  static Result<std::unique_ptr<GgufFile>> FromBytes(std::span<const std::byte> bytes,
                                                     const std::string& name = "<memory>");
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  size_t file_size() const { return size_; }
  size_t data_offset() const { return data_offset_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* Find(std::string_view key) const;
  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  // Required-key accessors: NotFound "missing required key 'K'" or InvalidArgument "key 'K' has type T,
  // expected ..." naming the file.
  Result<int64_t> GetInt(std::string_view key) const;
  Result<double> GetFloat(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;
  Result<std::string> GetString(std::string_view key) const;
  Result<const GgufValue::Array*> GetArray(std::string_view key) const;
  // Optional-key accessors: the default when absent; an error when present with the wrong type.
  Result<int64_t> GetIntOr(std::string_view key, int64_t fallback) const;
  Result<double> GetFloatOr(std::string_view key, double fallback) const;
  Result<bool> GetBoolOr(std::string_view key, bool fallback) const;
  Result<std::string> GetStringOr(std::string_view key, std::string fallback) const;
  // Typed arrays (every element must have the type): e.g. tokenizer.ggml.tokens / scores / token_type.
  Result<std::vector<std::string>> GetStringArray(std::string_view key) const;
  Result<std::vector<float>> GetFloatArray(std::string_view key) const;
  Result<std::vector<int32_t>> GetInt32Array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;

 private:
  GgufFile() = default;
  Status Parse();
  Status TypeError(std::string_view key, const GgufValue& value, const char* expected) const;

  std::string path_;
  const std::byte* base_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;        // mmap'd region (Open)
  std::vector<std::byte> buffer_;  // owned copy (FromBytes)
  uint32_t version_ = 0;
  size_t alignment_ = kGgufDefaultAlignment;
  size_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace lockstep
