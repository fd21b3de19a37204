// Tokenization against llama.cpp's llama-tokenize (c392e50) on generated strings around special and
// user-defined tokens (tests/tokenizer/testdata/peer_tokenize.json, written by scripts/compare_tokenizer.py):
// with and without special-token parsing, no BOS. Phi-3's vocabulary (general.name "Phi3") strips the
// whitespace after its special tokens, as llama.cpp does for phi-3 names (Vocabulary::SetStripAttributes).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "testing/testdata.h"
#include "testing/vocab/test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace lockstep::testing {
namespace {

TEST(PeerTokenize, MatchesLlamaTokenizeAroundSpecialTokens) {
  LOCKSTEP_REQUIRE_TESTDATA();
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/tokenizer/testdata/peer_tokenize.json");
  ASSERT_TRUE(in);
  const nlohmann::json golden = nlohmann::json::parse(in);
  int vocabs = 0;
  for (const auto& [name, cases] : golden.at("vocabs").items()) {
    SCOPED_TRACE(name);
    std::shared_ptr<const Tokenizer> tokenizer = TestVocabTokenizer(name);
    ASSERT_NE(tokenizer, nullptr);
    int differences = 0;
    for (const nlohmann::json& c : cases) {
      const std::string text = c.at("text").get<std::string>();
      for (const char* mode : {"special", "plain"}) {
        auto ids = tokenizer->Encode(text, /*add_bos=*/false, /*parse_special=*/mode[0] == 's');
        ASSERT_TRUE(ids.ok()) << ids.status().ToString();
        if (*ids != c.at(mode).get<std::vector<int32_t>>()) {
          ADD_FAILURE() << mode << " " << nlohmann::json(text).dump();
          ++differences;
        }
      }
    }
    EXPECT_EQ(differences, 0);
    EXPECT_GE(cases.size(), 100u);
    ++vocabs;
  }
  EXPECT_EQ(vocabs, 4);
}

}  // namespace
}  // namespace lockstep::testing
