#include "grammar/gemma4_value.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace lockstep::grammar {

std::string Gemma4KeyOrder(const std::string& key) {
  std::string lower = key;
  for (char& c : lower) c = char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return lower;
}

std::string Gemma4KeyText(const std::string& key) {
  bool bare = !key.empty() && !(key[0] >= '0' && key[0] <= '9');
  for (char c : key) {
    bare = bare && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  }
  return bare ? key : std::string(kGemma4Quote) + key + std::string(kGemma4Quote);
}

std::string Gemma4ValueText(const nlohmann::ordered_json& value) {
  if (value.is_string())
    return std::string(kGemma4Quote) + value.get<std::string>() + std::string(kGemma4Quote);
  if (value.is_null()) return "None";
  if (value.is_object()) {
    std::vector<std::pair<std::string, const nlohmann::ordered_json*>> items;
    for (const auto& [k, v] : value.items()) items.push_back({k, &v});
    std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
      return Gemma4KeyOrder(a.first) < Gemma4KeyOrder(b.first);
    });
    std::string out = "{";
    for (size_t i = 0; i < items.size(); ++i) {
      out += (i ? "," : "") + Gemma4KeyText(items[i].first) + ":" + Gemma4ValueText(*items[i].second);
    }
    return out + "}";
  }
  if (value.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < value.size(); ++i) out += (i ? "," : "") + Gemma4ValueText(value[i]);
    return out + "]";
  }
  return value.dump();  // numbers, booleans
}

}  // namespace lockstep::grammar
