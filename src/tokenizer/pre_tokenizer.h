// Pre-tokenizers for byte-level BPE: tokenizer.ggml.pre names a list of regexes (the ones the original
// Hugging Face tokenizers use, as llama.cpp maps them). Splitting applies the regexes in order: each one
// splits every current piece into its matches and the text between them (both kept), so the pieces always
// cover the whole text. Regexes run with PCRE2 in UTF + UCP mode (\p{L}, \s ... are Unicode-aware),
// JIT-compiled when available. A compiled PreTokenizer is immutable and safe to share; Split() uses per-call
// scratch.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace lockstep {

struct PreTokenizerSpec {
  std::string name;                  // canonical name (e.g. "llama3" for "llama-bpe")
  std::vector<std::string> regexes;  // applied in order
  bool ignore_merges = false;        // a whole word found in the vocabulary is one token (Llama 3, Tekken)
  bool add_bos_default = false;      // add_bos_token when the file does not say
};

// The spec for a tokenizer.ggml.pre value ("" or absent means "default"); Unimplemented for unknown names.
Result<PreTokenizerSpec> LookupPreTokenizer(std::string_view pre_name);

class PreTokenizer {
 public:
  // Compiles the spec's regexes; InvalidArgument naming the regex if PCRE2 rejects one.
  static Result<std::unique_ptr<PreTokenizer>> Create(const PreTokenizerSpec& spec);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Splits valid UTF-8 `text` into words (views into `text`, in order, non-empty, covering all of it).
  Status Split(std::string_view text, std::vector<std::string_view>* words) const;
  const PreTokenizerSpec& spec() const { return spec_; }

 private:
  struct Compiled;
  explicit PreTokenizer(PreTokenizerSpec spec);
  PreTokenizerSpec spec_;
  std::vector<std::unique_ptr<Compiled>> regexes_;
};

}  // namespace lockstep
