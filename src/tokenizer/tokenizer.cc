#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer_model.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocabulary.h"

namespace lockstep {
namespace {

constexpr std::string_view kSpaceUtf8 = "\xE2\x96\x81";  // ▁ U+2581

// SentencePiece input escaping: every space becomes ▁.
void AppendEscaped(std::string_view text, std::string* out) {
  out->reserve(out->size() + text.size() +
               2 * static_cast<size_t>(std::count(text.begin(), text.end(), ' ')));
  for (char c : text) {
    if (c == ' ') {
      out->append(kSpaceUtf8);
    } else {
      out->push_back(c);
    }
  }
}

}  // namespace

Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufFile& file) {
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
  LOCKSTEP_ASSIGN_OR_RETURN(tokenizer->vocab_, Vocabulary::Load(file));
  const Vocabulary& vocab = *tokenizer->vocab_;
  if (vocab.kind() == VocabKind::kSentencePiece) {
    tokenizer->model_ = CreateSentencePieceBpe(vocab);
  } else if (vocab.kind() == VocabKind::kWordPiece) {
    if (vocab.unk_id() < 0) {
      return InvalidArgument(file.path() +
                             ": a WordPiece vocabulary needs an unknown token "
                             "(tokenizer.ggml.unknown_token_id)");
    }
    tokenizer->model_ = CreateWordPiece(vocab);
  } else {
    auto model = CreateByteLevelBpe(vocab);
    if (!model.ok()) return model.status().WithContext(file.path());
    tokenizer->model_ = std::move(model).value();
  }
  tokenizer->matcher_ = std::make_unique<SpecialTokenMatcher>(vocab);
  return tokenizer;
}

Result<std::vector<int32_t>> Tokenizer::Encode(std::string_view text, bool add_bos,
                                               bool parse_special) const {
  if (const size_t bad = utf8::FindInvalid(text); bad != std::string_view::npos) {
    return InvalidArgument(fmt::format("text is not valid UTF-8: invalid byte 0x{:02X} at offset {}",
                                       static_cast<unsigned char>(text[bad]), bad));
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_bos && vocab_->add_bos()) ids.push_back(vocab_->bos_id());
  std::vector<SpecialTokenMatcher::Fragment> fragments;
  matcher_->Split(text, parse_special, &fragments);
  const bool spm = vocab_->kind() == VocabKind::kSentencePiece;
  bool after_special = true;  // the SentencePiece prefix space goes at the start and after special tokens
  std::string escaped;
  for (const auto& fragment : fragments) {
    if (fragment.token >= 0) {
      ids.push_back(fragment.token);
      after_special = true;
      continue;
    }
    if (spm) {
      escaped.clear();
      if (vocab_->add_space_prefix() && after_special) escaped.append(kSpaceUtf8);
      AppendEscaped(fragment.text, &escaped);
      LOCKSTEP_RETURN_IF_ERROR(model_->EncodeFragment(escaped, &ids));
    } else {
      LOCKSTEP_RETURN_IF_ERROR(model_->EncodeFragment(fragment.text, &ids));
    }
    after_special = false;
  }
  if (add_bos && vocab_->add_eos()) ids.push_back(vocab_->eos_id());
  if (add_bos && vocab_->add_bos() && vocab_->sep_id() >= 0) ids.push_back(vocab_->sep_id());  // WordPiece
  return ids;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool skip_special, bool continuation) const {
  IncrementalDetokenizer detok(*this, skip_special, continuation);
  std::string out;
  for (int32_t id : ids) out += detok.Push(id);
  out += detok.Flush();
  return out;
}

std::string Tokenizer::TokenPiece(int32_t id) const {
  return vocab_->InRange(id) ? vocab_->token(id).piece : std::string();
}

std::string Tokenizer::TokenBytes(int32_t id) const {
  return vocab_->InRange(id) ? vocab_->decoded(id) : std::string();
}

int32_t Tokenizer::vocab_size() const { return vocab_->size(); }
int32_t Tokenizer::bos_id() const { return vocab_->bos_id(); }
int32_t Tokenizer::eos_id() const { return vocab_->eos_id(); }
int32_t Tokenizer::eot_id() const { return vocab_->eot_id(); }
int32_t Tokenizer::unk_id() const { return vocab_->unk_id(); }
const FimTokens& Tokenizer::fim() const { return vocab_->fim(); }
bool Tokenizer::add_bos() const { return vocab_->add_bos(); }
bool Tokenizer::add_eos() const { return vocab_->add_eos(); }
bool Tokenizer::IsEndOfGeneration(int32_t id) const { return vocab_->IsEndOfGeneration(id); }

bool Tokenizer::IsSpecial(int32_t id) const {
  return vocab_->IsType(id, TokenType::kControl) || vocab_->IsType(id, TokenType::kUserDefined);
}

bool Tokenizer::IsControl(int32_t id) const { return vocab_->IsType(id, TokenType::kControl); }
int32_t Tokenizer::FindToken(std::string_view piece) const { return vocab_->Find(piece); }

std::vector<int32_t> Tokenizer::ControlTokens(std::span<const std::string_view> pieces) const {
  std::vector<int32_t> ids;
  for (std::string_view piece : pieces) {
    const int32_t id = FindToken(piece);
    if (id >= 0 && IsControl(id)) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}
std::string Tokenizer::model_name() const { return vocab_->model_name(); }
std::string Tokenizer::pre_name() const { return vocab_->pre_name(); }

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special,
                                               bool continuation, std::vector<int32_t> kept_special)
    : tokenizer_(tokenizer),
      skip_special_(skip_special),
      kept_special_(std::move(kept_special)),
      at_text_start_(!continuation) {
  std::sort(kept_special_.begin(), kept_special_.end());
}

std::string IncrementalDetokenizer::Push(int32_t id) {
  const Vocabulary& vocab = tokenizer_.vocabulary();
  if (!vocab.InRange(id)) return std::string();
  const TokenType type = vocab.token(id).type;
  std::string_view bytes = vocab.decoded(id);
  if (type == TokenType::kControl || type == TokenType::kUnknown || type == TokenType::kUserDefined) {
    // The encoder adds the SentencePiece prefix space again after each of these.
    at_text_start_ = true;
    if (skip_special_ && type != TokenType::kUserDefined &&
        !std::binary_search(kept_special_.begin(), kept_special_.end(), id)) {
      return std::string();
    }
  } else {
    if (at_text_start_ && vocab.add_space_prefix() && type != TokenType::kByte && !bytes.empty() &&
        bytes[0] == ' ') {
      bytes.remove_prefix(1);
    }
    at_text_start_ = false;
  }
  pending_.append(bytes);
  std::string out;
  const size_t consumed = utf8::ConsumeValid(pending_, /*final=*/false, &out);
  pending_.erase(0, consumed);
  return out;
}

std::string IncrementalDetokenizer::Flush() {
  std::string out;
  utf8::ConsumeValid(pending_, /*final=*/true, &out);
  pending_.clear();
  return out;
}

}  // namespace lockstep
