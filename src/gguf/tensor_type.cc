#include "gguf/tensor_type.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace lockstep {
namespace {

struct TypeEntry {
  uint32_t raw;
  TensorTypeTraits traits;
};

constexpr std::array<TypeEntry, 32> kTypes = {{
    {0, {"f32", 1, 4}},         {1, {"f16", 1, 2}},         {2, {"q4_0", 32, 18}},
    {3, {"q4_1", 32, 20}},      {6, {"q5_0", 32, 22}},      {7, {"q5_1", 32, 24}},
    {8, {"q8_0", 32, 34}},      {9, {"q8_1", 32, 36}},      {10, {"q2_K", 256, 84}},
    {11, {"q3_K", 256, 110}},   {12, {"q4_K", 256, 144}},   {13, {"q5_K", 256, 176}},
    {14, {"q6_K", 256, 210}},   {15, {"q8_K", 256, 292}},   {16, {"iq2_xxs", 256, 66}},
    {17, {"iq2_xs", 256, 74}},  {18, {"iq3_xxs", 256, 98}}, {19, {"iq1_s", 256, 50}},
    {20, {"iq4_nl", 32, 18}},   {21, {"iq3_s", 256, 110}},  {22, {"iq2_s", 256, 82}},
    {23, {"iq4_xs", 256, 136}}, {24, {"i8", 1, 1}},         {25, {"i16", 1, 2}},
    {26, {"i32", 1, 4}},        {27, {"i64", 1, 8}},        {28, {"f64", 1, 8}},
    {29, {"iq1_m", 256, 56}},   {30, {"bf16", 1, 2}},       {34, {"tq1_0", 256, 54}},
    {35, {"tq2_0", 256, 66}},   {39, {"mxfp4", 32, 17}},
}};

}  // namespace

std::optional<TensorTypeTraits> FindTensorTypeTraits(uint32_t raw_type) {
  for (const TypeEntry& entry : kTypes) {
    if (entry.raw == raw_type) return entry.traits;
  }
  return std::nullopt;
}

TensorTypeTraits GetTensorTypeTraits(TensorType type) {
  std::optional<TensorTypeTraits> traits = FindTensorTypeTraits(static_cast<uint32_t>(type));
  LOCKSTEP_CHECK(traits.has_value());
  return *traits;
}

std::string_view TensorTypeName(TensorType type) { return GetTensorTypeTraits(type).name; }

Result<TensorType> ParseTensorType(std::string_view name) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
  };
  const std::string wanted = lower(name);
  for (const TypeEntry& entry : kTypes) {
    if (lower(entry.traits.name) == wanted) return static_cast<TensorType>(entry.raw);
  }
  return InvalidArgument("unknown tensor type '" + std::string(name) + "'");
}

size_t RowBytes(TensorType type, int64_t elements) {
  const TensorTypeTraits traits = GetTensorTypeTraits(type);
  LOCKSTEP_CHECK(elements % traits.block_elements == 0);
  return static_cast<size_t>(elements / traits.block_elements * traits.block_bytes);
}

}  // namespace lockstep
