#include "gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "gguf/byte_reader.h"

namespace lockstep {
namespace {

constexpr int kMaxArrayNesting = 8;
constexpr size_t kMaxAlignment = size_t{1} << 20;

// Smallest number of bytes one array element of `type` can occupy in a file.
size_t MinEncodedSize(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kString:
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kArray:
      return 12;
  }
  return 1;
}

Status ReadValue(ByteReader& reader, GgufType type, const std::string& what, int depth, GgufValue* out);

Status ReadArray(ByteReader& reader, const std::string& what, int depth, GgufValue* out) {
  if (depth >= kMaxArrayNesting) {
    return InvalidArgument("arrays nested deeper than " + std::to_string(kMaxArrayNesting) +
                           " at byte offset " + std::to_string(reader.position()) + " in " + what);
  }
  uint32_t raw_type = 0;
  LOCKSTEP_RETURN_IF_ERROR(reader.Read(&raw_type, "the element type of " + what));
  if (!IsValidGgufType(raw_type)) {
    return InvalidArgument("unknown array element type " + std::to_string(raw_type) + " at byte offset " +
                           std::to_string(reader.position() - 4) + " in " + what);
  }
  const auto element_type = static_cast<GgufType>(raw_type);
  uint64_t count = 0;
  const size_t count_offset = reader.position();
  LOCKSTEP_RETURN_IF_ERROR(reader.Read(&count, "the element count of " + what));
  if (count > reader.remaining() / MinEncodedSize(element_type)) {
    return InvalidArgument("array of " + std::to_string(count) + " " + GgufTypeName(element_type) +
                           " elements at byte offset " + std::to_string(count_offset) + " in " + what +
                           " cannot fit in the " + std::to_string(reader.remaining()) + " remaining bytes");
  }
  std::vector<GgufValue> elements(count);
  for (uint64_t i = 0; i < count; ++i) {
    LOCKSTEP_RETURN_IF_ERROR(
        ReadValue(reader, element_type, what + "[" + std::to_string(i) + "]", depth + 1, &elements[i]));
  }
  *out = GgufValue::MakeArray(element_type, std::move(elements));
  return Status::Ok();
}

template <typename T>
Status ReadScalarValue(ByteReader& reader, const std::string& what, GgufValue (*make)(T), GgufValue* out) {
  T value{};
  LOCKSTEP_RETURN_IF_ERROR(reader.Read(&value, what));
  *out = make(value);
  return Status::Ok();
}

Status ReadValue(ByteReader& reader, GgufType type, const std::string& what, int depth, GgufValue* out) {
  switch (type) {
    case GgufType::kUint8:
      return ReadScalarValue<uint8_t>(reader, what, &GgufValue::Uint8, out);
    case GgufType::kInt8:
      return ReadScalarValue<int8_t>(reader, what, &GgufValue::Int8, out);
    case GgufType::kUint16:
      return ReadScalarValue<uint16_t>(reader, what, &GgufValue::Uint16, out);
    case GgufType::kInt16:
      return ReadScalarValue<int16_t>(reader, what, &GgufValue::Int16, out);
    case GgufType::kUint32:
      return ReadScalarValue<uint32_t>(reader, what, &GgufValue::Uint32, out);
    case GgufType::kInt32:
      return ReadScalarValue<int32_t>(reader, what, &GgufValue::Int32, out);
    case GgufType::kUint64:
      return ReadScalarValue<uint64_t>(reader, what, &GgufValue::Uint64, out);
    case GgufType::kInt64:
      return ReadScalarValue<int64_t>(reader, what, &GgufValue::Int64, out);
    case GgufType::kFloat32:
      return ReadScalarValue<float>(reader, what, &GgufValue::Float32, out);
    case GgufType::kFloat64:
      return ReadScalarValue<double>(reader, what, &GgufValue::Float64, out);
    case GgufType::kBool: {
      uint8_t v = 0;
      const size_t offset = reader.position();
      LOCKSTEP_RETURN_IF_ERROR(reader.Read(&v, what));
      if (v > 1) {
        return InvalidArgument("bool value " + std::to_string(v) + " at byte offset " +
                               std::to_string(offset) + " in " + what + " is neither 0 nor 1");
      }
      *out = GgufValue::Bool(v == 1);
      return Status::Ok();
    }
    case GgufType::kString: {
      std::string s;
      LOCKSTEP_RETURN_IF_ERROR(reader.ReadString(&s, what));
      *out = GgufValue::String(std::move(s));
      return Status::Ok();
    }
    case GgufType::kArray:
      return ReadArray(reader, what, depth, out);
  }
  return Internal("unreachable value type");
}

}  // namespace

int64_t GgufTensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Result<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string message = "cannot open '" + path + "': " + std::strerror(err);
    return err == ENOENT ? NotFound(message) : InvalidArgument(message);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("'" + path + "' is not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return InvalidArgument(path + ": empty file (expected a GGUF header)");
  }
  void* mapping = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED) return InvalidArgument("cannot map '" + path + "': " + std::strerror(errno));
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = path;
  file->mapping_ = mapping;
  file->base_ = static_cast<const std::byte*>(mapping);
  file->size_ = static_cast<size_t>(st.st_size);
  LOCKSTEP_RETURN_IF_ERROR(file->Parse().WithContext(path));
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::FromBytes(std::span<const std::byte> bytes,
                                                      const std::string& name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = name;
  file->buffer_.assign(bytes.begin(), bytes.end());
  file->base_ = file->buffer_.data();
  file->size_ = file->buffer_.size();
  LOCKSTEP_RETURN_IF_ERROR(file->Parse().WithContext(name));
  return file;
}

GgufFile::~GgufFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

Status GgufFile::Parse() {
  ByteReader reader(base_, size_);
  uint32_t magic = 0;
  LOCKSTEP_RETURN_IF_ERROR(reader.Read(&magic, "the magic number"));
  if (magic != kGgufMagic) {
    char shown[5] = {};
    std::memcpy(shown, &magic, 4);
    for (char& c : shown) {
      if (c != '\0' && (c < 32 || c > 126)) c = '?';
    }
    return InvalidArgument("bad magic at byte offset 0: expected \"GGUF\", found \"" + std::string(shown, 4) +
                           "\" (not a GGUF file)");
  }
  LOCKSTEP_RETURN_IF_ERROR(reader.Read(&version_, "the version"));
  if (version_ != 2 && version_ != 3) {
    if (version_ == 1) return Unimplemented("GGUF version 1 is not supported (only versions 2 and 3)");
    if (version_ == 0x02000000u || version_ == 0x03000000u) {
      return Unimplemented("big-endian GGUF files are not supported");
    }
    return InvalidArgument("unknown GGUF version " + std::to_string(version_) + " at byte offset 4");
  }
  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
  LOCKSTEP_RETURN_IF_ERROR(reader.Read(&tensor_count, "the tensor count"));
  LOCKSTEP_RETURN_IF_ERROR(reader.Read(&kv_count, "the metadata key/value count"));
  // A key/value pair takes at least 13 bytes (key length, value type, 1-byte value); a tensor info 24.
  if (kv_count > reader.remaining() / 13) {
    return InvalidArgument("metadata count " + std::to_string(kv_count) + " at byte offset 16 is absurd: " +
                           "the file has only " + std::to_string(reader.remaining()) + " bytes left");
  }
  if (tensor_count > reader.remaining() / 24) {
    return InvalidArgument("tensor count " + std::to_string(tensor_count) + " at byte offset 8 is absurd: " +
                           "the file has only " + std::to_string(reader.remaining()) + " bytes left");
  }

  metadata_.reserve(kv_count);
  for (uint64_t i = 0; i < kv_count; ++i) {
    const size_t key_offset = reader.position();
    std::string key;
    LOCKSTEP_RETURN_IF_ERROR(reader.ReadString(&key, "metadata key #" + std::to_string(i)));
    if (key.empty())
      return InvalidArgument("empty metadata key at byte offset " + std::to_string(key_offset));
    if (metadata_index_.count(key) != 0) {
      return InvalidArgument("duplicate metadata key '" + key + "' at byte offset " +
                             std::to_string(key_offset));
    }
    uint32_t raw_type = 0;
    LOCKSTEP_RETURN_IF_ERROR(reader.Read(&raw_type, "the value type of key '" + key + "'"));
    if (!IsValidGgufType(raw_type)) {
      return InvalidArgument("key '" + key + "' has unknown value type " + std::to_string(raw_type) +
                             " at byte offset " + std::to_string(reader.position() - 4));
    }
    GgufValue value;
    LOCKSTEP_RETURN_IF_ERROR(
        ReadValue(reader, static_cast<GgufType>(raw_type), "the value of key '" + key + "'", 0, &value));
    metadata_index_.emplace(key, metadata_.size());
    metadata_.emplace_back(std::move(key), std::move(value));
  }

  if (const GgufValue* alignment = Find("general.alignment")) {
    const std::optional<uint64_t> a = alignment->AsUint();
    if (!a || *a == 0 || (*a & (*a - 1)) != 0 || *a > kMaxAlignment) {
      return InvalidArgument("key 'general.alignment' must be a power of two up to " +
                             std::to_string(kMaxAlignment) + ", found " + alignment->ToDisplayString());
    }
    alignment_ = static_cast<size_t>(*a);
  }

  tensors_.reserve(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo info;
    const size_t info_offset = reader.position();
    LOCKSTEP_RETURN_IF_ERROR(reader.ReadString(&info.name, "the name of tensor #" + std::to_string(i)));
    const std::string what = "tensor '" + info.name + "'";
    if (info.name.empty()) {
      return InvalidArgument("tensor #" + std::to_string(i) + " at byte offset " +
                             std::to_string(info_offset) + " has an empty name");
    }
    if (tensor_index_.count(info.name) != 0) {
      return InvalidArgument("duplicate " + what + " at byte offset " + std::to_string(info_offset));
    }
    uint32_t n_dims = 0;
    LOCKSTEP_RETURN_IF_ERROR(reader.Read(&n_dims, "the dimension count of " + what));
    if (n_dims == 0 || n_dims > kGgufMaxDims) {
      return InvalidArgument(what + " has " + std::to_string(n_dims) + " dimensions (must be 1 to " +
                             std::to_string(kGgufMaxDims) + ")");
    }
    int64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = 0;
      LOCKSTEP_RETURN_IF_ERROR(reader.Read(&dim, "dimension " + std::to_string(d) + " of " + what));
      if (dim == 0) {  // an empty tensor holds nothing a model reads, and rows of 0 elements divide by 0
        return InvalidArgument(what + ": dimension " + std::to_string(d) +
                               " is 0 (dimensions must be positive)");
      }
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          __builtin_mul_overflow(elements, static_cast<int64_t>(dim), &elements)) {
        return InvalidArgument(what + ": dimensions overflow a 64-bit element count (dimension " +
                               std::to_string(d) + " = " + std::to_string(dim) + ")");
      }
      info.dims.push_back(static_cast<int64_t>(dim));
    }
    uint32_t raw_type = 0;
    LOCKSTEP_RETURN_IF_ERROR(reader.Read(&raw_type, "the type of " + what));
    const std::optional<TensorTypeTraits> traits = FindTensorTypeTraits(raw_type);
    if (!traits) {
      return InvalidArgument(what + " has unknown tensor type " + std::to_string(raw_type) +
                             " at byte offset " + std::to_string(reader.position() - 4));
    }
    info.type = static_cast<TensorType>(raw_type);
    if (info.dims[0] % traits->block_elements != 0) {
      return InvalidArgument(what + ": row length " + std::to_string(info.dims[0]) +
                             " is not a multiple of the " + std::string(traits->name) + " block size " +
                             std::to_string(traits->block_elements));
    }
    int64_t size = 0;
    if (__builtin_mul_overflow(elements / traits->block_elements, traits->block_bytes, &size)) {
      return InvalidArgument(what + ": byte size overflows");
    }
    info.size_bytes = static_cast<size_t>(size);
    LOCKSTEP_RETURN_IF_ERROR(reader.Read(&info.offset, "the data offset of " + what));
    if (info.offset % alignment_ != 0) {
      return InvalidArgument(what + ": data offset " + std::to_string(info.offset) +
                             " is not a multiple of the alignment " + std::to_string(alignment_));
    }
    tensor_index_.emplace(info.name, tensors_.size());
    tensors_.push_back(std::move(info));
  }

  data_offset_ = (reader.position() + alignment_ - 1) / alignment_ * alignment_;
  for (GgufTensorInfo& info : tensors_) {
    const uint64_t start = data_offset_ + info.offset;
    if (info.offset > size_ || start > size_ || info.size_bytes > size_ - start) {
      return InvalidArgument("tensor '" + info.name + "': data [" + std::to_string(start) + ", " +
                             std::to_string(start + info.size_bytes) +
                             ") extends past the end of the file (" + std::to_string(size_) + " bytes)");
    }
    info.data = base_ + start;
  }
  return Status::Ok();
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Status GgufFile::TypeError(std::string_view key, const GgufValue& value, const char* expected) const {
  return InvalidArgument(path_ + ": key '" + std::string(key) + "' has type " + GgufTypeName(value.type()) +
                         ", expected " + expected);
}

namespace {
Status Missing(const std::string& path, std::string_view key) {
  return NotFound(path + ": missing required key '" + std::string(key) + "'");
}
}  // namespace

Result<int64_t> GgufFile::GetInt(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(path_, key);
  if (auto i = v->AsInt()) return *i;
  return TypeError(key, *v, "an integer");
}

Result<double> GgufFile::GetFloat(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(path_, key);
  if (auto d = v->AsDouble()) return *d;
  return TypeError(key, *v, "a number");
}

Result<bool> GgufFile::GetBool(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(path_, key);
  if (auto b = v->AsBool()) return *b;
  return TypeError(key, *v, "a bool");
}

Result<std::string> GgufFile::GetString(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(path_, key);
  if (const std::string* s = v->AsString()) return *s;
  return TypeError(key, *v, "a string");
}

Result<const GgufValue::Array*> GgufFile::GetArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(path_, key);
  if (const GgufValue::Array* a = v->AsArray()) return a;
  return TypeError(key, *v, "an array");
}

Result<int64_t> GgufFile::GetIntOr(std::string_view key, int64_t fallback) const {
  return Has(key) ? GetInt(key) : Result<int64_t>(fallback);
}

Result<double> GgufFile::GetFloatOr(std::string_view key, double fallback) const {
  return Has(key) ? GetFloat(key) : Result<double>(fallback);
}

Result<bool> GgufFile::GetBoolOr(std::string_view key, bool fallback) const {
  return Has(key) ? GetBool(key) : Result<bool>(fallback);
}

Result<std::string> GgufFile::GetStringOr(std::string_view key, std::string fallback) const {
  return Has(key) ? GetString(key) : Result<std::string>(std::move(fallback));
}

Result<std::vector<std::string>> GgufFile::GetStringArray(std::string_view key) const {
  LOCKSTEP_ASSIGN_OR_RETURN(const GgufValue::Array* array, GetArray(key));
  std::vector<std::string> out;
  out.reserve(array->elements.size());
  for (size_t i = 0; i < array->elements.size(); ++i) {
    const std::string* s = array->elements[i].AsString();
    if (s == nullptr) {
      return InvalidArgument(path_ + ": key '" + std::string(key) + "' element " + std::to_string(i) +
                             " has type " + GgufTypeName(array->elements[i].type()) + ", expected string");
    }
    out.push_back(*s);
  }
  return out;
}

Result<std::vector<float>> GgufFile::GetFloatArray(std::string_view key) const {
  LOCKSTEP_ASSIGN_OR_RETURN(const GgufValue::Array* array, GetArray(key));
  std::vector<float> out;
  out.reserve(array->elements.size());
  for (size_t i = 0; i < array->elements.size(); ++i) {
    const std::optional<double> d = array->elements[i].AsDouble();
    if (!d) {
      return InvalidArgument(path_ + ": key '" + std::string(key) + "' element " + std::to_string(i) +
                             " has type " + GgufTypeName(array->elements[i].type()) + ", expected a number");
    }
    out.push_back(static_cast<float>(*d));
  }
  return out;
}

Result<std::vector<int32_t>> GgufFile::GetInt32Array(std::string_view key) const {
  LOCKSTEP_ASSIGN_OR_RETURN(const GgufValue::Array* array, GetArray(key));
  std::vector<int32_t> out;
  out.reserve(array->elements.size());
  for (size_t i = 0; i < array->elements.size(); ++i) {
    const std::optional<int64_t> v = array->elements[i].AsInt();
    if (!v || *v < std::numeric_limits<int32_t>::min() || *v > std::numeric_limits<int32_t>::max()) {
      return InvalidArgument(path_ + ": key '" + std::string(key) + "' element " + std::to_string(i) +
                             " is not a 32-bit integer (" + array->elements[i].ToDisplayString() + ")");
    }
    out.push_back(static_cast<int32_t>(*v));
  }
  return out;
}

}  // namespace lockstep
