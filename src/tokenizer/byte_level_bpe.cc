// Byte-level BPE (tokenizer.ggml.model = "gpt2"). See tokenizer_model.h.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <unordered_map>

#include "tokenizer/byte_level.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer_model.h"

namespace lockstep {
namespace {

class ByteLevelBpe : public TokenizerModel {
 public:
  ByteLevelBpe(const Vocabulary& vocab, std::unique_ptr<PreTokenizer> pre)
      : vocab_(vocab), pre_(std::move(pre)) {
    for (int b = 0; b < 256; ++b) {  // the piece standing for each single byte
      std::string mapped;
      byte_level::EncodeBytes(std::string(1, static_cast<char>(b)), &mapped);
      byte_ids_[b] = vocab.Find(mapped);
    }
  }
  Status EncodeFragment(std::string_view text, std::vector<int32_t>* out) const override;

 private:
  struct Symbol {
    int prev;
    int next;
    int32_t id;    // -1: a byte whose piece is not in the vocabulary
    uint32_t len;  // bytes of the word; 0 once merged away
  };
  struct Candidate {
    int32_t rank;
    int left;
    int right;
    int32_t left_id;
    int32_t right_id;
    int32_t merged;
  };
  struct CandidateOrder {  // lowest rank first, then leftmost
    bool operator()(const Candidate& a, const Candidate& b) const {
      return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
  };
  // Scratch reused across the words of one call.
  struct Session {
    std::string mapped;
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    // Word (a view into the text) -> where its ids already are in the output, for repeated words.
    std::unordered_map<std::string_view, std::pair<size_t, size_t>> cache;
  };

  Status EncodeWord(Session& s, std::string_view word, std::vector<int32_t>* out) const;
  void TryAdd(Session& s, int left, int right) const;

  const Vocabulary& vocab_;
  std::unique_ptr<PreTokenizer> pre_;
  std::array<int32_t, 256> byte_ids_{};
};

void ByteLevelBpe::TryAdd(Session& s, int left, int right) const {
  if (left < 0 || right < 0) return;
  const int32_t left_id = s.symbols[left].id;
  const int32_t right_id = s.symbols[right].id;
  if (left_id < 0 || right_id < 0) return;
  int32_t rank = 0;
  int32_t merged = 0;
  if (!vocab_.FindMerge(left_id, right_id, &rank, &merged)) return;
  s.heap.push_back(Candidate{rank, left, right, left_id, right_id, merged});
  std::push_heap(s.heap.begin(), s.heap.end(), CandidateOrder{});
}

// Merges the bytes of `word` (each byte one symbol: its byte-level piece) and appends the tokens to *out.
Status ByteLevelBpe::EncodeWord(Session& s, std::string_view word, std::vector<int32_t>* out) const {
  s.symbols.clear();
  s.heap.clear();
  const int n = static_cast<int>(word.size());
  for (int i = 0; i < n; ++i) {
    s.symbols.push_back(
        Symbol{i - 1, i + 1 == n ? -1 : i + 1, byte_ids_[static_cast<unsigned char>(word[i])], 1});
  }
  for (int i = 1; i < static_cast<int>(s.symbols.size()); ++i) TryAdd(s, i - 1, i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), CandidateOrder{});
    const Candidate c = s.heap.back();
    s.heap.pop_back();
    Symbol& left = s.symbols[c.left];
    Symbol& right = s.symbols[c.right];
    // Stale candidate: a side has merged since (an id never comes back once a symbol grows).
    if (left.len == 0 || right.len == 0 || left.next != c.right || left.id != c.left_id ||
        right.id != c.right_id) {
      continue;
    }
    left.id = c.merged;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) s.symbols[right.next].prev = c.left;
    TryAdd(s, left.prev, c.left);
    TryAdd(s, c.left, left.next);
  }
  for (int i = 0; i != -1; i = s.symbols[i].next) {
    const Symbol& sym = s.symbols[i];
    if (sym.id >= 0) {
      out->push_back(sym.id);
    } else if (vocab_.unk_id() >= 0) {
      out->push_back(vocab_.unk_id());
    } else {
      return InvalidArgument(
          fmt::format("the vocabulary cannot represent the byte 0x{:02X}: it has no piece for it and no "
                      "unknown token",
                      static_cast<unsigned char>(word[i])));
    }
  }
  return Status::Ok();
}

Status ByteLevelBpe::EncodeFragment(std::string_view text, std::vector<int32_t>* out) const {
  std::vector<std::string_view> words;
  LOCKSTEP_RETURN_IF_ERROR(pre_->Split(text, &words));
  Session s;
  s.cache.reserve(std::min<size_t>(words.size(), 65536));
  for (std::string_view word : words) {
    if (vocab_.ignore_merges()) {
      s.mapped.clear();
      byte_level::EncodeBytes(word, &s.mapped);
      const int32_t id = vocab_.Find(s.mapped);
      if (id >= 0) {
        out->push_back(id);
        continue;
      }
    }
    if (auto it = s.cache.find(word); it != s.cache.end()) {
      const auto [begin, end] = it->second;
      for (size_t i = begin; i < end; ++i) {
        const int32_t id = (*out)[i];  // copied first: push_back may reallocate
        out->push_back(id);
      }
      continue;
    }
    const size_t begin = out->size();
    LOCKSTEP_RETURN_IF_ERROR(EncodeWord(s, word, out));
    if (s.cache.size() < 65536) s.cache.emplace(word, std::make_pair(begin, out->size()));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<TokenizerModel>> CreateByteLevelBpe(const Vocabulary& vocab) {
  LOCKSTEP_ASSIGN_OR_RETURN(PreTokenizerSpec spec, LookupPreTokenizer(vocab.pre_name()));
  LOCKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> pre, PreTokenizer::Create(spec));
  return std::unique_ptr<TokenizerModel>(new ByteLevelBpe(vocab, std::move(pre)));
}

}  // namespace lockstep
