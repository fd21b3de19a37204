#include "client/bench_workload.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file_util.h"

namespace lockstep::client {
namespace {

bool ParseInt(const std::string& s, int* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

Result<LengthSpec> ParseLengthSpec(const std::string& text, const std::string& flag) {
  LengthSpec spec;
  const size_t colon = text.find(':');
  const std::string len = text.substr(0, colon);
  const std::string spread = colon == std::string::npos ? "0" : text.substr(colon + 1);
  if (!ParseInt(len, &spec.length) || !ParseInt(spread, &spec.spread) || spec.length < 1 || spec.spread < 0 ||
      spec.spread >= spec.length) {
    return InvalidArgument(flag + " '" + text + "': expected L or L:SPREAD with L >= 1 and 0 <= SPREAD < L");
  }
  return spec;
}

int SampleLength(const LengthSpec& spec, std::mt19937_64& rng) {
  if (spec.spread == 0) return spec.length;
  std::uniform_int_distribution<int> d(spec.length - spec.spread, spec.length + spec.spread);
  return std::max(1, d(rng));
}

Result<std::string> RandomPromptOfTokens(int tokens, std::mt19937_64& rng, const TokenCounter& count) {
  // Every word is at least one token, so `tokens` words are enough.
  const std::string words = RandomPrompt(tokens, rng);
  std::vector<size_t> ends;  // end of each word prefix
  for (size_t i = 0; i <= words.size(); ++i) {
    if (i == words.size() || words[i] == ' ') ends.push_back(i);
  }
  size_t lo = 1, hi = ends.size();  // the answer is in [lo, hi] words; 1 word is taken even if over
  while (lo < hi) {
    const size_t mid = (lo + hi + 1) / 2;
    LOCKSTEP_ASSIGN_OR_RETURN(const int n, count(words.substr(0, ends[mid - 1])));
    if (n <= tokens) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return words.substr(0, ends[lo - 1]);
}

std::string RandomPrompt(int tokens, std::mt19937_64& rng) {
  static const char* kWords[] = {
      "the",     "time",        "people",    "year",     "way",    "day",        "man",    "thing",
      "woman",   "life",        "child",     "world",    "school", "state",      "family", "student",
      "group",   "country",     "problem",   "hand",     "part",   "place",      "case",   "week",
      "company", "system",      "program",   "question", "work",   "government", "number", "night",
      "point",   "home",        "water",     "room",     "mother", "area",       "money",  "story",
      "fact",    "month",       "lot",       "right",    "study",  "book",       "eye",    "job",
      "word",    "business",    "issue",     "side",     "kind",   "head",       "house",  "service",
      "friend",  "father",      "power",     "hour",     "game",   "line",       "end",    "member",
      "law",     "car",         "city",      "name",     "team",   "minute",     "idea",   "kid",
      "body",    "information", "back",      "parent",   "face",   "others",     "level",  "office",
      "door",    "health",      "person",    "art",      "war",    "history",    "party",  "result",
      "change",  "morning",     "reason",    "research", "girl",   "guy",        "moment", "air",
      "teacher", "force",       "education", "blue",     "green",  "small",      "large",  "good",
      "new",     "old"};
  constexpr size_t kCount = sizeof(kWords) / sizeof(kWords[0]);
  std::uniform_int_distribution<size_t> pick(0, kCount - 1);
  std::string prompt;
  for (int i = 0; i < tokens; ++i) {
    if (i > 0) prompt += ' ';
    prompt += kWords[pick(rng)];
  }
  return prompt;
}

Result<std::vector<WorkItem>> LoadDataset(const std::string& path, const LengthSpec& default_output,
                                          std::mt19937_64& rng) {
  LOCKSTEP_ASSIGN_OR_RETURN(const std::string text, ReadFlagFile(path, "--dataset"));
  std::istringstream in(text);
  std::vector<WorkItem> items;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::string where = path + ":" + std::to_string(line_no);
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#')
      continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgument(where + ": not a JSON object");
    WorkItem item;
    if (j.contains("prompt")) {
      if (!j["prompt"].is_string()) return InvalidArgument(where + ": \"prompt\" must be a string");
      item.messages = {{"user", j["prompt"].get<std::string>()}};
    } else if (j.contains("messages") && j["messages"].is_array()) {
      for (const auto& m : j["messages"]) {
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
            !m["content"].is_string()) {
          return InvalidArgument(where + ": each message needs string \"role\" and \"content\"");
        }
        item.messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
      }
      if (item.messages.empty()) return InvalidArgument(where + ": \"messages\" is empty");
    } else {
      return InvalidArgument(where + ": needs \"prompt\" (string) or \"messages\" (array)");
    }
    const char* key = j.contains("output_len") ? "output_len" : "max_tokens";
    if (j.contains(key)) {
      if (!j[key].is_number_integer() || j[key].get<int>() < 1) {
        return InvalidArgument(where + ": \"" + key + "\" must be a positive integer");
      }
      item.max_tokens = j[key].get<int>();
    } else {
      item.max_tokens = SampleLength(default_output, rng);
    }
    items.push_back(std::move(item));
  }
  if (items.empty()) return InvalidArgument("dataset '" + path + "' has no requests");
  return items;
}

std::vector<double> ArrivalOffsets(int n, double rate, double burstiness, std::mt19937_64& rng) {
  std::vector<double> offsets(n, 0.0);
  if (rate <= 0) return offsets;
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  double t = 0;
  for (int i = 0; i < n; ++i) {
    offsets[i] = t;
    t += gap(rng);
  }
  return offsets;
}

}  // namespace lockstep::client
