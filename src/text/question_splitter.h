// Question splitter: turns one combined prompt ("Answer each separately: 1. ... 2. ...") into independent
// questions for fan-out — the client's `lockstep ask --split` and the server's "fan_out" field both use it
// (this layer depends on the standard library only). Recognises numbered items at line starts ("1.", "1)",
// "(1)", "Q1:", "1、", full-width forms), bulleted items ("-", "*", "•", ...), inline numbering on one line
// ("1) ... 2) ..."), and one question per line. Text before the list (and any text after it) is the shared
// instruction: it becomes the preamble sent with every question. A prompt that is one task with a list of
// steps ("Write a script that: 1. reads ... 2. prints") stays one question, decided from cues in the
// instruction and the items (question marks, "each"/"separately", "steps", in several languages). Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace lockstep::text {

struct SplitResult {
  std::string preamble;                // "" when there is none
  std::vector<std::string> questions;  // at least one for non-empty input
  std::string kind;                    // "numbered", "bulleted", "inline", "lines" or "single"
};

SplitResult SplitQuestions(const std::string& text);

// The prompt sent for one question: the preamble, a blank line, the question (or just the question).
std::string ComposeQuestion(const std::string& preamble, const std::string& question);

}  // namespace lockstep::text
