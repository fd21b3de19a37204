// Reading an architecture's GGUF keys, for model/architectures.cc and the per-family configuration files
// (model/deepseek2_config.cc, model/moe_config.cc): key names, errors that name the key, and the keys
// several families share.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

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

// `key` as one integer per layer: an array of n_layer integers, or one integer for all; absent: fallback
// for all (fallback < 0: an error naming the key). Every value must be in min..limit (else OutOfRangeKey
// naming the layer). Gemma 4 and deci write head counts and FFN widths so.
Result<std::vector<int64_t>> PerLayerInts(const GgufFile& file, const std::string& key, int64_t n_layer,
                                          int64_t fallback, int64_t min, int64_t limit);

// The largest entry of `key` read as one integer or an array of them; absent: fallback (< 0: an error).
Result<int64_t> LargestPerLayerInt(const GgufFile& file, const std::string& key, int64_t fallback);

// Unimplemented "<path>: unsupported: <architecture> with <name> (<what>)" for the first of `names` the file
// has (parts of a family lockstep does not run, refused rather than ignored); Ok when it has none.
Status RefuseTensors(const GgufFile& file, const ModelConfig& c, std::initializer_list<const char*> names,
                     const char* what);

// ALiBi (bloom, mpt, jais; refact, Baichuan-13B): c.max_alibi_bias from <arch>.attention.max_alibi_bias,
// or `fallback` when absent (fallback <= 0: required, an error naming the key), in (0, 64]; no layer
// rotates.
Status ReadAlibi(const GgufFile& file, ModelConfig& c, double fallback);

// The experts' counts every family with experts states: c.n_expert (expert_count, at most kMaxExperts),
// c.n_expert_used (expert_used_count, at most n_expert) and c.n_ff_expert (expert_feed_forward_length);
// InvalidArgument naming the architecture when one is missing or 0.
Status ReadExpertCounts(const GgufFile& file, ModelConfig& c);

// Files whose last <arch>.nextn_predict_layers blocks are multi-token-prediction layers (qwen35, glm4moe,
// bailingmoe2): n_layer (and c.layers) exclude them, so they are not run; OutOfRangeKey when none would be
// left.
Status SkipNextnLayers(const GgufFile& file, ModelConfig& c);

}  // namespace lockstep
