// Classifier: a sequence-classification head over the final hidden state (after the output norm) of a
// prompt's last position — what a reranker scores a (query, document) prompt with.
//
// Two sources, one computation (logits = W · h + b):
//   - the file's head: `cls.output.weight` [n_cls][n_embd] (GGUF dims [n_embd, n_cls]) and an optional
//     `cls.output.bias` [n_cls], as llama.cpp's converter writes Qwen3-Reranker (its lm_head rows of "yes"
//     and "no", in that order) with `<arch>.pooling_type` = 4 (rank) and `classifier.output_labels`; a BERT
//     cross-encoder's has a dense `cls.weight` + `cls.bias` (tanh) before it, applied first;
//   - rows of the output matrix (the lm_head) for chosen tokens, e.g. "yes" and "no" of a plain causal LM
//     (vLLM's classifier_from_token): the logits are then exactly those tokens' next-token logits (the final
//     soft-cap included, Gemma 2), so the score equals sigmoid(logit_yes - logit_no) of a generate pass.
// The weights are dequantized to f32 once at load; Apply sums in double in index order (the result depends on
// the hidden state alone). Value type, immutable once built; safe to share between threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "tensor/matmul.h"

namespace lockstep {

struct Classifier {
  int64_t n_cls = 0;
  int64_t n_embd = 0;
  // BERT's head (llama.cpp's rank pooling for bert): `cls.weight` [n_embd][n_embd] and `cls.bias` [n_embd]
  // first, h <- tanh(dense h + dense_bias), then cls.output. Empty: none.
  std::vector<float> dense, dense_bias;
  std::vector<float> weight;        // [n_cls][n_embd]
  std::vector<float> bias;          // [n_cls], or empty
  float softcap = 0;                // logits l -> cap * tanh(l / cap) (token heads of soft-capped models)
  std::vector<std::string> labels;  // classifier.output_labels (file heads), or the tokens' pieces
  bool from_tokens = false;         // rows of the output matrix, not the file's cls.output

  // The file's head, or an empty Classifier (n_cls 0) when the file has no cls.output.weight. Errors name the
  // tensor: a wrong shape or type. With `cls.weight` (BERT's dense pre-layer) `cls.bias` is required too.
  static Result<Classifier> FromGguf(const GgufFile& file, const ModelConfig& config);
  // Rows `tokens` of `output` ([n_vocab][n_embd], the model's lm_head), in that order. Errors name a token
  // outside the vocabulary or an output type that cannot be dequantized.
  static Result<Classifier> FromOutputRows(const WeightMatrix& output, std::span<const int32_t> tokens,
                                           const ModelConfig& config);

  bool empty() const { return n_cls == 0; }
  // out[c] = softcap(sum_k weight[c][k] * h[k] + bias[c]) with h = hidden, or tanh(dense hidden + dense_bias)
  // when there is a dense layer (sums in double in index order); hidden has n_embd values, out n_cls.
  void Apply(std::span<const float> hidden, std::span<float> out) const;
};

// The relevance score of a head's logits: one logit: sigmoid(l0); several: softmax(l)[0] (llama.cpp's rank
// pooling for Qwen3; for two logits sigmoid(l0 - l1), the "yes" probability of a yes/no head). In [0, 1].
double RankScore(std::span<const float> logits);

}  // namespace lockstep
