// LoraScales: the server's LoRA adapters (loaded with the model: --lora, --lora-scaled) and their global
// scales, as llama.cpp's server keeps them:
//   GET  /lora-adapters  → [{"id": 0, "path": "a.gguf", "scale": 1.0}, ...]
//   POST /lora-adapters  ← [{"id": 0, "scale": 0.5}]  sets the global scales (adapters not listed: 0)
//   a request's "lora": [{"id": 0, "scale": 1.0}]     that request's scales (adapters not listed: 0)
// on /completion, /completions, /infill, /v1/completions and /v1/chat/completions (where llama.cpp reads it).
// A request without the field takes the global scales as they are when it is parsed (every route). Ids are
// indices into the adapters; an id out of range, a non-integer id or a non-finite scale is a 400 naming the
// entry. Thread-safe (one mutex around the global scales).
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_error.h"

namespace lockstep::server {

struct GenerationSpec;
class FieldReader;

class LoraScales {
 public:
  LoraScales(std::vector<std::string> paths, std::vector<float> scales);

  size_t size() const { return paths_.size(); }
  std::vector<float> Global() const;
  nlohmann::json List() const;  // GET /lora-adapters
  // POST /lora-adapters: `body` a JSON array of {id, scale}; returns {"success": true}.
  Parsed<nlohmann::json> Set(const std::string& body);
  // A `lora` array (what `param` names in errors) → one scale per adapter.
  Parsed<std::vector<float>> Read(const nlohmann::json& value, const std::string& param) const;

 private:
  const std::vector<std::string> paths_;
  mutable std::mutex mutex_;
  std::vector<float> scales_;  // guarded by mutex_
};

// Reads the request field "lora" into spec.base.lora_scales (and marks the spec as having its own scales).
// A server without adapters (`lora` null) accepts only an absent or empty field.
void ReadLoraField(FieldReader& f, const LoraScales* lora, GenerationSpec& spec);
// A spec without its own scales takes the global ones.
void UseGlobalLoraScales(const LoraScales* lora, GenerationSpec& spec);

}  // namespace lockstep::server
