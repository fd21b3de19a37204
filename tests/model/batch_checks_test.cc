#include "model/batch_checks.h"

#include <gtest/gtest.h>

#include <vector>

namespace lockstep {
namespace {

TEST(BatchChecks, OutputBufferNamesItsSizeAndTheNeed) {
  std::vector<float> buffer(10);
  EXPECT_TRUE(CheckOutputBuffer("logits", buffer, 2, 5).ok());
  EXPECT_TRUE(CheckOutputBuffer("logits", {}, 0, 5).ok());
  const Status s = CheckOutputBuffer("embeddings", buffer, 3, 4);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "embeddings buffer holds 10 floats, the batch needs 12");
}

TEST(BatchChecks, TokenIsInTheVocabulary) {
  EXPECT_TRUE(CheckRowToken(BatchRow{0}, 0, 100).ok());
  EXPECT_TRUE(CheckRowToken(BatchRow{99}, 0, 100).ok());
  const Status past = CheckRowToken(BatchRow{100}, 3, 100);
  EXPECT_EQ(past.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(past.message(), "batch row 3: token 100 is outside the vocabulary (0..99)");
  EXPECT_EQ(CheckRowToken(BatchRow{-1}, 0, 100).code(), StatusCode::kInvalidArgument);
}

TEST(BatchChecks, PositionHasAnEmbedding) {
  EXPECT_TRUE(CheckRowPositionEmbedding(BatchRow{5, 0}, 0, 16).ok());
  EXPECT_TRUE(CheckRowPositionEmbedding(BatchRow{5, 15}, 0, 16).ok());
  const Status past = CheckRowPositionEmbedding(BatchRow{5, 16}, 2, 16);
  EXPECT_EQ(past.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(past.message(),
            "batch row 2: position 16 is beyond the model's position embeddings (n_ctx_train 16)");
  EXPECT_EQ(CheckRowPositionEmbedding(BatchRow{5, -1}, 0, 16).code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace lockstep
