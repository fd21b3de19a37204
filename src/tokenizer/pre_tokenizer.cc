#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <utility>

#include "tokenizer/utf8.h"

namespace lockstep {
namespace {

// The GPT-2 word regex (also the second stage of several other lists).
constexpr const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// Llama 3's regex; the case-insensitive contractions spelled out as classes (same matches as (?i:...)).
constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2: as Llama 3 but single digits.
constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5: as Qwen2, with combining marks (\p{M}) counted as letters.
constexpr const char* kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|)"
    R"( ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek LLM's cased-letter class (a fixed subset of Lu/Ll/Lt), written as code point ranges.
constexpr const char* kDeepSeekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF})"
    R"(\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})"
    R"(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})"
    R"(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})"
    R"(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B})"
    R"(\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})"
    R"(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
    R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134})"
    R"(\x{2139}\x{213C}-\x{213F})"
    R"(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE})"
    R"(\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787})"
    R"(\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})"
    R"(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
    R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";
// CJK ideographs (U+4E00..U+9FA5), U+0800..U+4E00 and Hangul (U+AC00..U+D7FF) runs.
constexpr const char* kDeepSeekCjk = R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

PreTokenizerSpec Spec(std::string name, std::vector<std::string> regexes) {
  PreTokenizerSpec spec;
  spec.name = std::move(name);
  spec.regexes = std::move(regexes);
  return spec;
}

}  // namespace

Result<PreTokenizerSpec> LookupPreTokenizer(std::string_view pre) {
  auto is = [&](std::initializer_list<std::string_view> names) {
    for (auto n : names) {
      if (pre == n) return true;
    }
    return false;
  };
  if (pre.empty() || pre == "default") {
    return Spec("default", {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"});
  }
  if (is({"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral", "dbrx", "smaug-bpe"})) {
    PreTokenizerSpec spec = Spec("llama3", {kLlama3});
    // dbrx and smaug share the regex but not Llama 3's merge and BOS conventions.
    const bool llama3 = !is({"dbrx", "smaug-bpe"});
    spec.ignore_merges = llama3;
    spec.add_bos_default = llama3;
    if (!llama3) spec.name = std::string(pre);
    return spec;
  }
  if (is({"qwen2", "stablelm2", "deepseek-r1-qwen", "megrez"})) return Spec("qwen2", {kQwen2});
  if (pre == "qwen35") return Spec("qwen35", {kQwen35});
  if (is({"chatglm-bpe", "glm4"})) return Spec(std::string(pre), {kLlama3});  // GLM-4-0414 files: "glm4"
  if (pre == "deepseek-llm") {
    return Spec("deepseek-llm",
                {"[\r\n]", kDeepSeekLetters,
                 R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
                 R"(\s+$)", kDeepSeekCjk, R"(\p{N}+)"});
  }
  if (pre ==
      "deepseek-v3") {  // DeepSeek-V3 / R1 / V3.1 / V3.2: digits in threes, CJK and kana runs, then words
    return Spec("deepseek-v3",
                {R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
                 R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|)"
                 R"( ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"});
  }
  if (pre == "deepseek-coder") {
    return Spec("deepseek-coder", {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepSeekCjk, R"(\p{N})"});
  }
  if (pre == "falcon") {
    return Spec("falcon", {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"});
  }
  if (is({"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"})) {
    return Spec(std::string(pre), {R"(\p{N})", kGpt2});
  }
  if (is({"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "gpt-neox", "jina-es", "jina-de", "jina-v1-en",
          "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe", "gigachat"})) {
    return Spec(std::string(pre), {kGpt2});
  }
  if (is({"poro-chat", "bloom", "gpt3-finnish"}))
    return Spec(std::string(pre), {R"( ?[^(\s|.,!?…。，、।۔،)]+)"});
  if (pre == "viking") return Spec("viking", {R"( ?[^(\s|.,!?…。，、।۔،)]+)", R"(\p{N})"});
  if (is({"gpt-4o", "llama4", "kanana2"})) {  // o200k (gpt-oss, GPT-4o): tokenizer.json's regex as is
    return Spec("gpt-4o", {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
                           R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
                           R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
                           R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
                           R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"});
  }
  if (pre == "tekken") {
    PreTokenizerSpec spec =
        Spec("tekken", {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|)"
                        R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|)"
                        R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"});
    spec.ignore_merges = true;
    spec.add_bos_default = true;
    return spec;
  }
  return Unimplemented(fmt::format("tokenizer.ggml.pre '{}' is not a supported pre-tokenizer", pre));
}

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(PreTokenizerSpec spec) : spec_(std::move(spec)) {}
PreTokenizer::~PreTokenizer() = default;

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::Create(const PreTokenizerSpec& spec) {
  std::unique_ptr<PreTokenizer> pre(new PreTokenizer(spec));
  for (const std::string& pattern : spec.regexes) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    auto compiled = std::make_unique<Compiled>();
    compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
    if (compiled->code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      return InvalidArgument(fmt::format("pre-tokenizer '{}': regex /{}/ does not compile at offset {}: {}",
                                         spec.name, pattern, error_offset, reinterpret_cast<char*>(message)));
    }
    pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
    pre->regexes_.push_back(std::move(compiled));
  }
  return pre;
}

namespace {

// Per-call PCRE2 state: match data for each regex and, when a match needs it, a larger JIT stack.
class MatchScratch {
 public:
  ~MatchScratch() {
    for (auto* md : match_data_) pcre2_match_data_free(md);
    if (context_) pcre2_match_context_free(context_);
    if (jit_stack_) pcre2_jit_stack_free(jit_stack_);
  }
  pcre2_match_data* Data(size_t index, const pcre2_code* code) {
    if (match_data_.size() <= index) match_data_.resize(index + 1, nullptr);
    if (!match_data_[index]) match_data_[index] = pcre2_match_data_create_from_pattern(code, nullptr);
    return match_data_[index];
  }
  pcre2_match_context* BigStackContext() {
    if (!context_) {
      context_ = pcre2_match_context_create(nullptr);
      jit_stack_ = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
      pcre2_jit_stack_assign(context_, nullptr, jit_stack_);
    }
    return context_;
  }

 private:
  std::vector<pcre2_match_data*> match_data_;
  pcre2_match_context* context_ = nullptr;
  pcre2_jit_stack* jit_stack_ = nullptr;
};

}  // namespace

Status PreTokenizer::Split(std::string_view text, std::vector<std::string_view>* words) const {
  words->clear();
  if (text.empty()) return Status::Ok();
  std::vector<std::string_view> current = {text};
  std::vector<std::string_view> next;
  MatchScratch scratch;
  for (size_t r = 0; r < regexes_.size(); ++r) {
    const pcre2_code* code = regexes_[r]->code;
    pcre2_match_data* md = scratch.Data(r, code);
    next.clear();
    next.reserve(current.size() * 2);
    for (std::string_view piece : current) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t start = 0;
      size_t last = 0;  // end of the previous match: text between matches is kept as a piece too
      while (start < piece.size()) {
        int rc = pcre2_match(code, subject, piece.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
          rc = pcre2_match(code, subject, piece.size(), start, PCRE2_NO_UTF_CHECK, md,
                           scratch.BigStackContext());
        }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
          return ResourceExhausted(
              fmt::format("pre-tokenizer '{}': regex {} failed with PCRE2 error {} at "
                          "byte {} of a {}-byte piece",
                          spec_.name, r, rc, start, piece.size()));
        }
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md);
        const size_t match_start = ovector[0];
        const size_t match_end = ovector[1];
        if (match_end == match_start) {  // empty match: step over one character
          start = match_start + utf8::SequenceLength(static_cast<unsigned char>(piece[match_start]));
          continue;
        }
        if (match_start > last) next.push_back(piece.substr(last, match_start - last));
        next.push_back(piece.substr(match_start, match_end - match_start));
        last = start = match_end;
      }
      if (last < piece.size()) next.push_back(piece.substr(last));
    }
    current.swap(next);
  }
  *words = std::move(current);
  return Status::Ok();
}

}  // namespace lockstep
