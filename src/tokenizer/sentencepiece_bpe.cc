// SentencePiece BPE (tokenizer.ggml.model = "llama"). See tokenizer_model.h.
#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <unordered_map>

#include "tokenizer/tokenizer_model.h"
#include "tokenizer/utf8.h"

namespace lockstep {
namespace {

// Piece types a merge may produce (SentencePiece's "normal" pieces: control, unknown and byte pieces are
// reserved and never formed by merging).
bool Mergeable(TokenType type) {
  return type == TokenType::kNormal || type == TokenType::kUserDefined || type == TokenType::kUnused ||
         type == TokenType::kUndefined;
}

constexpr std::string_view kSpace = "\xE2\x96\x81";  // ▁

// True when every mergeable piece has ▁ only in a leading run ("▁▁the" but no "a▁b"): then no merge can span
// a boundary between a non-▁ character and a following ▁, and the text can be encoded word by word with the
// same result as encoding it whole (merges in different words never interact).
bool WordSplitIsExact(const Vocabulary& vocab) {
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const TokenData& t = vocab.token(id);
    if (!Mergeable(t.type)) continue;
    std::string_view piece = t.piece;
    while (piece.substr(0, kSpace.size()) == kSpace) piece.remove_prefix(kSpace.size());
    if (piece.find(kSpace) != std::string_view::npos) return false;
  }
  return true;
}

class SentencePieceBpe : public TokenizerModel {
 public:
  explicit SentencePieceBpe(const Vocabulary& vocab) : vocab_(vocab), split_words_(WordSplitIsExact(vocab)) {}
  Status EncodeFragment(std::string_view text, std::vector<int32_t>* out) const override;
  bool splits_words() const { return split_words_; }

 private:
  // A symbol is a run text[start, start + len) in a doubly linked list; len == 0 once merged away.
  struct Symbol {
    int prev;
    int next;
    uint32_t start;
    uint32_t len;
    int node;  // merge-tree node, to split an "unused" piece back into its parts
  };
  struct Node {
    int left;  // -1 for a single character
    int right;
  };
  struct Bigram {
    float score;
    int left;
    int right;
    uint32_t size;
  };
  struct BigramOrder {  // highest score first, then leftmost
    bool operator()(const Bigram& a, const Bigram& b) const {
      return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
  };
  struct Session {
    std::string_view text;
    std::vector<Symbol> symbols;
    std::vector<Node> nodes;
    std::vector<std::pair<uint32_t, uint32_t>> node_spans;
    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  };

  Status EncodeChunk(std::string_view text, std::vector<int32_t>* out) const;
  void TryAddBigram(Session& s, int left, int right) const;
  Status Emit(Session& s, int node, std::vector<int32_t>* out) const;
  Status EmitBytes(std::string_view piece, std::vector<int32_t>* out) const;

  const Vocabulary& vocab_;
  const bool split_words_;
};

Status SentencePieceBpe::EncodeFragment(std::string_view text, std::vector<int32_t>* out) const {
  if (!split_words_) return EncodeChunk(text, out);
  // Words start at a ▁ that follows a character other than ▁; repeated words are encoded once.
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> cache;  // word -> [begin, end) in *out
  size_t start = 0;
  while (start < text.size()) {
    size_t end = start;
    bool previous_space = false;
    while (end < text.size()) {
      const bool space = text.compare(end, kSpace.size(), kSpace) == 0;
      if (space && end > start && !previous_space) break;
      previous_space = space;
      end += space ? kSpace.size() : 1;
    }
    const std::string_view word = text.substr(start, end - start);
    if (auto it = cache.find(word); it != cache.end()) {
      const auto [begin, stop] = it->second;
      for (size_t i = begin; i < stop; ++i) {
        const int32_t id = (*out)[i];  // copied first: push_back may reallocate
        out->push_back(id);
      }
    } else {
      const size_t begin = out->size();
      LOCKSTEP_RETURN_IF_ERROR(EncodeChunk(word, out));
      if (cache.size() < 65536) cache.emplace(word, std::make_pair(begin, out->size()));
    }
    start = end;
  }
  return Status::Ok();
}

void SentencePieceBpe::TryAddBigram(Session& s, int left, int right) const {
  if (left < 0 || right < 0) return;
  const Symbol& l = s.symbols[left];
  const Symbol& r = s.symbols[right];
  const std::string_view merged = s.text.substr(l.start, l.len + r.len);
  const int32_t id = vocab_.Find(merged);
  if (id < 0 || !Mergeable(vocab_.token(id).type)) return;
  s.queue.push(Bigram{vocab_.token(id).score, left, right, l.len + r.len});
}

Status SentencePieceBpe::EncodeChunk(std::string_view text, std::vector<int32_t>* out) const {
  if (text.empty()) return Status::Ok();
  if (text.size() > 0x7FFFFFFFu) return InvalidArgument("text fragment too long to tokenize (over 2 GiB)");
  Session s;
  s.text = text;
  s.symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t len =
        std::min(utf8::SequenceLength(static_cast<unsigned char>(text[pos])), text.size() - pos);
    const int index = static_cast<int>(s.symbols.size());
    s.symbols.push_back(Symbol{index - 1, pos + len == text.size() ? -1 : index + 1,
                               static_cast<uint32_t>(pos), static_cast<uint32_t>(len), index});
    s.nodes.push_back(Node{-1, -1});
    s.node_spans.emplace_back(static_cast<uint32_t>(pos), static_cast<uint32_t>(len));
    pos += len;
  }
  for (int i = 1; i < static_cast<int>(s.symbols.size()); ++i) TryAddBigram(s, i - 1, i);

  while (!s.queue.empty()) {
    const Bigram bigram = s.queue.top();
    s.queue.pop();
    Symbol& left = s.symbols[bigram.left];
    Symbol& right = s.symbols[bigram.right];
    // Stale entry: one side was merged since (lengths only grow, so the size check catches it).
    if (left.len == 0 || right.len == 0 || left.len + right.len != bigram.size) continue;
    s.nodes.push_back(Node{left.node, right.node});
    s.node_spans.emplace_back(left.start, left.len + right.len);
    left.node = static_cast<int>(s.nodes.size()) - 1;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) s.symbols[right.next].prev = bigram.left;
    TryAddBigram(s, left.prev, bigram.left);
    TryAddBigram(s, bigram.left, left.next);
  }
  for (int i = 0; i != -1; i = s.symbols[i].next) LOCKSTEP_RETURN_IF_ERROR(Emit(s, s.symbols[i].node, out));
  return Status::Ok();
}

Status SentencePieceBpe::Emit(Session& s, int node, std::vector<int32_t>* out) const {
  const auto [start, len] = s.node_spans[node];
  const std::string_view piece = s.text.substr(start, len);
  const int32_t id = vocab_.Find(piece);
  if (id >= 0) {
    const TokenType type = vocab_.token(id).type;
    if (type != TokenType::kUnused && type != TokenType::kControl && type != TokenType::kUnknown) {
      out->push_back(id);
      return Status::Ok();
    }
  }
  const Node& n = s.nodes[node];
  if (n.left >= 0) {  // an unused piece: emit the two pieces it was merged from
    LOCKSTEP_RETURN_IF_ERROR(Emit(s, n.left, out));
    return Emit(s, n.right, out);
  }
  return EmitBytes(piece, out);
}

Status SentencePieceBpe::EmitBytes(std::string_view piece, std::vector<int32_t>* out) const {
  bool all_bytes = true;
  for (char c : piece) all_bytes = all_bytes && vocab_.ByteToken(static_cast<unsigned char>(c)) >= 0;
  if (all_bytes) {
    for (char c : piece) out->push_back(vocab_.ByteToken(static_cast<unsigned char>(c)));
    return Status::Ok();
  }
  if (vocab_.unk_id() >= 0) {
    out->push_back(vocab_.unk_id());
    return Status::Ok();
  }
  return InvalidArgument(
      fmt::format("the vocabulary cannot represent the character '{}': it has no piece for it, "
                  "no byte tokens and no unknown token",
                  piece));
}

}  // namespace

std::unique_ptr<TokenizerModel> CreateSentencePieceBpe(const Vocabulary& vocab) {
  return std::make_unique<SentencePieceBpe>(vocab);
}

}  // namespace lockstep
