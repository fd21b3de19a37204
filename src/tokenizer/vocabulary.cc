#include "tokenizer/vocabulary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "tokenizer/byte_level.h"
#include "tokenizer/pre_tokenizer.h"

namespace lockstep {
namespace {

constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kScores = "tokenizer.ggml.scores";
constexpr std::string_view kTokenType = "tokenizer.ggml.token_type";
constexpr std::string_view kMerges = "tokenizer.ggml.merges";
constexpr std::string_view kSpaceUtf8 = "\xE2\x96\x81";  // ▁ U+2581

// Pieces that end generation when present as control (or user-defined) tokens.
constexpr std::string_view kEndOfGenerationPieces[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>",         "<end_of_turn>",         "<|endoftext|>", "<|eom_id|>",
    "<EOT>",      "_<EOT>",     "<|end_of_text|>", "<｜end▁of▁sentence｜>", "<|return|>",    "<|call|>"};
// Candidates for the end-of-turn token when tokenizer.ggml.eot_token_id is absent.
constexpr std::string_view kEotPieces[] = {"<|eot_id|>",    "<|im_end|>", "<|end|>",
                                           "<end_of_turn>", "<EOT>",      "_<EOT>"};

constexpr std::string_view kFimPre[] = {"<|fim_prefix|>",  "<fim-prefix>", "<fim_prefix>",    "<PRE>",
                                        "<|code_prefix|>", "<|prefix|>",   "<｜fim▁begin｜>", "▁<PRE>"};
constexpr std::string_view kFimSuf[] = {"<|fim_suffix|>",  "<fim-suffix>", "<fim_suffix>",   "<SUF>",
                                        "<|code_suffix|>", "<|suffix|>",   "<｜fim▁hole｜>", "▁<SUF>"};
constexpr std::string_view kFimMid[] = {"<|fim_middle|>",  "<fim-middle>", "<fim_middle>",  "<MID>",
                                        "<|code_middle|>", "<|middle|>",   "<｜fim▁end｜>", "▁<MID>"};
constexpr std::string_view kFimPad[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRep[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                        "<reponame>"};
constexpr std::string_view kFimSep[] = {"<|file_sep|>"};

// Reads one optional token id key: -1 when absent or "none" (-1 / 0xFFFFFFFF), InvalidArgument when out of
// range.
Status ReadTokenId(const GgufFile& file, std::string_view key, int32_t vocab_size, int32_t* id) {
  *id = -1;
  if (!file.Has(key)) return Status::Ok();
  LOCKSTEP_ASSIGN_OR_RETURN(int64_t value, file.GetInt(key));
  if (value == -1 || value == 0xFFFFFFFFll) return Status::Ok();
  if (value < 0 || value >= vocab_size) {
    return InvalidArgument(fmt::format("{}: {} = {} is out of range (the vocabulary has {} tokens)",
                                       file.path(), key, value, vocab_size));
  }
  *id = static_cast<int32_t>(value);
  return Status::Ok();
}

// "<0xNN>" (uppercase or lowercase hex) -> NN; -1 otherwise.
int ParseBytePiece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  int value = 0;
  for (char c : piece.substr(3, 2)) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace

std::span<const std::string_view> FimPieces(FimSlot slot) {
  switch (slot) {
    case FimSlot::kPre:
      return kFimPre;
    case FimSlot::kSuf:
      return kFimSuf;
    case FimSlot::kMid:
      return kFimMid;
    case FimSlot::kPad:
      return kFimPad;
    case FimSlot::kRep:
      return kFimRep;
    case FimSlot::kSep:
      return kFimSep;
  }
  return {};
}

Result<std::unique_ptr<Vocabulary>> Vocabulary::Load(const GgufFile& file) {
  auto vocab = std::make_unique<Vocabulary>();
  LOCKSTEP_ASSIGN_OR_RETURN(vocab->model_name_, file.GetString("tokenizer.ggml.model"));
  if (vocab->model_name_ == "llama") {
    vocab->kind_ = VocabKind::kSentencePiece;
  } else if (vocab->model_name_ == "gpt2") {
    vocab->kind_ = VocabKind::kByteLevelBpe;
    LOCKSTEP_ASSIGN_OR_RETURN(vocab->pre_name_, file.GetStringOr("tokenizer.ggml.pre", "default"));
  } else if (vocab->model_name_ == "bert") {
    vocab->kind_ = VocabKind::kWordPiece;
  } else {
    const char* what = vocab->model_name_ == "t5" ? " (Unigram)" : "";
    return Unimplemented(
        fmt::format("{}: tokenizer.ggml.model '{}'{} is not supported (supported: 'llama' "
                    "SentencePiece BPE, 'gpt2' byte-level BPE, 'bert' WordPiece)",
                    file.path(), vocab->model_name_, what));
  }
  LOCKSTEP_RETURN_IF_ERROR(vocab->LoadTokens(file));
  if (vocab->kind_ == VocabKind::kByteLevelBpe) LOCKSTEP_RETURN_IF_ERROR(vocab->LoadMerges(file));
  LOCKSTEP_RETURN_IF_ERROR(vocab->LoadSpecialIds(file));
  LOCKSTEP_RETURN_IF_ERROR(vocab->LoadFimIds(file));
  LOCKSTEP_RETURN_IF_ERROR(vocab->LoadFlags(file));
  vocab->SetStripAttributes(file);
  vocab->BuildDerivedTables();
  return vocab;
}

Status Vocabulary::LoadTokens(const GgufFile& file) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<std::string> pieces, file.GetStringArray(kTokens));
  if (pieces.empty()) return InvalidArgument(fmt::format("{}: {} is empty", file.path(), kTokens));
  if (pieces.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2)) {
    return InvalidArgument(
        fmt::format("{}: {} has {} entries, too many", file.path(), kTokens, pieces.size()));
  }
  const size_t n = pieces.size();
  std::vector<float> scores;
  if (file.Has(kScores)) {
    LOCKSTEP_ASSIGN_OR_RETURN(scores, file.GetFloatArray(kScores));
    if (scores.size() != n) {
      return InvalidArgument(fmt::format("{}: {} has {} entries but {} has {}", file.path(), kScores,
                                         scores.size(), kTokens, n));
    }
  }
  std::vector<int32_t> types;
  if (file.Has(kTokenType)) {
    LOCKSTEP_ASSIGN_OR_RETURN(types, file.GetInt32Array(kTokenType));
    if (types.size() != n) {
      return InvalidArgument(fmt::format("{}: {} has {} entries but {} has {}", file.path(), kTokenType,
                                         types.size(), kTokens, n));
    }
  }
  tokens_.resize(n);
  piece_to_id_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    TokenData& t = tokens_[i];
    t.piece = std::move(pieces[i]);
    t.score = scores.empty() ? 0.0f : scores[i];
    if (!types.empty()) {
      if (types[i] < 0 || types[i] > static_cast<int32_t>(TokenType::kByte)) {
        return InvalidArgument(
            fmt::format("{}: {}[{}] = {} is not a token type (0..6)", file.path(), kTokenType, i, types[i]));
      }
      t.type = static_cast<TokenType>(types[i]);
    } else if (kind_ == VocabKind::kSentencePiece && ParseBytePiece(t.piece) >= 0) {
      t.type = TokenType::kByte;  // no type array: recognise byte-fallback pieces by their form
    }
    auto [it, inserted] = piece_to_id_.emplace(t.piece, static_cast<int32_t>(i));
    if (!inserted) {
      return InvalidArgument(fmt::format("{}: {} has the piece '{}' twice (ids {} and {})", file.path(),
                                         kTokens, t.piece, it->second, i));
    }
  }
  return Status::Ok();
}

Status Vocabulary::LoadMerges(const GgufFile& file) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::vector<std::string> merges, file.GetStringArray(kMerges));
  size_t slots = 16;
  while (slots < 2 * merges.size()) slots *= 2;
  merge_slots_.assign(slots, MergeSlotEntry{});
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& line = merges[i];
    // The separator is the first space after the first character (a piece is never empty).
    const size_t space = line.size() > 1 ? line.find(' ', 1) : std::string::npos;
    if (space == std::string::npos || space + 1 >= line.size()) {
      return InvalidArgument(fmt::format("{}: {}[{}] = '{}' is not two pieces separated by a space",
                                         file.path(), kMerges, i, line));
    }
    const std::string_view left(line.data(), space);
    const std::string_view right(line.data() + space + 1, line.size() - space - 1);
    const int32_t left_id = Find(left);
    const int32_t right_id = Find(right);
    const int32_t merged_id = Find(line.substr(0, space) + std::string(right));
    if (left_id < 0 || right_id < 0 || merged_id < 0) {
      const std::string missing = left_id < 0    ? std::string(left)
                                  : right_id < 0 ? std::string(right)
                                                 : std::string(left) + std::string(right);
      return InvalidArgument(fmt::format("{}: {}[{}] = '{}' names the piece '{}', which is not in {}",
                                         file.path(), kMerges, i, line, missing, kTokens));
    }
    InsertMerge(MergeKey(left_id, right_id), static_cast<int32_t>(i), merged_id);
  }
  return Status::Ok();
}

void Vocabulary::InsertMerge(uint64_t key, int32_t rank, int32_t merged) {
  for (size_t i = MergeSlot(key);; i = (i + 1) & (merge_slots_.size() - 1)) {
    MergeSlotEntry& e = merge_slots_[i];
    if (e.merged >= 0 && e.key == key) return;  // an earlier merge of the same pair wins
    if (e.merged < 0) {
      e = MergeSlotEntry{key, rank, merged};
      ++merge_count_;
      return;
    }
  }
}

Status Vocabulary::LoadSpecialIds(const GgufFile& file) {
  const bool spm = kind_ == VocabKind::kSentencePiece;
  const bool wpm = kind_ == VocabKind::kWordPiece;
  struct Slot {
    std::string_view key;
    int32_t* id;
    int32_t fallback;
  };
  // WordPiece: llama.cpp's defaults are BERT's ids ([CLS] 101 as BOS, [UNK] 100, [SEP] 102); converters
  // write [CLS] as cls_token_id, read here when bos_token_id is absent.
  int32_t cls_id = -1;
  const Slot slots[] = {
      {"tokenizer.ggml.cls_token_id", &cls_id, wpm ? 101 : -1},
      {"tokenizer.ggml.bos_token_id", &bos_id_, spm ? 1 : -1},
      {"tokenizer.ggml.eos_token_id", &eos_id_, spm ? 2 : -1},
      {"tokenizer.ggml.unknown_token_id", &unk_id_,
       spm   ? 0
       : wpm ? 100
             : -1},
      {"tokenizer.ggml.seperator_token_id", &sep_id_, wpm ? 102 : -1},
      {"tokenizer.ggml.eot_token_id", &eot_id_, -1},
      {"tokenizer.ggml.eom_token_id", &eom_id_, -1},
  };
  for (const Slot& slot : slots) {
    if (!file.Has(slot.key)) {
      *slot.id = slot.fallback < size() ? slot.fallback : -1;
      continue;
    }
    LOCKSTEP_ASSIGN_OR_RETURN(int64_t value, file.GetInt(slot.key));
    if (value == -1 || value == 0xFFFFFFFFll) {  // "none", as some converters write it
      *slot.id = -1;
      continue;
    }
    if (value < 0 || value >= size()) {
      return InvalidArgument(fmt::format("{}: {} = {} is out of range (the vocabulary has {} tokens)",
                                         file.path(), slot.key, value, size()));
    }
    *slot.id = static_cast<int32_t>(value);
  }
  if (wpm && !file.Has("tokenizer.ggml.bos_token_id")) bos_id_ = cls_id;
  if (!wpm) sep_id_ = -1;
  if (eot_id_ < 0) {
    for (std::string_view piece : kEotPieces) {
      const int32_t id = Find(piece);
      if (id >= 0 && (IsType(id, TokenType::kControl) || IsType(id, TokenType::kUserDefined))) {
        eot_id_ = id;
        break;
      }
    }
  }
  return Status::Ok();
}

Status Vocabulary::LoadFimIds(const GgufFile& file) {
  struct Slot {
    FimSlot slot;
    std::string_view key;
    std::string_view old_key;  // the key older converters wrote ("" = none)
    int32_t* id;
  };
  const Slot slots[] = {
      {FimSlot::kPre, "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id", &fim_.pre},
      {FimSlot::kSuf, "tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id", &fim_.suf},
      {FimSlot::kMid, "tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id", &fim_.mid},
      {FimSlot::kPad, "tokenizer.ggml.fim_pad_token_id", "", &fim_.pad},
      {FimSlot::kRep, "tokenizer.ggml.fim_rep_token_id", "", &fim_.rep},
      {FimSlot::kSep, "tokenizer.ggml.fim_sep_token_id", "", &fim_.sep},
  };
  for (const Slot& s : slots) {
    LOCKSTEP_RETURN_IF_ERROR(ReadTokenId(file, s.key, size(), s.id));
    if (*s.id < 0 && !s.old_key.empty()) LOCKSTEP_RETURN_IF_ERROR(ReadTokenId(file, s.old_key, size(), s.id));
    for (std::string_view piece : FimPieces(s.slot)) {
      if (*s.id >= 0) break;
      *s.id = Find(piece);
    }
  }
  return Status::Ok();
}

Status Vocabulary::LoadFlags(const GgufFile& file) {
  const bool spm = kind_ == VocabKind::kSentencePiece;
  if (kind_ == VocabKind::kWordPiece) {  // [CLS] text [SEP] when special tokens are added, as llama.cpp does
    add_bos_ = bos_id_ >= 0 && sep_id_ >= 0;
    add_space_prefix_ = true;  // decoding: no space before the first word
    return Status::Ok();
  }
  bool add_bos_default = spm;
  if (!spm) {
    LOCKSTEP_ASSIGN_OR_RETURN(PreTokenizerSpec spec, LookupPreTokenizer(pre_name_));
    add_bos_default = spec.add_bos_default;
    ignore_merges_ = spec.ignore_merges;
  }
  LOCKSTEP_ASSIGN_OR_RETURN(add_bos_, file.GetBoolOr("tokenizer.ggml.add_bos_token", add_bos_default));
  LOCKSTEP_ASSIGN_OR_RETURN(add_eos_, file.GetBoolOr("tokenizer.ggml.add_eos_token", false));
  LOCKSTEP_ASSIGN_OR_RETURN(add_space_prefix_, file.GetBoolOr("tokenizer.ggml.add_space_prefix", spm));
  if (!spm) add_space_prefix_ = false;  // byte-level BPE encodes spaces itself
  if (add_bos_ && bos_id_ < 0) {
    return InvalidArgument(
        fmt::format("{}: tokenizer.ggml.add_bos_token is set but there is no BOS token", file.path()));
  }
  if (add_eos_ && eos_id_ < 0) {
    return InvalidArgument(
        fmt::format("{}: tokenizer.ggml.add_eos_token is set but there is no EOS token", file.path()));
  }
  return Status::Ok();
}

void Vocabulary::SetStripAttributes(const GgufFile& file) {
  auto text = [&](const char* key) {  // a missing or non-string key reads as ""
    Result<std::string> value = file.GetStringOr(key, "");
    return value.ok() ? *value : std::string();
  };
  std::string name = text("general.name");
  for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
  const std::string pre = text("tokenizer.ggml.pre");
  auto set = [&](std::string_view piece, bool TokenData::*attribute, bool value) {
    if (const int32_t id = Find(piece); id >= 0) tokens_[id].*attribute = value;
  };
  if (pre.find("jina-v2-de") != std::string::npos || pre.find("jina-v2-es") != std::string::npos ||
      pre.find("jina-v2-code") != std::string::npos) {
    set("<mask>", &TokenData::lstrip, true);
  } else if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (TokenData& t : tokens_) {
      t.rstrip =
          t.type == TokenType::kControl || t.type == TokenType::kUserDefined || t.type == TokenType::kUnknown;
    }
    set("</s>", &TokenData::rstrip, true);
    for (std::string_view piece : {"<unk>", "<s>", "<|endoftext|>"}) set(piece, &TokenData::rstrip, false);
  }
}

void Vocabulary::BuildDerivedTables() {
  const bool spm = kind_ == VocabKind::kSentencePiece || kind_ == VocabKind::kWordPiece;  // ▁ for a space
  byte_tokens_.fill(-1);
  decoded_.resize(tokens_.size());
  for (int32_t id = 0; id < size(); ++id) {
    const TokenData& t = tokens_[id];
    switch (t.type) {
      case TokenType::kControl:
      case TokenType::kUnknown:
      case TokenType::kUserDefined:
        decoded_[id] = t.piece;
        if (!t.piece.empty()) special_tokens_.push_back(id);
        break;
      case TokenType::kByte: {
        const int byte = ParseBytePiece(t.piece);
        if (byte >= 0) {
          decoded_[id] = std::string(1, static_cast<char>(byte));
          if (byte_tokens_[byte] < 0) byte_tokens_[byte] = id;
        } else {
          decoded_[id] = spm ? t.piece : byte_level::DecodePiece(t.piece);
        }
        break;
      }
      default:
        decoded_[id] = spm ? ReplaceAll(t.piece, kSpaceUtf8, " ") : byte_level::DecodePiece(t.piece);
        break;
    }
  }
  if (spm) {  // byte fallback by piece form too, as llama.cpp looks "<0xNN>" up by text
    for (int b = 0; b < 256; ++b) {
      if (byte_tokens_[b] < 0) byte_tokens_[b] = Find(fmt::format("<0x{:02X}>", b));
    }
  }
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(), [this](int32_t a, int32_t b) {
    return tokens_[a].piece.size() > tokens_[b].piece.size();
  });
  for (int32_t id : {eos_id_, eot_id_, eom_id_, fim_.pad, fim_.rep, fim_.sep}) {
    if (id >= 0) eog_ids_.push_back(id);
  }
  const auto special = [this](std::string_view piece) {
    const int32_t id = Find(piece);
    return id >= 0 && (IsType(id, TokenType::kControl) || IsType(id, TokenType::kUserDefined)) ? id : -1;
  };
  for (std::string_view piece : kEndOfGenerationPieces) {
    if (const int32_t id = special(piece); id >= 0) eog_ids_.push_back(id);
  }
  // gpt-oss's Harmony format (o200k_harmony): <|end|> closes one message of a reply (its reasoning, say),
  // <|return|> and <|call|> the reply. Such a vocabulary's <|end|> ends nothing, whatever put it in the list
  // (the eot key or the piece), as llama.cpp's llama-vocab.cpp decides by the same two pieces.
  if (special("<|return|>") >= 0 && special("<|call|>") >= 0) {
    const int32_t end = Find("<|end|>");
    eog_ids_.erase(std::remove(eog_ids_.begin(), eog_ids_.end(), end), eog_ids_.end());
  }
}

bool Vocabulary::IsEndOfGeneration(int32_t id) const {
  return id >= 0 && std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

}  // namespace lockstep
