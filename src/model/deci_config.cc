#include "model/deci_config.h"

#include <string>
#include <vector>

#include "model/architecture_keys.h"

namespace lockstep {

Status ApplyDeci(const GgufFile& file, ModelConfig& c) {
  const std::string heads_key = Key(c, "attention.head_count");
  const std::string kv_key = Key(c, "attention.head_count_kv");
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<int64_t> heads,
                            PerLayerInts(file, heads_key, c.n_layer, -1, 0, c.n_head));
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<int64_t> kv_heads,
                            PerLayerInts(file, kv_key, c.n_layer, c.n_head, 0, c.n_head));
  LOCKSTEP_ASSIGN_OR_RETURN(c.layer_n_ff,
                            PerLayerInts(file, Key(c, "feed_forward_length"), c.n_layer, -1, 0, 1 << 20));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    LayerAttention& layer = c.layers[size_t(l)];
    const std::string at = " (layer " + std::to_string(l) + ")";
    const int64_t n_head = heads[size_t(l)], n_head_kv = kv_heads[size_t(l)];
    if (n_head == 0) {
      if (n_head_kv != 0) return OutOfRangeKey(file, kv_key, "must be 0 where head_count is 0" + at);
      layer.no_attention = true;
    } else if (n_head != c.n_head) {
      return Unimplemented(file.path() + ": " + heads_key + " = " + std::to_string(n_head) + at +
                           ": deci layers with attention must all have the same head count (" +
                           std::to_string(c.n_head) + ")");
    } else if (n_head_kv == 0) {
      layer.linear_attention = true;
    } else if (n_head % n_head_kv != 0) {
      return OutOfRangeKey(file, kv_key,
                           "= " + std::to_string(n_head_kv) + at + " does not divide head_count");
    } else {
      layer.n_head_kv = n_head_kv;
    }
  }
  return Status::Ok();
}

}  // namespace lockstep
