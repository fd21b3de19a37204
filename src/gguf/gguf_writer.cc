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
    case GgufType::kUint8:
      sink.Put<uint8_t>(static_cast<uint8_t>(*value.AsUint()));
      break;
    case GgufType::kInt8:
      sink.Put<int8_t>(static_cast<int8_t>(*value.AsInt()));
      break;
    case GgufType::kUint16:
      sink.Put<uint16_t>(static_cast<uint16_t>(*value.AsUint()));
      break;
    case GgufType::kInt16:
      sink.Put<int16_t>(static_cast<int16_t>(*value.AsInt()));
      break;
    case GgufType::kUint32:
      sink.Put<uint32_t>(static_cast<uint32_t>(*value.AsUint()));
      break;
    case GgufType::kInt32:
      sink.Put<int32_t>(static_cast<int32_t>(*value.AsInt()));
      break;
    case GgufType::kUint64:
      sink.Put<uint64_t>(*value.AsUint());
      break;
    case GgufType::kInt64:
      sink.Put<int64_t>(*value.AsInt());
      break;
    case GgufType::kFloat32:
      sink.Put<float>(static_cast<float>(*value.AsDouble()));
      break;
    case GgufType::kFloat64:
      sink.Put<double>(*value.AsDouble());
      break;
    case GgufType::kBool:
      sink.Put<uint8_t>(*value.AsBool() ? 1 : 0);
      break;
    case GgufType::kString:
      sink.PutString(*value.AsString());
      break;
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

Result<size_t> GgufWriter::CheckTensor(const std::string& name, TensorType type,
                                       const std::vector<int64_t>& dims) const {
  if (dims.empty() || dims.size() > static_cast<size_t>(kGgufMaxDims)) {
    return InvalidArgument("tensor '" + name + "': 1 to 4 dimensions required");
  }
  const TensorTypeTraits traits = GetTensorTypeTraits(type);
  if (dims[0] % traits.block_elements != 0) {
    return InvalidArgument("tensor '" + name + "': row length " + std::to_string(dims[0]) +
                           " is not a multiple of the block size " + std::to_string(traits.block_elements));
  }
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) return InvalidArgument("duplicate tensor '" + name + "'");
  }
  int64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i) rows *= dims[i];
  return RowBytes(type, dims[0]) * static_cast<size_t>(rows);
}

Status GgufWriter::AddTensor(const std::string& name, TensorType type, std::vector<int64_t> dims,
                             std::span<const std::byte> data) {
  LOCKSTEP_ASSIGN_OR_RETURN(const size_t expected, CheckTensor(name, type, dims));
  if (data.size() != expected) {
    return InvalidArgument("tensor '" + name + "': " + std::to_string(data.size()) + " bytes given, " +
                           std::to_string(expected) + " expected");
  }
  tensors_.push_back({name, type, std::move(dims), expected, true, {data.begin(), data.end()}});
  return Status::Ok();
}

Status GgufWriter::DeclareTensor(const std::string& name, TensorType type, std::vector<int64_t> dims) {
  LOCKSTEP_ASSIGN_OR_RETURN(const size_t expected, CheckTensor(name, type, dims));
  tensors_.push_back({name, type, std::move(dims), expected, false, {}});
  return Status::Ok();
}

size_t GgufWriter::Alignment() const {
  for (const auto& [k, v] : metadata_) {
    if (k == "general.alignment" && v.AsUint()) return static_cast<size_t>(*v.AsUint());
  }
  return kGgufDefaultAlignment;
}

std::vector<std::byte> GgufWriter::HeaderBytes() const {
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
    offset += (t.bytes + alignment - 1) / alignment * alignment;
  }
  sink.PadTo(alignment);
  return out;
}

std::vector<std::byte> GgufWriter::ToBytes() const {
  std::vector<std::byte> out = HeaderBytes();
  ByteSink sink(&out);
  for (const PendingTensor& t : tensors_) {
    LOCKSTEP_CHECK_MSG(t.has_data, "ToBytes() needs every tensor's data; '" + t.name + "' was only declared");
    sink.PutBytes(t.data);
    sink.PadTo(Alignment());
  }
  return out;
}

Status GgufWriter::WriteFile(const std::string& path, const TensorProducer& produce) const {
  if (path.empty()) return InvalidArgument("the output path is empty");
  const std::string temporary = path + ".tmp";
  Status status = WriteTemporary(temporary, produce);
  std::error_code error;
  if (status.ok()) {
    std::filesystem::rename(temporary, path, error);
    if (error) {
      status = InvalidArgument("cannot rename '" + temporary + "' to '" + path + "': " + error.message());
    }
  }
  if (!status.ok()) std::filesystem::remove(temporary, error);  // no half-written or orphaned .tmp is left
  return status;
}

Status GgufWriter::WriteTemporary(const std::string& temporary, const TensorProducer& produce) const {
  std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
  if (!out) return InvalidArgument("cannot create '" + temporary + "'");
  auto write = [&out](std::span<const std::byte> bytes) {
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  };
  write(HeaderBytes());
  const size_t alignment = Alignment();
  const std::vector<std::byte> zeros(alignment);
  std::vector<std::byte> produced;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor& t = tensors_[i];
    std::span<const std::byte> data = t.data;
    if (!t.has_data) {
      if (!produce) return InvalidArgument("tensor '" + t.name + "' was declared but no producer was given");
      produced.clear();
      LOCKSTEP_RETURN_IF_ERROR(produce(i, produced));
      if (produced.size() != t.bytes) {
        return Internal("tensor '" + t.name + "': producer gave " + std::to_string(produced.size()) +
                        " bytes, " + std::to_string(t.bytes) + " expected");
      }
      data = produced;
    }
    write(data);
    write(std::span(zeros).first((alignment - data.size() % alignment) % alignment));
  }
  out.close();
  if (!out) return InvalidArgument("cannot write '" + temporary + "' (disk full?)");
  return Status::Ok();
}

}  // namespace lockstep
