#include "model/architecture_keys.h"

#include <algorithm>
#include <optional>

namespace lockstep {

std::string Key(const ModelConfig& c, const char* suffix) { return c.file_architecture + "." + suffix; }

Status OutOfRangeKey(const GgufFile& file, const std::string& key, const std::string& why) {
  return InvalidArgument(file.path() + ": key '" + key + "' " + why);
}

Result<int64_t> ReadCount(const GgufFile& file, const std::string& key, int64_t fallback, int64_t limit) {
  if (fallback < 0 && !file.Has(key)) return InvalidArgument(file.path() + ": key '" + key + "' is missing");
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t value, file.GetIntOr(key, fallback));
  if (value < 0 || value > limit) {
    return OutOfRangeKey(
        file, key, "= " + std::to_string(value) + " is out of range (0.." + std::to_string(limit) + ")");
  }
  return value;
}

Status RefuseTensors(const GgufFile& file, const ModelConfig& c, std::initializer_list<const char*> names,
                     const char* what) {
  for (const char* name : names) {
    if (file.FindTensor(name) != nullptr) {
      return Unimplemented(file.path() + ": unsupported: " + c.architecture + " with " + name + " (" + what +
                           ")");
    }
  }
  return Status::Ok();
}

Status ReadAlibi(const GgufFile& file, ModelConfig& c, double fallback) {
  const std::string key = Key(c, "attention.max_alibi_bias");
  double bias = fallback;
  if (fallback <= 0 || file.Has(key)) {
    LOCKSTEP_ASSIGN_OR_RETURN(bias, file.GetFloat(key));
  }
  if (!(bias > 0 && bias <= 64)) return OutOfRangeKey(file, key, "must be in (0, 64]");
  c.max_alibi_bias = float(bias);
  for (LayerAttention& layer : c.layers) layer.rope = false;
  return Status::Ok();
}

Status ReadExpertCounts(const GgufFile& file, ModelConfig& c) {
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_expert, ReadCount(file, Key(c, "expert_count"), -1, kMaxExperts));
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_expert_used, ReadCount(file, Key(c, "expert_used_count"), -1, c.n_expert));
  LOCKSTEP_ASSIGN_OR_RETURN(c.n_ff_expert,
                            ReadCount(file, Key(c, "expert_feed_forward_length"), -1, 1 << 20));
  if (c.n_expert < 1 || c.n_expert_used < 1 || c.n_ff_expert < 1) {
    return InvalidArgument(file.path() + ": " + c.architecture +
                           " needs expert_count, expert_used_count and expert_feed_forward_length of at "
                           "least 1");
  }
  return Status::Ok();
}

Status SkipNextnLayers(const GgufFile& file, ModelConfig& c) {
  const std::string key = Key(c, "nextn_predict_layers");
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t mtp, file.GetIntOr(key, 0));
  if (mtp < 0 || mtp >= c.n_layer) return OutOfRangeKey(file, key, "leaves no layer to run");
  c.n_layer -= mtp;
  c.layers.resize(size_t(c.n_layer));
  return Status::Ok();
}

Result<std::vector<int64_t>> PerLayerInts(const GgufFile& file, const std::string& key, int64_t n_layer,
                                          int64_t fallback, int64_t min, int64_t limit) {
  const GgufValue* value = file.Find(key);
  std::vector<int64_t> out(size_t(n_layer), fallback);
  if (value == nullptr) {
    if (fallback < 0) return OutOfRangeKey(file, key, "is missing");
  } else if (const GgufValue::Array* array = value->AsArray()) {
    if (int64_t(array->elements.size()) != n_layer) {
      return OutOfRangeKey(file, key,
                           "has " + std::to_string(array->elements.size()) +
                               " entries, expected one per layer (" + std::to_string(n_layer) + ")");
    }
    for (size_t l = 0; l < out.size(); ++l) {
      std::optional<int64_t> v = array->elements[l].AsInt();
      if (!v) return OutOfRangeKey(file, key, "must hold integers");
      out[l] = *v;
    }
  } else if (std::optional<int64_t> v = value->AsInt()) {
    std::fill(out.begin(), out.end(), *v);
  } else {
    return OutOfRangeKey(file, key, "must be an integer or an array of them");
  }
  for (size_t l = 0; l < out.size(); ++l) {
    if (out[l] < min || out[l] > limit) {
      return OutOfRangeKey(file, key,
                           "= " + std::to_string(out[l]) + " (layer " + std::to_string(l) +
                               ") is out of range (" + std::to_string(min) + ".." + std::to_string(limit) +
                               ")");
    }
  }
  return out;
}

Result<int64_t> LargestPerLayerInt(const GgufFile& file, const std::string& key, int64_t fallback) {
  const GgufValue* value = file.Find(key);
  if (value == nullptr || value->AsArray() == nullptr) {
    if (fallback < 0) return file.GetInt(key);
    return file.GetIntOr(key, fallback);
  }
  int64_t largest = 0;
  for (const GgufValue& v : value->AsArray()->elements) {
    if (!v.AsInt()) return OutOfRangeKey(file, key, "must hold integers");
    largest = std::max(largest, *v.AsInt());
  }
  return largest;
}

}  // namespace lockstep
