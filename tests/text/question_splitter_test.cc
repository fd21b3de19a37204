// The question splitter on a corpus of combined prompts: numbered, bulleted, inline, one per line, several
// languages, a single task with steps, and no list at all.
#include "text/question_splitter.h"

#include <gtest/gtest.h>

namespace lockstep::text {
namespace {

struct Case {
  const char* name;
  const char* text;
  const char* kind;
  const char* preamble;
  std::vector<std::string> questions;
};

const std::vector<Case>& Corpus() {
  static const std::vector<Case> corpus = {
      {"numbered_dot",
       "Answer each separately:\n1. What is the capital of France?\n2. How many legs has a spider?\n"
       "3. Who wrote Hamlet?",
       "numbered",
       "Answer each separately:",
       {"What is the capital of France?", "How many legs has a spider?", "Who wrote Hamlet?"}},
      {"numbered_paren",
       "1) Name a prime number\n2) Name a colour\n3) Name a planet",
       "numbered",
       "",
       {"Name a prime number", "Name a colour", "Name a planet"}},
      {"q_prefix",
       "Please answer these questions.\nQ1: What is 2+2?\nQ2: What is the speed of light?",
       "numbered",
       "Please answer these questions.",
       {"What is 2+2?", "What is the speed of light?"}},
      {"paren_number",
       "(1) Why is the sky blue?\n(2) Why is grass green?",
       "numbered",
       "",
       {"Why is the sky blue?", "Why is grass green?"}},
      {"bulleted",
       "Answer briefly:\n- What is DNA?\n- What is RNA?\n",
       "bulleted",
       "Answer briefly:",
       {"What is DNA?", "What is RNA?"}},
      {"nested_bullets",
       "Answer each:\n1. Compare:\n   - TCP\n   - UDP\n2. What is QUIC?",
       "numbered",
       "Answer each:",
       {"Compare:\n- TCP\n- UDP", "What is QUIC?"}},
      {"bullets_unicode",
       "• Who painted the Mona Lisa?\n• When did WW2 end?",
       "bulleted",
       "",
       {"Who painted the Mona Lisa?", "When did WW2 end?"}},
      {"multi_line_item",
       "Answer each:\n1. Explain TCP.\n   Keep it short.\n2. Explain UDP.",
       "numbered",
       "Answer each:",
       {"Explain TCP.\nKeep it short.", "Explain UDP."}},
      {"trailer_is_shared",
       "Questions:\n1. What is Rust?\n2. What is Go?\n\nAnswer in one sentence each.",
       "numbered",
       "Questions:\nAnswer in one sentence each.",
       {"What is Rust?", "What is Go?"}},
      {"inline_paren",
       "Answer each separately: 1) what is 7*6? 2) what is the capital of Japan? 3) what is H2O?",
       "inline",
       "Answer each separately:",
       {"what is 7*6?", "what is the capital of Japan?", "what is H2O?"}},
      {"inline_and",
       "Tell me 1) the tallest mountain, and 2) the longest river.",
       "inline",
       "Tell me",
       {"the tallest mountain", "the longest river."}},
      {"one_per_line",
       "What is an atom?\nWhat is a molecule?\nWhat is an ion?",
       "lines",
       "",
       {"What is an atom?", "What is a molecule?", "What is an ion?"}},
      {"lines_with_instruction",
       "Answer separately:\nWhat is HTTP?\nWhat is TLS?",
       "lines",
       "Answer separately:",
       {"What is HTTP?", "What is TLS?"}},
      {"german",
       "Beantworte jede Frage einzeln:\n1. Was ist die Hauptstadt von Italien?\n2. Wie hoch ist die "
       "Zugspitze?",
       "numbered",
       "Beantworte jede Frage einzeln:",
       {"Was ist die Hauptstadt von Italien?", "Wie hoch ist die Zugspitze?"}},
      {"spanish",
       "Responde cada pregunta por separado:\n1) ¿Qué es la fotosíntesis?\n2) ¿Quién escribió el Quijote?",
       "numbered",
       "Responde cada pregunta por separado:",
       {"¿Qué es la fotosíntesis?", "¿Quién escribió el Quijote?"}},
      {"french",
       "Réponds à chaque question :\n- Qu'est-ce qu'un volcan ?\n- Pourquoi la mer est-elle salée ?",
       "bulleted",
       "Réponds à chaque question :",
       {"Qu'est-ce qu'un volcan ?", "Pourquoi la mer est-elle salée ?"}},
      {"chinese",
       "请分别回答：\n1、天空为什么是蓝色的？\n2、水的沸点是多少？",
       "numbered",
       "请分别回答：",
       {"天空为什么是蓝色的？", "水的沸点是多少？"}},
      {"japanese_fullwidth",
       "それぞれ答えてください。\n1．富士山の高さは？\n2．日本の首都は？",
       "numbered",
       "それぞれ答えてください。",
       {"富士山の高さは？", "日本の首都は？"}},
      {"russian",
       "Ответь на каждый вопрос отдельно:\n1. Что такое гравитация?\n2. Кто написал «Войну и мир»?",
       "numbered",
       "Ответь на каждый вопрос отдельно:",
       {"Что такое гравитация?", "Кто написал «Войну и мир»?"}},
      {"single_task_steps",
       "Write a Python script that does the following steps:\n1. read a CSV file\n2. compute the mean of "
       "each column\n"
       "3. print the result as a table",
       "single",
       "",
       {}},
      {"single_task_that",
       "Write a function that:\n- takes a list of integers\n- removes duplicates\n- returns it sorted",
       "single",
       "",
       {}},
      {"single_task_then",
       "Plan my morning:\n1. Wake up at 7\n2. Then go for a run\n3. Finally have breakfast",
       "single",
       "",
       {}},
      {"single_task_german",
       "Schreibe ein Rezept mit diesen Schritten:\n1. Teig kneten\n2. Backen",
       "single",
       "",
       {}},
      {"star_bullets",
       "Answer each:\n* What is a quark?\n* What is a lepton?",
       "bulleted",
       "Answer each:",
       {"What is a quark?", "What is a lepton?"}},
      {"document_then_numbered",
       "The tower was raised in 1834.\n\nIt got a French lens.\n\nAnswer each question separately:\n"
       "1. When was it raised?\n2. Where was the lens made?",
       "numbered",
       "The tower was raised in 1834.\n\nIt got a French lens.\n\nAnswer each question separately:",
       {"When was it raised?", "Where was the lens made?"}},
      {"document_with_its_own_list",
       "Keepers had three duties:\n- trim the wicks\n- wind the clockwork\n- sound the fog horn\n\n"
       "Questions:\n1. Which duty was noisiest?\n2. How often was the clock wound?",
       "numbered",
       "Keepers had three duties:\n- trim the wicks\n- wind the clockwork\n- sound the fog "
       "horn\n\nQuestions:",
       {"Which duty was noisiest?", "How often was the clock wound?"}},
      {"document_then_question_lines",
       "The light flashes every ten seconds.\nIt is solar powered.\n\nHow often does it flash?\nWhat powers "
       "it?",
       "lines",
       "The light flashes every ten seconds.\nIt is solar powered.",
       {"How often does it flash?", "What powers it?"}},
      {"list_in_document_questions_on_lines",
       "Steps of the climb:\n1. open the door\n2. climb 90 stairs\n\nWhy was it tiring?\nHow long did it "
       "take?",
       "lines",
       "Steps of the climb:\n1. open the door\n2. climb 90 stairs",
       {"Why was it tiring?", "How long did it take?"}},
      {"question_lines_inside_a_paragraph",
       "I read about the tower and wondered.\nWhy was it raised?\nWho paid for it?",
       "single",
       "",
       {}},
      {"no_list",
       "Explain how a transformer language model generates text, token by token.",
       "single",
       "",
       {}},
      {"no_list_multiline", "Summarise this paragraph.\nIt has two lines of context.", "single", "", {}},
      {"decimal_not_a_list", "Is 3.14 bigger than 2.71? Explain 1.5 too.", "single", "", {}},
      {"broken_numbering", "1. Preheat the oven\n3. Bake for an hour", "single", "", {}},
      {"inline_single_task", "Write a shell script that 1) lists files 2) counts them", "single", "", {}},
  };
  return corpus;
}

TEST(QuestionSplitterTest, Corpus) {
  for (const Case& c : Corpus()) {
    SCOPED_TRACE(c.name);
    const SplitResult r = SplitQuestions(c.text);
    EXPECT_EQ(r.kind, c.kind);
    EXPECT_EQ(r.preamble, c.preamble);
    if (std::string(c.kind) == "single") {
      ASSERT_EQ(r.questions.size(), 1u);
      EXPECT_EQ(r.questions[0], c.text);
    } else {
      EXPECT_EQ(r.questions, c.questions);
    }
  }
}

TEST(QuestionSplitterTest, EmptyInputGivesNoQuestions) {
  EXPECT_TRUE(SplitQuestions("  \n ").questions.empty());
}

TEST(QuestionSplitterTest, ComposeKeepsThePreamble) {
  EXPECT_EQ(ComposeQuestion("Answer briefly:", "Why?"), "Answer briefly:\n\nWhy?");
  EXPECT_EQ(ComposeQuestion("", "Why?"), "Why?");
}

}  // namespace
}  // namespace lockstep::text
