#include "text/question_splitter.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace lockstep::text {
namespace {

enum class MarkerKind { kNone, kNumber, kBullet };

struct Marker {
  MarkerKind kind = MarkerKind::kNone;
  int number = 0;
  size_t indent = 0;
  size_t content = 0;  // where the item text starts
  std::string style;   // delimiter style, e.g. "." ")" "(" "Q" so inline items match their first
};

bool StartsWith(std::string_view s, size_t pos, std::string_view prefix) {
  return s.substr(pos, prefix.size()) == prefix;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool SpaceAt(std::string_view s, size_t pos) { return pos >= s.size() || s[pos] == ' ' || s[pos] == '\t'; }

// Parses an item marker at `pos` of `s` (no leading whitespace skipping). Returns kNone if there is none.
Marker MarkerAt(std::string_view s, size_t pos) {
  Marker m;
  size_t p = pos;
  std::string style;
  for (std::string_view bullet : {"- ", "* ", "+ ", "• ", "· ", "– ", "‣ ", "◦ "}) {
    if (StartsWith(s, p, bullet)) {
      m.kind = MarkerKind::kBullet;
      m.content = p + bullet.size();
      m.style = std::string(bullet.substr(0, bullet.size() - 1));
      return m;
    }
  }
  if (p < s.size() && s[p] == '(') {
    style = "(";
    ++p;
  } else if (p + 1 < s.size() && (s[p] == 'Q' || s[p] == 'q') &&
             std::isdigit(static_cast<unsigned char>(s[p + 1]))) {
    style = "Q";
    ++p;
  }
  const size_t digits = p;
  int number = 0;
  while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p])) && p - digits < 3)
    number = number * 10 + (s[p++] - '0');
  if (p == digits || (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p])))) return m;
  size_t after = 0;
  bool needs_space = true;
  if (style == "(") {
    if (!StartsWith(s, p, ")")) return m;
    after = p + 1;
  } else if (p < s.size() && (s[p] == '.' || s[p] == ')' || s[p] == ':')) {
    style += s[p];
    after = p + 1;
  } else {
    for (std::string_view wide : {"、", "．", "）", "：", "."}) {
      if (StartsWith(s, p, wide)) {
        style += std::string(wide);
        after = p + wide.size();
        needs_space = false;
        break;
      }
    }
    if (after == 0) return m;
  }
  if (style == "Q" || style == "Q.") needs_space = false;  // "Q1.What"
  if (needs_space && !SpaceAt(s, after)) return m;
  if (after >= s.size() || Trim(s.substr(after)).empty()) return m;  // a bare "1." is no item
  m.kind = MarkerKind::kNumber;
  m.number = number;
  m.style = style;
  while (after < s.size() && (s[after] == ' ' || s[after] == '\t')) ++after;
  m.content = after;
  return m;
}

Marker LineMarker(std::string_view line) {
  size_t indent = 0;
  while (indent < line.size() && (line[indent] == ' ' || line[indent] == '\t')) ++indent;
  Marker m = MarkerAt(line, indent);
  m.indent = indent;
  return m;
}

bool EndsWithQuestionMark(const std::string& text) {
  const std::string t = Trim(text);
  for (std::string_view q :
       {"?", "？", "؟", "\xcd\xbe"}) {  // ASCII, full-width, Arabic, Greek question marks
    if (t.size() >= q.size() && t.compare(t.size() - q.size(), q.size(), q) == 0) return true;
  }
  return false;
}

bool ContainsAny(const std::string& lower, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view n) { return lower.find(n) != std::string::npos; });
}

// Cues that the instruction asks for separate answers / describes one task's steps, in several languages.
bool SplitCue(const std::string& lower) {
  return ContainsAny(lower,
                     {"separate", "each",      "individual", "questions", "one by one", "following question",
                      "cada",     "preguntas", "chaque",     "questions", "jede",       "fragen",
                      "einzeln",  "ciascun",   "domande",    "分别",      "逐一",       "每个",
                      "问题",     "各",        "それぞれ",   "質問",      "кажд",       "отдельно",
                      "вопрос",   "각각",      "질문"});
}

bool StepCue(const std::string& lower, const std::vector<std::string>& items) {
  if (ContainsAny(lower, {"step", "procedure", "instructions", "algorithm",
                          "that:", "which:", "should:", "must:", "pasos", "étapes", "schritt", "passaggi",
                          "步骤", "手順", "шаг", "단계"})) {
    return true;
  }
  for (const auto& item : items) {
    const std::string l = Lower(item);
    if (l.rfind("then", 0) == 0 || l.rfind("finally", 0) == 0 || l.rfind("next", 0) == 0) return true;
  }
  return false;
}

// Whether a list under `preamble` is separate questions (true) or one task with steps (false).
// Inline lists ("tell me 1) ... 2) ...") split unless the instruction reads as one task.
bool IsSeparateQuestions(const std::string& preamble, const std::vector<std::string>& items,
                         bool inline_list = false) {
  const std::string lower = Lower(preamble);
  if (preamble.empty()) return true;
  if (inline_list)
    return SplitCue(lower) || !(StepCue(lower, items) || ContainsAny(lower, {" that", " which"}));
  if (SplitCue(lower)) return true;
  const auto questions = std::count_if(items.begin(), items.end(), EndsWithQuestionMark);
  if (questions * 2 >= static_cast<long>(items.size()) && !StepCue(lower, items)) return true;
  return false;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n') {
      std::string line = text.substr(start, i - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lines.push_back(std::move(line));
      start = i + 1;
    }
  }
  return lines;
}

// The text of lines [begin, end) as written (inner blank lines kept), trimmed at both ends.
std::string Slice(const std::vector<std::string>& lines, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) out += (i > begin ? "\n" : "") + lines[i];
  return Trim(out);
}

// The last paragraph of a preamble (after its last blank line): the instruction just before a list, where
// the cues are read (a document above it must not decide whether the list is one task).
std::string LastParagraph(const std::string& preamble) {
  const size_t blank = preamble.rfind("\n\n");
  return blank == std::string::npos ? preamble : Trim(std::string_view(preamble).substr(blank + 2));
}

std::string JoinParts(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "\n" + b;
}

// Parses the list that starts at lines[first]. Returns false when fewer than two items are found or they
// read as one task's steps; `out->kind` is set whenever a list was found.
bool SplitLineListAt(const std::vector<std::string>& lines, size_t first, SplitResult* out) {
  const Marker top = LineMarker(lines[first]);
  const std::string preamble = Slice(lines, 0, first);
  std::vector<std::string> items;
  std::string trailer;
  int expected = top.number;
  bool after_blank = false;
  for (size_t i = first; i < lines.size(); ++i) {
    const Marker m = LineMarker(lines[i]);
    const bool same_level = m.kind == top.kind && m.indent <= top.indent + 1 &&
                            (m.kind == MarkerKind::kBullet || (m.style == top.style && m.number == expected));
    if (same_level) {
      items.push_back(Trim(std::string_view(lines[i]).substr(m.content)));
      ++expected;
      after_blank = false;
      continue;
    }
    const std::string text = Trim(lines[i]);
    if (text.empty()) {
      after_blank = true;
      continue;
    }
    const bool indented = LineMarker(lines[i]).indent > top.indent;
    if (after_blank && !indented) {
      trailer = JoinParts(trailer, text);  // text after the list: part of the shared instruction
    } else if (trailer.empty()) {
      items.back() += "\n" + text;  // continuation or nested list of the last item
    } else {
      trailer = JoinParts(trailer, text);
    }
  }
  out->kind = top.kind == MarkerKind::kNumber ? "numbered" : "bulleted";
  if (items.size() < 2) return false;
  const std::string shared = JoinParts(preamble, trailer);
  if (!IsSeparateQuestions(JoinParts(LastParagraph(preamble), trailer), items)) return false;
  out->preamble = shared;
  out->questions = std::move(items);
  return true;
}

// Line-start lists. A text may hold several (a document with its own lists, then the questions): the last
// list that starts at the outermost indent is the one to split. Returns false when there is none (kind is
// set when a list was found but did not split).
bool SplitLineList(const std::vector<std::string>& lines, SplitResult* out) {
  size_t outer = std::string::npos;
  for (const std::string& line : lines) {
    const Marker m = LineMarker(line);
    if (m.kind != MarkerKind::kNone) outer = std::min(outer, m.indent);
  }
  if (outer == std::string::npos) return false;
  // Starts of lists: outermost markers (a bullet, or a number 1 or any first number) not continuing a list.
  std::vector<size_t> starts;
  Marker previous;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Marker m = LineMarker(lines[i]);
    if (Trim(lines[i]).empty()) continue;
    if (m.kind != MarkerKind::kNone && m.indent == outer &&
        !(previous.kind == m.kind && previous.indent == outer)) {
      starts.push_back(i);
    }
    if (m.kind != MarkerKind::kNone && m.indent == outer) {
      previous = m;
    } else if (LineMarker(lines[i]).indent <= outer) {
      previous = Marker();  // a plain line ends the list
    }
  }
  for (auto it = starts.rbegin(); it != starts.rend(); ++it) {
    SplitResult candidate;
    if (SplitLineListAt(lines, *it, &candidate)) {
      *out = std::move(candidate);
      return true;
    }
    if (it == starts.rbegin()) out->kind = candidate.kind;
  }
  return false;
}

// "1) ... 2) ... 3) ..." within the text: consecutive numbers of one style, each after whitespace.
bool SplitInline(const std::string& text, SplitResult* out) {
  for (size_t start = 0; start < text.size(); ++start) {
    if (start > 0 && !std::isspace(static_cast<unsigned char>(text[start - 1]))) continue;
    const Marker first = MarkerAt(text, start);
    if (first.kind != MarkerKind::kNumber || first.number > 1) continue;
    std::vector<size_t> starts = {start}, contents = {first.content};
    int expected = first.number + 1;
    for (size_t p = first.content; p < text.size(); ++p) {
      if (!std::isspace(static_cast<unsigned char>(text[p - 1]))) continue;
      const Marker m = MarkerAt(text, p);
      if (m.kind == MarkerKind::kNumber && m.number == expected && m.style == first.style) {
        starts.push_back(p);
        contents.push_back(m.content);
        ++expected;
      }
    }
    if (starts.size() < 2) continue;
    std::vector<std::string> items;
    for (size_t i = 0; i < starts.size(); ++i) {
      const size_t end = i + 1 < starts.size() ? starts[i + 1] : text.size();
      std::string item = Trim(std::string_view(text).substr(contents[i], end - contents[i]));
      if (item.size() > 4 && Lower(item.substr(item.size() - 4)) == " and") item.resize(item.size() - 4);
      while (!item.empty() && (item.back() == ',' || item.back() == ';')) item.pop_back();
      items.push_back(Trim(item));
    }
    const std::string preamble = Trim(std::string_view(text).substr(0, start));
    if (!IsSeparateQuestions(preamble, items, /*inline_list=*/true)) return false;
    out->kind = "inline";
    out->preamble = preamble;
    out->questions = std::move(items);
    return true;
  }
  return false;
}

// Questions on separate lines without numbers: the text's last lines, two or more, each ending with a
// question mark. What comes before them is the shared preamble: nothing, an instruction line ending in ':',
// or any text (a document, an instruction) separated from the questions by a blank line or ending in ':'.
bool SplitPlainLines(const std::vector<std::string>& lines, SplitResult* out) {
  size_t end = lines.size();
  while (end > 0 && Trim(lines[end - 1]).empty()) --end;
  size_t begin = end;
  while (begin > 0 && !Trim(lines[begin - 1]).empty() && EndsWithQuestionMark(lines[begin - 1])) --begin;
  if (end - begin < 2) return false;
  std::string preamble = Slice(lines, 0, begin);
  if (!preamble.empty()) {
    const bool after_blank = Trim(lines[begin - 1]).empty();
    const std::string last_line = Trim(lines[begin - 1]);
    const bool colon =
        !last_line.empty() && (last_line.back() == ':' ||
                               StartsWith(last_line, last_line.size() >= 3 ? last_line.size() - 3 : 0, "："));
    if (!after_blank && !colon) return false;  // the question lines continue a paragraph
  }
  std::vector<std::string> questions;
  for (size_t i = begin; i < end; ++i) questions.push_back(Trim(lines[i]));
  // Every line is a question; only an instruction line introducing them can still make them one task.
  if (!preamble.empty() && !Trim(lines[begin - 1]).empty() &&
      !IsSeparateQuestions(Trim(lines[begin - 1]), questions)) {
    return false;
  }
  out->kind = "lines";
  out->preamble = std::move(preamble);
  out->questions = std::move(questions);
  return true;
}

}  // namespace

SplitResult SplitQuestions(const std::string& text) {
  SplitResult out;
  const std::string trimmed = Trim(text);
  if (trimmed.empty()) return out;
  const std::vector<std::string> lines = Lines(trimmed);
  SplitResult candidate;
  if (SplitLineList(lines, &candidate)) return candidate;
  // No line list at all: inline numbering. Then questions on plain lines at the end (also below a
  // document that has lists of its own).
  if (candidate.kind.empty() && SplitInline(trimmed, &candidate)) return candidate;
  if (SplitPlainLines(lines, &candidate)) return candidate;
  out.kind = "single";
  out.questions = {trimmed};
  return out;
}

std::string ComposeQuestion(const std::string& preamble, const std::string& question) {
  return preamble.empty() ? question : preamble + "\n\n" + question;
}

}  // namespace lockstep::text
