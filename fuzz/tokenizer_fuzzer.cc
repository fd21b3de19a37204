// Fuzzes the tokenizers: byte-level BPE (the tiny model's built-in vocabulary; with the shared test data
// gpt-2 and starcoder) and SentencePiece BPE (llama-spm, phi-3). The first byte picks the tokenizer and the
// options, the rest is the text. Properties (tokenizer.h's contract):
//   - Encode of any bytes gives ids within the vocabulary, or refuses invalid UTF-8 (and only that);
//   - Decode(Encode(s)) == s for valid UTF-8 s without special-token parsing, with the tiny, gpt-2 and
//     llama-spm vocabularies (every byte is representable there; phi-3 strips whitespace by design);
//   - Decode of any ids is valid UTF-8, and the incremental detokenizer fed the same ids one by one ends
//     with exactly Decode's text.
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "fuzz/tiny_model.h"
#include "tokenizer/tokenizer.h"

// The fixtures are made before the first input, so their cost is not counted against -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)lockstep::fuzz::FuzzTokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  fuzz::FuzzInput in(data, size);
  const auto& tokenizers = fuzz::FuzzTokenizers();
  const uint8_t options = in.Byte();
  const fuzz::NamedTokenizer& named = tokenizers[(options >> 2) % tokenizers.size()];
  const Tokenizer& tokenizer = *named.tokenizer;
  const bool parse_special = (options & 1) != 0;
  const bool skip_special = (options & 2) != 0;
  const std::string_view text = in.Rest();
  const bool valid = fuzz::IsValidUtf8(text);
  auto ids = tokenizer.Encode(text, /*add_bos=*/false, parse_special);
  fuzz::Require(ids.ok() || !valid || named.name == "phi-3" || named.name == "llama-spm",
                "valid UTF-8 is encoded by a byte-level vocabulary");
  fuzz::Require(!ids.ok() || valid, "invalid UTF-8 is refused");
  std::vector<int32_t> any;
  if (ids.ok()) {
    for (int32_t id : *ids)
      fuzz::Require(id >= 0 && id < tokenizer.vocab_size(), "ids within the vocabulary");
    // SentencePiece writes spaces as U+2581 ("▁"), so a text holding that character itself cannot come back.
    const bool round_trips =
        named.name == "tiny" || named.name == "gpt-2" ||
        (named.name == "llama-spm" && text.find("\xE2\x96\x81") == std::string_view::npos);
    if (!parse_special && round_trips) {
      fuzz::Require(tokenizer.Decode(*ids) == text, "Decode(Encode(text)) == text");
    }
    any = *ids;
  }
  // The input's bytes as ids too (any ids, not only what Encode makes; some out of range, which Decode
  // skips).
  for (size_t i = 0; i + 1 < text.size(); i += 2) {
    const int32_t v = static_cast<uint8_t>(text[i]) << 8 | static_cast<uint8_t>(text[i + 1]);
    any.push_back(v % (tokenizer.vocab_size() + 2) - 1);
  }
  const std::string decoded = tokenizer.Decode(any, skip_special);
  fuzz::Require(fuzz::IsValidUtf8(decoded), "Decode gives valid UTF-8");
  IncrementalDetokenizer detokenizer(tokenizer, skip_special);
  std::string incremental;
  for (int32_t id : any) {
    const std::string piece = detokenizer.Push(id);
    fuzz::Require(fuzz::IsValidUtf8(piece), "Push never returns a partial UTF-8 sequence");
    incremental += piece;
  }
  incremental += detokenizer.Flush();
  fuzz::Require(incremental == decoded, "incremental detokenization equals Decode");
  return 0;
}
