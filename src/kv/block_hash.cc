#include "kv/block_hash.h"

#include <cstring>
#include <functional>
#include <string_view>

namespace lockstep {
namespace {

BlockHash HashWords(std::span<const uint64_t> head, std::span<const int32_t> tokens) {
  // One contiguous buffer (std::hash has no incremental form): the header words, then the token ids.
  std::vector<char> bytes(head.size_bytes() + tokens.size_bytes());
  std::memcpy(bytes.data(), head.data(), head.size_bytes());
  if (!tokens.empty()) std::memcpy(bytes.data() + head.size_bytes(), tokens.data(), tokens.size_bytes());
  return std::hash<std::string_view>{}(std::string_view(bytes.data(), bytes.size()));
}

}  // namespace

BlockHash RootBlockHash(const KvLayout& layout, uint64_t salt) {
  const uint64_t words[] = {
      0x6c6f636b73746570ull,       // "lockstep": a version tag for the scheme
      uint64_t(layout.dtype) + 1,  // what the blocks store (tensor/kv_storage.h)
      uint64_t(layout.block_tokens), uint64_t(layout.n_layer), uint64_t(layout.n_kv_head),
      // values as wide as keys: the word of the layouts before value_dim
      uint64_t(layout.head_dim) + (uint64_t(uint32_t(layout.ValueDim() - layout.head_dim)) << 32), salt};
  if (layout.layer_shapes.empty()) return HashWords(words, {});
  std::vector<int32_t> shapes;  // mixed layouts (Gemma 4): every layer's shape too
  for (const KvLayerShape& s : layout.layer_shapes) {
    shapes.push_back(s.n_kv_head);
    shapes.push_back(s.head_dim);
  }
  return HashWords(words, shapes);
}

BlockHash SaltedRoot(BlockHash root, uint64_t salt) {
  if (salt == 0) return root;
  const uint64_t words[] = {root, 0x6c6f7261ull /* "lora" */, salt};
  return HashWords(words, {});
}

uint64_t LoraCacheSalt(std::span<const float> scales) {
  size_t n = scales.size();
  while (n > 0 && scales[n - 1] == 0) --n;
  if (n == 0) return 0;
  std::vector<uint64_t> words(n + 1, 0);
  words[0] = n;
  for (size_t i = 0; i < n; ++i) {
    const float x = scales[i] == 0 ? 0.0f : scales[i];  // -0 and 0 compute the same KV
    uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof(bits));
    words[i + 1] = bits;
  }
  const BlockHash h = HashWords(words, {});
  return h == 0 ? 1 : h;
}

BlockHash NextBlockHash(BlockHash parent, std::span<const int32_t> tokens) {
  const uint64_t head[] = {parent, uint64_t(tokens.size())};
  return HashWords(head, tokens);
}

void ExtendBlockHashes(BlockHash root, std::span<const int32_t> tokens, int32_t block_tokens,
                       std::vector<BlockHash>& hashes) {
  const size_t full = tokens.size() / size_t(block_tokens);
  while (hashes.size() < full) {
    const BlockHash parent = hashes.empty() ? root : hashes.back();
    hashes.push_back(
        NextBlockHash(parent, tokens.subspan(hashes.size() * size_t(block_tokens), size_t(block_tokens))));
  }
}

}  // namespace lockstep
