// ByteReader: bounds-checked little-endian reads from a byte range, for parsing untrusted files. Every failed
// read names what was being read and the byte offset. Borrows the bytes; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/status.h"

namespace lockstep {

class ByteReader {
 public:
  ByteReader(const std::byte* data, size_t size) : data_(data), size_(size) {}

  size_t position() const { return position_; }
  size_t remaining() const { return size_ - position_; }

  template <typename T>
  Status Read(T* out, const std::string& what) {
    if (remaining() < sizeof(T)) return Truncated(sizeof(T), what);
    std::memcpy(out, data_ + position_, sizeof(T));
    position_ += sizeof(T);
    return Status::Ok();
  }

  // A GGUF string: uint64 length, then that many bytes.
  Status ReadString(std::string* out, const std::string& what) {
    uint64_t length = 0;
    const size_t offset = position_;
    LOCKSTEP_RETURN_IF_ERROR(Read(&length, "the length of " + what));
    if (length > remaining()) {
      return InvalidArgument("string length " + std::to_string(length) + " at byte offset " +
                             std::to_string(offset) + " (" + what + ") exceeds the " +
                             std::to_string(remaining()) + " bytes left in the file");
    }
    out->assign(reinterpret_cast<const char*>(data_ + position_), static_cast<size_t>(length));
    position_ += static_cast<size_t>(length);
    return Status::Ok();
  }

 private:
  Status Truncated(size_t need, const std::string& what) const {
    return InvalidArgument("truncated at byte offset " + std::to_string(position_) + " while reading " +
                           what + " (need " + std::to_string(need) + " bytes, " +
                           std::to_string(remaining()) + " remain)");
  }

  const std::byte* data_;
  size_t size_;
  size_t position_ = 0;
};

}  // namespace lockstep
