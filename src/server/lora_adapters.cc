#include "server/lora_adapters.h"

#include <cmath>

#include "server/generation.h"
#include "server/request_fields.h"

namespace lockstep::server {

LoraScales::LoraScales(std::vector<std::string> paths, std::vector<float> scales)
    : paths_(std::move(paths)), scales_(std::move(scales)) {
  scales_.resize(paths_.size(), 0.0f);
}

std::vector<float> LoraScales::Global() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return scales_;
}

nlohmann::json LoraScales::List() const {
  const std::vector<float> scales = Global();
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < paths_.size(); ++i) {
    list.push_back({{"id", i}, {"path", paths_[i]}, {"scale", scales[i]}});
  }
  return list;
}

Parsed<std::vector<float>> LoraScales::Read(const nlohmann::json& value, const std::string& param) const {
  if (!value.is_array()) {
    return ApiError::Field(param, param + " must be an array of objects with 'id' and 'scale' fields, got " +
                                      DescribeJson(value));
  }
  std::vector<float> scales(paths_.size(), 0.0f);
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string entry = param + "[" + std::to_string(i) + "]";
    const nlohmann::json& e = value[i];
    const nlohmann::json* id = e.is_object() && e.contains("id") ? &e["id"] : nullptr;
    if (id == nullptr || !id->is_number_integer() || id->get<int64_t>() < 0 ||
        id->get<int64_t>() >= int64_t(paths_.size())) {
      return ApiError::Field(entry + ".id", entry + ".id: invalid adapter id (" +
                                                std::to_string(paths_.size()) +
                                                " adapters are loaded: ids 0.." +
                                                std::to_string(int64_t(paths_.size()) - 1) + ")");
    }
    const nlohmann::json* scale = e.contains("scale") ? &e["scale"] : nullptr;
    if (scale != nullptr && (!scale->is_number() || !std::isfinite(scale->get<double>()) ||
                             std::fabs(scale->get<double>()) > 1e6)) {
      return ApiError::Field(entry + ".scale", entry + ".scale must be a number between -1e6 and 1e6, got " +
                                                   DescribeJson(*scale));
    }
    scales[size_t(id->get<int64_t>())] = scale != nullptr ? float(scale->get<double>()) : 0.0f;
  }
  return scales;
}

Parsed<nlohmann::json> LoraScales::Set(const std::string& body) {
  if (NestsDeeperThan(body, kMaxJsonDepth))
    return ApiError{InvalidArgument("request body nests too deep"), ""};
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return ApiError{InvalidArgument("request body is not valid JSON"), "", true};
  if (!j.is_array()) return ApiError{InvalidArgument("request body must be an array"), ""};
  auto scales = Read(j, "body");
  if (!scales.ok()) return scales.error;
  std::lock_guard<std::mutex> lock(mutex_);
  scales_ = std::move(*scales.value);
  return nlohmann::json{{"success", true}};
}

void ReadLoraField(FieldReader& f, const LoraScales* lora, GenerationSpec& spec) {
  const nlohmann::json* value = f.Raw("lora");
  if (value == nullptr) return;
  if (lora == nullptr) {
    if (!value->is_array() || !value->empty())
      f.Fail("lora", "no LoRA adapters are loaded (serve --lora FILE)");
    return;
  }
  auto scales = lora->Read(*value, f.Param("lora"));
  if (!scales.ok()) return f.Fail("lora", scales.error.status.message());
  spec.base.lora_scales = std::move(*scales.value);
  spec.lora_given = true;
}

void UseGlobalLoraScales(const LoraScales* lora, GenerationSpec& spec) {
  if (lora != nullptr && !spec.lora_given) spec.base.lora_scales = lora->Global();
}

}  // namespace lockstep::server
