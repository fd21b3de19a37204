// Reading an architecture's GGUF keys, for model/architectures.cc and the per-family configuration files
// (model/deepseek2_config.cc): key names, and errors that name the key.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace lockstep {

// "<file architecture>.<suffix>".
std::string Key(const ModelConfig& c, const char* suffix);

// InvalidArgument "<path>: key '<key>' <why>".
Status OutOfRangeKey(const GgufFile& file, const std::string& key, const std::string& why);

// A non-negative integer key, required (fallback < 0: InvalidArgument "key '<key>' is missing") or
// `fallback` when absent, at most `limit` (else OutOfRangeKey "= v is out of range (0..limit)").
Result<int64_t> ReadCount(const GgufFile& file, const std::string& key, int64_t fallback, int64_t limit);

}  // namespace lockstep
