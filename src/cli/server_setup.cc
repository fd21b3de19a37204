#include "cli/server_setup.h"

#include <string>

#include "text/question_splitter.h"

namespace lockstep::cli {

server::SplitQuestionsFn QuestionSplitterForServer() {
  return [](const std::string& text) {
    text::SplitResult split = text::SplitQuestions(text);
    server::SplitQuestionsResult out{split.preamble, split.questions, split.kind, {}};
    for (const std::string& q : split.questions)
      out.prompts.push_back(text::ComposeQuestion(split.preamble, q));
    return out;
  };
}

}  // namespace lockstep::cli
