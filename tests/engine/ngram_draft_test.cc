// ProposeNgramDraft: what followed the most recent earlier occurrence of the last n tokens (n = 4 down to 2).
#include "engine/ngram_draft.h"

#include <gtest/gtest.h>

#include <vector>

namespace lockstep {
namespace {

using Tokens = std::vector<int32_t>;

TEST(NgramDraftTest, CopiesWhatFollowedTheLastOccurrence) {
  // "1 2" occurred at 0 (followed by 3 4 5) and at 5 (followed by 9 8); the most recent wins.
  EXPECT_EQ(ProposeNgramDraft(Tokens{1, 2, 3, 4, 5, 1, 2, 9, 8, 7, 1, 2}, 3), (Tokens{9, 8, 7}));
  // Fewer tokens follow than asked for: the copy goes on as a loop (period 3 here).
  EXPECT_EQ(ProposeNgramDraft(Tokens{4, 5, 6, 4, 5}, 8), (Tokens{6, 4, 5, 6, 4, 5, 6, 4}));
  EXPECT_EQ(ProposeNgramDraft(Tokens{1, 2, 3, 4, 5, 1, 2}, 7), (Tokens{3, 4, 5, 1, 2, 3, 4}));
}

TEST(NgramDraftTest, TheLongestMatchWins) {
  // The last 3 tokens (7 1 2) occurred at 0; the last 2 (1 2) more recently at 5, followed by 9.
  EXPECT_EQ(ProposeNgramDraft(Tokens{7, 1, 2, 3, 3, 1, 2, 9, 7, 1, 2}, 2), (Tokens{3, 3}));
}

TEST(NgramDraftTest, NothingWithoutAMatchOrRoom) {
  EXPECT_TRUE(ProposeNgramDraft(Tokens{1, 2, 3, 4, 5, 6}, 4).empty());
  EXPECT_TRUE(ProposeNgramDraft(Tokens{1, 2, 1, 2}, 0).empty());
  EXPECT_TRUE(ProposeNgramDraft(Tokens{1, 2, 1, 2}, -3).empty());
  EXPECT_TRUE(ProposeNgramDraft(Tokens{}, 4).empty());
  EXPECT_TRUE(ProposeNgramDraft(Tokens{5}, 4).empty());
  // A single repeated token is a 1-gram: below kNgramMin.
  EXPECT_TRUE(ProposeNgramDraft(Tokens{3, 8, 9, 3}, 4).empty());
  // A run of one token: its 2-grams overlap, and it goes on.
  EXPECT_EQ(ProposeNgramDraft(Tokens{6, 6, 6}, 4), (Tokens{6, 6, 6, 6}));
}

}  // namespace
}  // namespace lockstep
