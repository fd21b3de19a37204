// Request::preserved_tokens: a control token the request lists keeps its text in the output (tool-call
// markers such as Mistral's [TOOL_CALLS] reach the parser); unlisted control tokens still give none. The
// tokens themselves do not change.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_testing.h"

namespace lockstep {
namespace {

using testing::Arrival;
using testing::Collected;
using testing::TestModel;

TEST(EnginePreservedTokens, AListedControlTokenKeepsItsText) {
  TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  // The vocabulary's one control token (<|endoftext|>), forced by logit_bias, generation going on past it.
  int32_t control = -1;
  for (int32_t id = 0; id < m.tokenizer->vocab_size() && control < 0; ++id) {
    if (m.tokenizer->IsControl(id)) control = id;
  }
  ASSERT_GE(control, 0);
  const std::string piece = m.tokenizer->TokenPiece(control);
  ASSERT_FALSE(piece.empty());
  auto engine = testing::MakeTestEngine(m, 64);
  ASSERT_NE(engine, nullptr);
  Request forced;
  forced.prompt_ids = {5, 6, 7};
  forced.max_tokens = 3;
  forced.sampling.logit_bias = {{control, 100.0f}};
  forced.ignore_eos = true;
  Request kept = forced;
  kept.preserved_tokens = {control};
  const std::vector<Collected> out = testing::RunSolo(*engine, {Arrival{forced, 0}, Arrival{kept, 0}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].tokens, std::vector<int32_t>(3, control));
  EXPECT_EQ(out[1].tokens, out[0].tokens);
  EXPECT_EQ(out[0].text, "");
  EXPECT_EQ(out[1].text, piece + piece + piece);
  testing::ExpectAllBlocksFree(*engine);
}

}  // namespace
}  // namespace lockstep
