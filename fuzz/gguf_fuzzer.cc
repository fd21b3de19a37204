// Fuzzes the GGUF reader (GgufFile::FromBytes: header, metadata of every type, tensor infos, offsets) and,
// for files it accepts, what is built from them: the model configuration, the tokenizer (then a short
// Encode / Decode) and the model itself (tensor names, shapes and types checked, weights bound and packed).
// Properties (gguf_file.h's contract): any bytes are accepted or refused with a message, never a crash or an
// out-of-bounds read; every tensor of an accepted file lies inside its data section, at an aligned offset,
// with a size that matches its shape; everything built from it is built or refused with a message.
#include <memory>
#include <span>

#include "fuzz/fuzz_support.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  auto opened =
      GgufFile::FromBytes(std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size));
  if (!opened.ok()) {
    fuzz::Require(!opened.status().message().empty(), "a refused file says why");
    return 0;
  }
  std::shared_ptr<const GgufFile> file = std::move(opened).value();
  fuzz::Require(file->tensors().empty() || file->data_offset() <= file->file_size(),
                "the data section of a file with tensors starts inside it");
  fuzz::Require(file->alignment() > 0 && file->data_offset() % file->alignment() == 0,
                "an aligned data section");
  const std::byte* data_start =
      file->tensors().empty() ? nullptr : file->tensors().front().data - file->tensors().front().offset;
  unsigned sum = 0;
  for (const GgufTensorInfo& t : file->tensors()) {
    fuzz::Require(!t.dims.empty() && t.dims.size() <= kGgufMaxDims, "1 to 4 dimensions");
    for (int64_t d : t.dims) fuzz::Require(d > 0, "positive dimensions");
    fuzz::Require(t.offset % file->alignment() == 0, "an aligned tensor offset");
    fuzz::Require(t.data == data_start + t.offset, "tensor data at its offset");
    fuzz::Require(t.offset <= file->file_size() - file->data_offset() &&
                      t.size_bytes <= file->file_size() - file->data_offset() - t.offset,
                  "tensor data inside the file");
    fuzz::Require(t.rows() * t.dims[0] == t.elements(), "rows × row length = elements");
    // Touch the first and last byte: an out-of-bounds pointer is an ASan report here.
    if (t.size_bytes > 0)
      sum += static_cast<unsigned>(t.data[0]) + static_cast<unsigned>(t.data[t.size_bytes - 1]);
  }
  (void)sum;
  (void)file->GetStringOr("general.architecture", "");
  auto tokenizer = Tokenizer::FromGguf(*file);
  if (tokenizer.ok()) {
    auto ids = (*tokenizer)->Encode("Hello, world! <s> 123 \xc3\xa9", true, true);
    if (ids.ok()) {
      for (int32_t id : *ids)
        fuzz::Require(id >= 0 && id < (*tokenizer)->vocab_size(), "ids in the vocabulary");
      (void)(*tokenizer)->Decode(*ids);
    }
  } else {
    fuzz::Require(!tokenizer.status().message().empty(), "a refused vocabulary says why");
  }
  auto config = ModelConfig::FromGguf(*file);
  if (!config.ok()) {
    fuzz::Require(!config.status().message().empty(), "a refused configuration says why");
    return 0;
  }
  auto model = Model::Load(file);
  if (!model.ok()) fuzz::Require(!model.status().message().empty(), "a refused model says why");
  return 0;
}
