// The shape tables' shared parts, for model/model_shapes.cc (dense and real shapes, FindModelShape),
// model/model_shapes_layernorm.cc and model/model_shapes_moe.cc (the mixtures of experts). Not for other
// files.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "model/model_builder.h"

namespace lockstep {

// A shape: its name and what it sets on top of the defaults (ModelShape's member initialisers; `s.name` is
// already the shape's name).
struct ShapeEntry {
  std::string_view name;
  void (*set)(ModelShape& s);
};

// The LayerNorm families (model_shapes_layernorm.cc), then the mixtures of experts (model_shapes_moe.cc), in
// the order `make-model --help` lists them (after model_shapes.cc's).
std::span<const ShapeEntry> LayerNormShapes();
std::span<const ShapeEntry> MixtureOfExpertsShapes();

// A tiny shape's defaults: random norms, small weights, an ASCII vocabulary.
inline ModelShape Tiny(const std::string& name, const std::string& architecture) {
  ModelShape s;
  s.name = name;
  s.architecture = architecture;
  s.random_norms = true;
  s.weight_std = 0.05f;
  s.ascii_vocabulary = true;
  return s;
}

// Sets the widths: heads of head_dim, n_embd (may differ from n_head * head_dim), n_ff.
inline void Widths(ModelShape& s, int64_t n_embd, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                   int64_t n_ff) {
  s.n_embd = n_embd;
  s.n_head = n_head;
  s.n_head_kv = n_head_kv;
  s.head_dim = head_dim;
  s.n_ff = n_ff;
}

}  // namespace lockstep
