// Tokenizer throughput: tokenizes mixed text (English prose, C++ code, CJK, emoji, numbers, whitespace runs)
// of 256 KiB, 512 KiB and 1 MiB with a SentencePiece vocabulary (llama-spm) and byte-level BPE vocabularies
// (gpt-2, deepseek-llm), and prints JSON per size: tokens, wall seconds and bytes/s (best of 5 runs), thread
// CPU seconds (best of 5; steadier than wall time on a busy machine), the CPU-time ratio 1 MiB / 256 KiB
// (about 4 when scaling is linear), and the decode time.
//
// Usage: tokenizer_bench [VOCAB_DIR]   (default: $LOCKSTEP_TESTDATA/vocab or ../shared/testdata/vocab)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

// Deterministic mixed text of exactly `size` bytes (valid UTF-8: whole snippets, then ASCII padding).
std::string MixedText(size_t size) {
  static const char* const kSnippets[] = {
      "The quick brown fox jumps over the lazy dog. ",
      "Once upon a time, there was a little girl named Lily who loved to play outside. ",
      "It's 3:45 p.m. and we've sold 1,234,567 units (about 12.5% more than 2023). ",
      "for (int i = 0; i < n; ++i) {\n    sum += values[i] * weights[i];\n}\n",
      "def tokenize(text: str) -> list[int]:\n    return [ord(c) for c in text]\n\n",
      "我想在苹果公司工作一千三百一十四天。",
      "今日は良い天気ですね。東京タワーに行きましょう！",
      "안녕하세요, 만나서 반갑습니다. ",
      "Привет, как дела? Всё хорошо. ",
      "🚀 launch 😶‍🌫️ fog ✅ done 🦙 llama 👍🏽 ",
      "    \t  \n\n   ",
      "3.14159265358979 2.71828 6.02214076e23 42 0x7fffffff ",
      "Ünïcödé façade naïve café coöperate — “quotes” ‘single’ … ",
      "<html><body class=\"main\">Hello &amp; welcome!</body></html>\n",
  };
  constexpr size_t kCount = sizeof(kSnippets) / sizeof(kSnippets[0]);
  std::string text;
  text.reserve(size + 256);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  while (true) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const std::string snippet = kSnippets[(state >> 33) % kCount];
    if (text.size() + snippet.size() > size) break;
    text += snippet;
  }
  text.append(size - text.size(), 'x');
  return text;
}

// Mixed text with few repeated words (so per-call word caches rarely hit): random "words" of Latin letters,
// digits, Cyrillic, CJK, Hangul and emoji, separated by spaces, punctuation and newlines.
std::string RandomWordsText(size_t size) {
  static const char* const kAlphabets[][8] = {
      {"a", "e", "i", "o", "u", "n", "s", "t"},         {"b", "k", "r", "l", "m", "p", "d", "g"},
      {"0", "1", "2", "3", "5", "7", "8", "9"},         {"а", "о", "к", "р", "с", "т", "н", "в"},
      {"的", "一", "是", "在", "了", "有", "人", "中"}, {"가", "나", "다", "라", "마", "바", "사", "아"},
      {"😀", "🚀", "🦙", "✅", "🌫", "👍", "🔥", "🎉"}};
  static const char* const kSeparators[] = {" ", " ", " ", " ", ", ", ". ", "\n", "  ", "\t", "; "};
  std::string text;
  text.reserve(size + 64);
  uint64_t state = 0x2545F4914F6CDD1Dull;
  auto next = [&state](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  while (true) {
    std::string word;
    const size_t script = next(7);
    const size_t length = 1 + next(9);
    for (size_t i = 0; i < length; ++i) word += kAlphabets[next(3) == 0 ? next(7) : script][next(8)];
    word += kSeparators[next(10)];
    if (text.size() + word.size() > size) break;
    text += word;
  }
  text.append(size - text.size(), 'x');
  return text;
}

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string VocabDir(int argc, char** argv) {
  if (argc > 1) return argv[1];
  if (const char* env = std::getenv("LOCKSTEP_TESTDATA"); env && *env) return std::string(env) + "/vocab";
  return (std::filesystem::path(LOCKSTEP_SOURCE_DIR).parent_path() / "shared" / "testdata" / "vocab")
      .string();
}

// One JSON object: encode timings of `kind` text at every size.
bool RunSizes(const lockstep::Tokenizer& tokenizer, const std::string& name, const char* kind,
              std::string (*make_text)(size_t)) {
  const std::vector<size_t> sizes = {256 * 1024, 512 * 1024, 1024 * 1024};
  std::printf("\n      {\"text\": \"%s\", \"sizes\": [", kind);
  std::vector<double> times;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string text = make_text(sizes[i]);
    double best = 1e30;
    double best_cpu = 1e30;
    std::vector<int32_t> ids;
    for (int run = 0; run < 5; ++run) {
      const auto start = Clock::now();
      const double cpu_start = CpuSeconds();
      auto encoded = tokenizer.Encode(text, false, false);
      best_cpu = std::min(best_cpu, CpuSeconds() - cpu_start);
      best = std::min(best, Seconds(start));
      if (!encoded.ok()) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), encoded.status().ToString().c_str());
        return false;
      }
      ids = std::move(encoded).value();
    }
    const auto decode_start = Clock::now();
    const std::string decoded = tokenizer.Decode(ids);
    const double decode_s = Seconds(decode_start);
    times.push_back(best_cpu);
    std::printf(
        "%s\n        {\"bytes\": %zu, \"tokens\": %zu, \"encode_s\": %.4f, \"encode_bytes_per_s\": %.0f, "
        "\"encode_cpu_s\": %.4f, \"encode_cpu_bytes_per_s\": %.0f, \"decode_s\": %.4f, "
        "\"round_trip\": %s}",
        i ? "," : "", sizes[i], ids.size(), best, double(sizes[i]) / best, best_cpu,
        double(sizes[i]) / best_cpu, decode_s, decoded == text ? "true" : "false");
  }
  std::printf("\n      ], \"cpu_time_ratio_1MiB_over_256KiB\": %.2f}", times.back() / times.front());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = VocabDir(argc, argv);
  const std::vector<std::string> vocabs = {"llama-spm", "gpt-2", "deepseek-llm"};
  std::printf("{\n  \"benchmark\": \"tokenizer\",\n  \"vocab_dir\": \"%s\",\n  \"results\": [", dir.c_str());
  bool first_vocab = true;
  for (const std::string& name : vocabs) {
    const std::string path = dir + "/ggml-vocab-" + name + ".gguf";
    auto file = lockstep::GgufFile::Open(path);
    if (!file.ok()) {
      std::fprintf(stderr, "skipping %s: %s\n", name.c_str(), file.status().ToString().c_str());
      continue;
    }
    const auto load_start = Clock::now();
    auto tokenizer = lockstep::Tokenizer::FromGguf(**file);
    const double load_s = Seconds(load_start);
    if (!tokenizer.ok()) {
      std::fprintf(stderr, "skipping %s: %s\n", name.c_str(), tokenizer.status().ToString().c_str());
      continue;
    }
    std::printf("%s\n    {\"vocab\": \"%s\", \"model\": \"%s\", \"load_s\": %.4f, \"runs\": [",
                first_vocab ? "" : ",", name.c_str(), (*tokenizer)->model_name().c_str(), load_s);
    first_vocab = false;
    if (!RunSizes(**tokenizer, name, "mixed_snippets", MixedText)) return 1;
    std::printf(",");
    if (!RunSizes(**tokenizer, name, "random_words", RandomWordsText)) return 1;
    std::printf("\n    ]}");
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
