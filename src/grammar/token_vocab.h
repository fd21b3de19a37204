// TokenVocab: a vocabulary seen as byte strings, prepared for token masks. Each token that can appear in
// generated text is kept with the exact bytes the engine's detokenizer adds for it (normal and byte tokens;
// user-defined tokens too where they do not change the next token's text, i.e. without SentencePiece's
// add_space_prefix). Control, unknown, unused and empty tokens are never allowed by a grammar, except the
// control tokens a vocabulary view is built to keep (a request's preserved tool-call and reasoning markers,
// whose text the detokenizer then gives, under the same add_space_prefix condition); the end-of-generation
// tokens are listed apart (a mask allows them when the grammar accepts).
//
// The text tokens are sorted by their bytes and laid out as a byte trie in preorder: node i has one byte,
// its depth (1 for the root's children), the tokens whose bytes end exactly here, and the index just past
// its subtree, so a walk visits nodes in order and skips a subtree by jumping to subtree_end.
// Immutable after construction; safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep {
class Tokenizer;
}

namespace lockstep::grammar {

class TokenVocab {
 public:
  struct TrieNode {
    uint8_t byte = 0;
    uint16_t depth = 0;
    uint32_t subtree_end = 0;
    uint32_t tokens_begin = 0;  // range in sorted order
    uint32_t tokens_end = 0;
  };

  // `kept_control`: control tokens that count as text (their pieces), as Request::preserved_tokens keeps
  // them.
  static std::shared_ptr<const TokenVocab> FromTokenizer(const Tokenizer& tokenizer,
                                                         std::span<const int32_t> kept_control = {});
  // For tests: token i has bytes pieces[i] ("" = never allowed); `eog` are the end-of-generation ids.
  static std::shared_ptr<const TokenVocab> FromPieces(std::vector<std::string> pieces,
                                                      std::vector<int32_t> eog);

  int32_t size() const { return int32_t(bytes_.size()); }  // mask width in tokens
  size_t mask_words() const { return (bytes_.size() + 63) / 64; }
  std::string_view bytes(int32_t id) const { return bytes_[id]; }
  // Text tokens in byte order, and the bytes of the i-th of them.
  std::span<const int32_t> sorted() const { return sorted_; }
  std::string_view sorted_bytes(uint32_t i) const { return bytes_[sorted_[i]]; }
  const std::vector<TrieNode>& trie() const { return trie_; }
  const std::vector<int32_t>& eog() const { return eog_; }

 private:
  TokenVocab(std::vector<std::string> bytes, std::vector<int32_t> eog);

  std::vector<std::string> bytes_;  // per token id; "" for tokens that are never text
  std::vector<int32_t> sorted_;
  std::vector<TrieNode> trie_;
  std::vector<int32_t> eog_;
};

}  // namespace lockstep::grammar
