#include "gguf/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "gguf/gguf_file.h"

namespace lockstep {
namespace {

class ByteSink {
 public:
  explicit ByteSink(std::vector<std::byte>* out) : out_(out) {}
  template <typename T>
  void Put(T value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    out_->insert(out_->end(), p, p + sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out_->insert(out_->end(), p, p + s.size());
  }
  void PadTo(size_t alignment) {
    while (out_->size() % alignment != 0) out_->push_back(std::byte{0});
  }
  void PutBytes(std::span<const std::byte> bytes) { out_->insert(out_->end(), bytes.begin(), bytes.end()); }

 private:
  std::vector<std::byte>* out_;
};

void PutValue(ByteSink& sink, const GgufValue& value) {
  switch (value.type()) {
    case GgufType::kUint8: sink.Put<uint8_t>(static_cast<uint8_t>(*value.AsUint())); break;
    case GgufType::kInt8: sink.Put<int8_t>(static_cast<int8_t>(*value.AsInt())); break;
    case GgufType::kUint16: sink.Put<uint16_t>(static_cast<uint16_t>(*value.AsUint())); break;
    case GgufType::kInt16: sink.Put<int16_t>(static_cast<int16_t>(*value.AsInt())); break;
    case GgufType::kUint32: sink.Put<uint32_t>(static_cast<uint32_t>(*value.AsUint())); break;
    case GgufType::kInt32: sink.Put<int32_t>(static_cast<int32_t>(*value.AsInt())); break;
    case GgufType::kUint64: sink.Put<uint64_t>(*value.AsUint()); break;
    case GgufType::kInt64: sink.Put<int64_t>(*value.AsInt()); break;
    case GgufType::kFloat32: sink.Put<float>(static_cast<float>(*value.AsDouble())); break;
    case GgufType::kFloat64: sink.Put<double>(*value.AsDouble()); break;
    case GgufType::kBool: sink.Put<uint8_t>(*value.AsBool() ? 1 : 0); break;
    case GgufType::kString: sink.PutString(*value.AsString()); break;
    case GgufType::kArray: {
      const GgufValue::Array& array = *value.AsArray();
      sink.Put<uint32_t>(static_cast<uint32_t>(array.element_type));
      sink.Put<uint64_t>(array.elements.size());
      for (const GgufValue& element : array.elements) {
        LOCKSTEP_CHECK(element.type() == array.element_type);
        PutValue(sink, element);
      }
      break;
    }
  }
}

}  // namespace

void GgufWriter::Set(const std::string& key, GgufValue value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

Status GgufWriter::AddTensor(const std::string& name, TensorType type, std::vector<int64_t> dims,
                             std::span<const std::byte> data) {
  if (dims.empty() || dims.size() > static_cast<size_t>(kGgufMaxDims)) {
    return InvalidArgument("tensor '" + name + "': 1 to 4 dimensions required");
  }
  const TensorTypeTraits traits = GetTensorTypeTraits(type);
  if (dims[0] % traits.block_elements != 0) {
    return InvalidArgument("tensor '" + name + "': row length " + std::to_string(dims[0]) +
                           " is not a multiple of the block size " + std::to_string(traits.block_elements));
  }
  int64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i) rows *= dims[i];
  const size_t expected = RowBytes(type, dims[0]) * static_cast<size_t>(rows);
  if (data.size() != expected) {
    return InvalidArgument("tensor '" + name + "': " + std::to_string(data.size()) + " bytes given, " +
                           std::to_string(expected) + " expected");
  }
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) return InvalidArgument("duplicate tensor '" + name + "'");
  }
  tensors_.push_back({name, type, std::move(dims), std::vector<std::byte>(data.begin(), data.end())});
  return Status::Ok();
}

size_t GgufWriter::Alignment() const {
  for (const auto& [k, v] : metadata_) {
    if (k == "general.alignment" && v.AsUint()) return static_cast<size_t>(*v.AsUint());
  }
  return kGgufDefaultAlignment;
}

std::vector<std::byte> GgufWriter::ToBytes() const {
  std::vector<std::byte> out;
  ByteSink sink(&out);
  const size_t alignment = Alignment();
  sink.Put<uint32_t>(kGgufMagic);
  sink.Put<uint32_t>(3);
  sink.Put<uint64_t>(tensors_.size());
  sink.Put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    sink.PutString(key);
    sink.Put<uint32_t>(static_cast<uint32_t>(value.type()));
    PutValue(sink, value);
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    sink.PutString(t.name);
    sink.Put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) sink.Put<uint64_t>(static_cast<uint64_t>(d));
    sink.Put<uint32_t>(static_cast<uint32_t>(t.type));
    sink.Put<uint64_t>(offset);
    offset += (t.data.size() + alignment - 1) / alignment * alignment;
  }
  sink.PadTo(alignment);
  for (const PendingTensor& t : tensors_) {
    sink.PutBytes(t.data);
    sink.PadTo(alignment);
  }
  return out;
}

Status GgufWriter::WriteFile(const std::string& path) const {
  const std::vector<std::byte> bytes = ToBytes();
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return InvalidArgument("cannot create '" + temporary + "'");
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) return InvalidArgument("cannot write '" + temporary + "' (disk full?)");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) return InvalidArgument("cannot rename '" + temporary + "' to '" + path + "': " + error.message());
  return Status::Ok();
}

}  // namespace lockstep
