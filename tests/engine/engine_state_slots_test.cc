// The recurrent state slots of a model with recurrent layers (tiny-qwen35; kv/recurrent_state_pool.h) in the
// engine's numbers: EngineStats::recurrent_slots_total is the slots asked for (or max_seqs), and after
// every step recurrent_slots_used is the running requests, never more than the slots, back to 0 once all
// finished; other models report none; more slots than max_seqs, or fewer than 0, are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "engine/engine.h"
#include "engine_testing.h"

namespace lockstep {
namespace {

using testing::Arrival;

// Every step's slot numbers (engine thread), read once the engine is idle.
class SlotRecorder : public EngineObserver {
 public:
  void OnStep(const EngineStats& stats) override {
    std::lock_guard<std::mutex> lock(mutex_);
    steps_.push_back(stats);
  }
  std::vector<EngineStats> steps() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return steps_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<EngineStats> steps_;
};

TEST(EngineStateSlotsTest, StatsCountTheSlotsRunningRequestsHold) {
  const testing::TestModel m = testing::MakeRandomTestModel("tiny-qwen35", "q8_0");
  ASSERT_NE(m.model, nullptr);
  EngineOptions options;
  options.threads = 1;
  options.max_seqs = 3;
  options.recurrent_slots = 2;  // three requests, two at a time
  SlotRecorder recorder;
  auto engine = Engine::Create(m.model, m.tokenizer, options, &recorder);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_EQ((*engine)->Stats().recurrent_slots_total, 2);
  EXPECT_EQ((*engine)->Stats().recurrent_slots_used, 0);
  std::vector<Arrival> arrivals(3);
  for (size_t i = 0; i < arrivals.size(); ++i) {
    arrivals[i].request.prompt_ids = testing::RandomTokenIds(int32_t(m.model->config().n_vocab), 5, i);
    arrivals[i].request.max_tokens = 4;
    arrivals[i].request.ignore_eos = true;
  }
  testing::RunConcurrently(**engine, arrivals);
  testing::ExpectAllBlocksFree(**engine);
  int32_t most = 0;
  for (const EngineStats& s : recorder.steps()) {
    EXPECT_EQ(s.recurrent_slots_total, 2);
    EXPECT_EQ(s.recurrent_slots_used, s.running) << "step " << s.steps;
    most = std::max(most, s.recurrent_slots_used);
  }
  EXPECT_EQ(most, 2);
  EXPECT_EQ((*engine)->Stats().recurrent_slots_used, 0);

  options.recurrent_slots = 0;  // one per sequence
  auto defaulted = Engine::Create(m.model, m.tokenizer, options);
  ASSERT_TRUE(defaulted.ok()) << defaulted.status().ToString();
  EXPECT_EQ((*defaulted)->Stats().recurrent_slots_total, 3);
  for (int slots : {4, -1}) {
    options.recurrent_slots = slots;
    auto refused = Engine::Create(m.model, m.tokenizer, options);
    ASSERT_FALSE(refused.ok()) << slots;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("recurrent_slots must be in 0..max_seqs (3"), std::string::npos)
        << refused.status().message();
  }
}

TEST(EngineStateSlotsTest, ModelsWithoutRecurrentLayersHaveNoSlots) {
  const testing::TestModel m = testing::MakeRandomTestModel("tiny", "f32");
  ASSERT_NE(m.model, nullptr);
  EngineOptions options;
  options.recurrent_slots = 2;  // ignored
  auto engine = Engine::Create(m.model, m.tokenizer, options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_EQ((*engine)->Stats().recurrent_slots_total, 0);
  EXPECT_EQ((*engine)->Stats().recurrent_slots_used, 0);
}

}  // namespace
}  // namespace lockstep
