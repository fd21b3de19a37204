#include "grammar/token_vocab.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace lockstep::grammar {

std::shared_ptr<const TokenVocab> TokenVocab::FromTokenizer(const Tokenizer& tokenizer,
                                                            std::span<const int32_t> kept_control) {
  const Vocabulary& vocab = tokenizer.vocabulary();
  std::vector<std::string> bytes(size_t(vocab.size()));
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (vocab.IsEndOfGeneration(id)) eog.push_back(id);
    const TokenType type = vocab.token(id).type;
    const bool text = type == TokenType::kNormal || type == TokenType::kByte ||
                      type == TokenType::kUndefined ||
                      (type == TokenType::kUserDefined && !vocab.add_space_prefix());
    if (text && !vocab.IsEndOfGeneration(id)) bytes[id] = vocab.decoded(id);
  }
  for (int32_t id : kept_control) {
    if (vocab.InRange(id) && vocab.token(id).type == TokenType::kControl && !vocab.add_space_prefix() &&
        !vocab.IsEndOfGeneration(id)) {
      bytes[id] = vocab.decoded(id);
    }
  }
  return std::shared_ptr<const TokenVocab>(new TokenVocab(std::move(bytes), std::move(eog)));
}

std::shared_ptr<const TokenVocab> TokenVocab::FromPieces(std::vector<std::string> pieces,
                                                         std::vector<int32_t> eog) {
  return std::shared_ptr<const TokenVocab>(new TokenVocab(std::move(pieces), std::move(eog)));
}

TokenVocab::TokenVocab(std::vector<std::string> bytes, std::vector<int32_t> eog)
    : bytes_(std::move(bytes)), eog_(std::move(eog)) {
  for (int32_t id = 0; id < int32_t(bytes_.size()); ++id) {
    if (!bytes_[id].empty()) sorted_.push_back(id);
  }
  std::sort(sorted_.begin(), sorted_.end(),
            [&](int32_t a, int32_t b) { return bytes_[a] != bytes_[b] ? bytes_[a] < bytes_[b] : a < b; });
  // Preorder trie: each token adds nodes for its bytes past the common prefix with the previous token.
  std::vector<uint32_t> path;  // node index per depth - 1
  std::string_view previous;
  for (uint32_t i = 0; i < sorted_.size(); ++i) {
    const std::string_view b = bytes_[sorted_[i]];
    size_t common = 0;
    while (common < previous.size() && common < b.size() && previous[common] == b[common]) ++common;
    for (size_t d = common; d < path.size(); ++d) trie_[path[d]].subtree_end = uint32_t(trie_.size());
    path.resize(common);
    for (size_t d = common; d < b.size(); ++d) {
      path.push_back(uint32_t(trie_.size()));
      trie_.push_back({uint8_t(b[d]), uint16_t(d + 1), 0, i, i});
    }
    TrieNode& end = trie_[path.back()];
    if (end.tokens_end == end.tokens_begin) end.tokens_begin = i;
    end.tokens_end = i + 1;
    previous = b;
  }
  for (uint32_t n : path) trie_[n].subtree_end = uint32_t(trie_.size());
}

}  // namespace lockstep::grammar
