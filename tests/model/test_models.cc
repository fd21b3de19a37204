#include "model/test_models.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <filesystem>
#include <map>

#include "gguf/gguf_writer.h"
#include "testing/testdata.h"

namespace lockstep::testing {

namespace {

class ScratchRoot {
 public:
  ScratchRoot() : path_(MakeTempDir("lockstep-model-tests")) {}
  ~ScratchRoot() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::string ScratchDir(const std::string& prefix) {
  static ScratchRoot root;
  static std::atomic<int> counter{0};
  const std::string dir = root.path() + "/" + prefix + "-" + std::to_string(counter++);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string TinyModelPath(const std::string& shape, const std::string& weight_types, uint64_t seed) {
  static std::map<std::string, std::string> cache;
  static const std::string dir = ScratchDir("tiny-models");
  const std::string key = shape + "-" + weight_types + "-" + std::to_string(seed);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  MakeModelOptions options;
  Result<ModelShape> s = FindModelShape(shape);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  options.shape = *s;
  const Status types = SetWeightTypes(weight_types, options);
  EXPECT_TRUE(types.ok()) << types.ToString();
  options.seed = seed;
  const std::string path = dir + "/" + key + ".gguf";
  const Status status = WriteRandomModel(options, path);
  EXPECT_TRUE(status.ok()) << status.ToString();
  cache[key] = path;
  return path;
}

std::string TinyModelPath(const std::string& shape, TensorType type, uint64_t seed) {
  return TinyModelPath(shape, std::string(TensorTypeName(type)), seed);
}

std::string TestParamName(std::string name) {
  for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return name;
}

Result<std::shared_ptr<const GgufFile>> EditedFile(const std::string& path, const FileEdit& edit) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  GgufWriter w;
  for (const auto& [k, v] : file->metadata()) {
    if (!edit.drop_keys.count(k)) w.Set(k, v);
  }
  for (const auto& [k, v] : edit.set_keys) w.Set(k, v);
  for (const GgufTensorInfo& t : file->tensors()) {
    if (edit.drop_tensors.count(t.name)) continue;
    std::vector<int64_t> dims = t.dims;
    if (t.name == edit.reshape_tensor) std::swap(dims[0], dims[1]);
    LOCKSTEP_RETURN_IF_ERROR(w.AddTensor(t.name, t.type, dims, {t.data, t.size_bytes}));
  }
  for (const auto& [from, to] : edit.copy_tensors) {
    const GgufTensorInfo* t = file->FindTensor(from);
    if (t == nullptr) return NotFound("no tensor '" + from + "' to copy");
    LOCKSTEP_RETURN_IF_ERROR(w.AddTensor(to, t->type, t->dims, {t->data, t->size_bytes}));
  }
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> edited,
                            GgufFile::FromBytes(w.ToBytes(), "edited.gguf"));
  return std::shared_ptr<const GgufFile>(std::move(edited));
}

LoadedModel LoadModelOrDie(const std::string& path) {
  LoadedModel m;
  auto file = GgufFile::Open(path);
  if (!file.ok()) ADD_FAILURE() << file.status().ToString();
  m.file = std::move(file).value();
  auto model = Model::Load(m.file);
  if (!model.ok()) ADD_FAILURE() << model.status().ToString();
  m.model = std::move(model).value();
  return m;
}

std::vector<std::vector<float>> RunSequence(Model& model, const std::vector<int32_t>& tokens, int chunk,
                                            KvDtype dtype, ThreadPool& pool,
                                            std::span<const float> lora_scales) {
  const KvLayout layout = model.MakeKvLayout(dtype, 16);
  LocalKv kv(layout, int64_t(tokens.size()));
  const int64_t vocab = model.config().n_vocab;
  std::vector<std::vector<float>> out;
  for (size_t start = 0; start < tokens.size(); start += chunk) {
    const size_t end = std::min(tokens.size(), start + size_t(chunk));
    Batch batch;
    batch.sequences.push_back(kv.view());
    batch.sequences.back().lora_scales = lora_scales;
    for (size_t i = start; i < end; ++i) batch.rows.push_back({tokens[i], int32_t(i), 0, true});
    std::vector<float> logits((end - start) * vocab);
    const Status status = model.Forward(batch, layout, logits, pool);
    EXPECT_TRUE(status.ok()) << status.ToString();
    for (size_t i = 0; i < end - start; ++i) {
      out.emplace_back(logits.begin() + i * vocab, logits.begin() + (i + 1) * vocab);
    }
  }
  return out;
}

}  // namespace lockstep::testing
