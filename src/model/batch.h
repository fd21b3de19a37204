// The forward pass's input: a ragged batch of rows, each (token, position, sequence), plus where each
// sequence's KV lives. The KV of one sequence is a list of fixed-size blocks (a block table resolved to
// addresses); the model reads and writes KV only through the blocks of the row's own sequence, so a row's
// cost grows with its own context alone. The kv/ layer allocates blocks of KvLayout::BlockBytes(); tests and
// the single-sequence CLI may allocate them directly.
//
// One block, for all layers (each head's region stored as tensor/kv_storage.h says for the KvDtype):
//   [layer 0: K [kv_head 0][head_dim][block_tokens] .. [kv_head H-1]..., V [kv_head
//   0..H-1][block_tokens][value_dim]] [layer 1: ...] ... [layer L-1]
// Values may be narrower or wider than keys (value_dim: DeepSeek's multi-head latent attention stores keys of
// qk_nope + qk_rope dims and values of v_head_dim); by default they are as wide. Each layer may have its own
// heads and head size (KvLayout::layer_shapes; the layers are those that store K/V, Gemma 4's shared-KV
// layers reading an earlier one's).
// Keys are stored dim-major (a head's dim d of all slots together), so attention widens them straight into
// its transposed layout (tensor/attention_kernels.h); values slot-major. Position p of a sequence lives in
// blocks[p / block_tokens] at slot p % block_tokens.
//
// A model with recurrent layers (qwen35's Gated DeltaNet, model/delta_net.h) keeps, besides its KV, one
// fixed-size recurrent state per sequence (KvLayout::recurrent_state_floats floats, SequenceKv::
// recurrent_state): the summary of every position the sequence has computed, advanced in place by each of
// its rows in position order. The kv/ layer's RecurrentStatePool hands out one per running sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tensor/kv_storage.h"

namespace lockstep {

// One layer's KV shape in a layout whose layers differ (KvLayout::layer_shapes); its values are as wide as
// its keys.
struct KvLayerShape {
  int32_t n_kv_head = 0;
  int32_t head_dim = 0;
  bool operator==(const KvLayerShape&) const = default;
};

struct KvLayout {
  int32_t n_layer = 0;
  int32_t n_kv_head = 0;  // mixed layouts: the most of any layer
  int32_t head_dim = 0;   // of a key (and of a query); mixed layouts: the largest of any layer
  int32_t value_dim =
      0;  // of a value; 0: head_dim (ValueDim()). Uniform layouts only (not with layer_shapes)
  int32_t block_tokens = 16;
  KvDtype dtype = KvDtype::kF16;
  // Empty: every layer has n_kv_head heads of head_dim. Else n_layer shapes, layer l's region of a block
  // sized by its own (Gemma 4: local layers of 256-dim heads, global ones of 512), stored one after another.
  std::vector<KvLayerShape> layer_shapes;
  // Byte offset of layer 0 within a block: 0, or where the one layer of a view (Layer()) lives.
  size_t base = 0;
  // Floats of one sequence's recurrent state (ModelConfig::RecurrentStateFloats); 0: the model has none.
  int64_t recurrent_state_floats = 0;

  int32_t ValueDim() const { return value_dim > 0 ? value_dim : head_dim; }
  // Bytes of one head's K (HeadBytes) or V (ValueHeadBytes) for all slots of a block (a uniform layout or a
  // view).
  size_t HeadBytes() const { return KvHeadBytes(dtype, block_tokens, head_dim); }
  size_t ValueHeadBytes() const { return KvHeadBytes(dtype, block_tokens, ValueDim()); }
  size_t LayerBytes() const { return size_t(n_kv_head) * (HeadBytes() + ValueHeadBytes()); }
  size_t BlockBytes() const { return LayerStart(n_layer) - base; }
  // Byte offset, within a block, of layer `layer`'s region (`layer` <= n_layer).
  size_t LayerStart(int32_t layer) const {
    if (layer_shapes.empty()) return base + size_t(layer) * LayerBytes();
    size_t at = base;
    for (int32_t l = 0; l < layer; ++l) {
      const KvLayerShape& s = layer_shapes[size_t(l)];
      at += 2 * size_t(s.n_kv_head) * KvHeadBytes(dtype, block_tokens, s.head_dim);
    }
    return at;
  }
  // Layer `layer` alone, as a uniform one-layer layout at its offset: what attention reads and writes.
  KvLayout Layer(int32_t layer) const {
    KvLayout view;
    view.n_layer = 1;
    view.n_kv_head = n_kv_head;
    view.head_dim = head_dim;
    view.value_dim = value_dim;
    view.block_tokens = block_tokens;
    view.dtype = dtype;
    view.base = LayerStart(layer);
    if (!layer_shapes.empty()) {
      view.n_kv_head = layer_shapes[size_t(layer)].n_kv_head;
      view.head_dim = layer_shapes[size_t(layer)].head_dim;
      view.value_dim = 0;
    }
    return view;
  }
  // Byte offset, within a block, of K (or V) of `kv_head` in `layer`, slot 0 (a uniform layout or a view).
  size_t KeyOffset(int32_t layer, int32_t kv_head) const {
    return LayerStart(layer) + size_t(kv_head) * HeadBytes();
  }
  size_t ValueOffset(int32_t layer, int32_t kv_head) const {
    return LayerStart(layer) + size_t(n_kv_head) * HeadBytes() + size_t(kv_head) * ValueHeadBytes();
  }
};

// Where one sequence's KV lives: its blocks in table order.
struct SequenceKv {
  const std::vector<std::byte*>* blocks = nullptr;  // borrowed; blocks->size() * block_tokens positions
  // The user scale of each LoRA adapter for this sequence's rows (model/lora_adapter.h), by adapter index;
  // missing entries are 0. Borrowed; empty: no adapter.
  std::span<const float> lora_scales;
  // A model with recurrent layers: this sequence's recurrent state (KvLayout::recurrent_state_floats floats,
  // borrowed), holding positions [0, p) where p is the sequence's first row in the batch — or anything when
  // p is 0 (Forward starts it from zeros). Forward advances it through the sequence's rows. Null otherwise.
  float* recurrent_state = nullptr;
};

struct BatchRow {
  int32_t token = 0;
  int32_t position = 0;  // position in its sequence (RoPE position and KV slot)
  int32_t sequence = 0;  // index into Batch::sequences
  bool wants_logits = false;
  // The row's final hidden state (after the output norm, before the output matrix: what llama.cpp's
  // embeddings pool) is copied out (ForwardOutputs::embeddings).
  bool wants_embedding = false;
};

// Contract for Model::Forward:
// - the rows of one sequence are consecutive positions in increasing order (not necessarily adjacent rows);
// - every position below a sequence's first row is already in its KV;
// - its blocks cover every position in the batch;
// - with recurrent layers: its rows are adjacent positions (no gap) and its recurrent state holds the
//   positions below its first row (SequenceKv::recurrent_state).
// Forward writes each row's K and V at its position, then each row attends to positions [0, position].
struct Batch {
  std::vector<BatchRow> rows;
  std::vector<SequenceKv> sequences;

  int64_t LogitRows() const {
    int64_t n = 0;
    for (const BatchRow& row : rows) n += row.wants_logits ? 1 : 0;
    return n;
  }
  int64_t EmbeddingRows() const {
    int64_t n = 0;
    for (const BatchRow& row : rows) n += row.wants_embedding ? 1 : 0;
    return n;
  }
};

}  // namespace lockstep
