// Unit tests of the latency advisor's parts: the online step-time fit and the scheduler replay that prices
// combined / parallel / sequential runs.
#include <gtest/gtest.h>

#include <random>

#include "server/latency_advisor.h"
#include "server/step_time_model.h"

namespace lockstep::server {
namespace {

TEST(StepTimeModelTest, RecoversTheCoefficientsOfNoisySteps) {
  StepTimeModel model;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> rows(0, 8), prefill(0, 64), context(1, 400);
  std::normal_distribution<double> noise(1.0, 0.03);
  const double a = 2e-3, bd = 0.4e-3, bp = 0.1e-3, c = 2e-8;
  for (int i = 0; i < 4000; ++i) {
    const int d = rows(rng), p = i % 3 == 0 ? prefill(rng) : 0;
    const double attended = double(d) * context(rng) + double(p) * context(rng);
    model.Add({double(d), double(p), attended}, (a + bd * d + bp * p + c * attended) * noise(rng));
  }
  const StepTimeFit fit = model.Fit();
  EXPECT_NEAR(fit.intercept_s, a, a * 0.05);
  EXPECT_NEAR(fit.per_decode_row_s, bd, bd * 0.05);
  EXPECT_NEAR(fit.per_prefill_row_s, bp, bp * 0.05);
  EXPECT_NEAR(fit.per_attended_position_s, c, c * 0.3);
  EXPECT_EQ(fit.samples, 4000);
  EXPECT_GT(fit.multi_row_decode_samples, 2000);
  EXPECT_LT(fit.rms_relative_error, 0.06);
  EXPECT_NEAR(fit.Predict({4, 0, 800}), a + 4 * bd + 800 * c, 1e-4);
}

TEST(StepTimeModelTest, StallsOfAnotherProcessAreClippedAndCoefficientsStayNonNegative) {
  StepTimeModel model;
  for (int i = 0; i < 2000; ++i) {
    const int d = 1 + i % 6;
    double seconds = 1e-3 + 0.2e-3 * d;
    if (i % 50 == 49) seconds *= 40;                                        // the CPU was taken away
    model.Add({double(d), 0, double(d) * (50 + (i * 37) % 200)}, seconds);  // context cost-free here
  }
  const StepTimeFit fit = model.Fit();
  EXPECT_NEAR(fit.intercept_s, 1e-3, 0.25e-3);
  EXPECT_NEAR(fit.per_decode_row_s, 0.2e-3, 0.06e-3);
  EXPECT_GE(fit.per_prefill_row_s, 0);  // never seen: stays at 0, not a wild value
  EXPECT_LT(fit.per_prefill_row_s, 1e-6);
  EXPECT_GE(fit.per_attended_position_s, 0);
}

TEST(StepTimeModelTest, EmptyAndDegenerateInputsGiveZeroNotNaN) {
  StepTimeModel model;
  EXPECT_EQ(model.Fit().Predict({3, 3, 3}), 0);
  for (int i = 0; i < 100; ++i) model.Add({1, 0, 10}, 1e-3);  // one shape only: a + b·1 + c·10 = 1 ms
  const StepTimeFit fit = model.Fit();
  EXPECT_NEAR(fit.Predict({1, 0, 10}), 1e-3, 1e-6);
  model.Add({1, 0, 10}, -1);  // ignored
  model.Add({1, 0, 10}, std::nan(""));
  EXPECT_EQ(model.Fit().samples, 100);
}

StepTimeFit Fit(double a, double per_decode, double per_prefill, double per_position) {
  StepTimeFit f;
  f.intercept_s = a;
  f.per_decode_row_s = per_decode;
  f.per_prefill_row_s = per_prefill;
  f.per_attended_position_s = per_position;
  f.samples = 1000;
  f.multi_row_decode_samples = 500;
  f.max_decode_rows_seen = 64;
  return f;
}

TEST(LatencyAdvisorTest, SimulationCountsStepsLikeTheScheduler) {
  const StepTimeFit unit = Fit(1, 0, 0, 0);  // every step costs 1 s: wall = steps
  // One request: one prefill step (samples its first token) then 9 decode steps.
  EXPECT_EQ(SimulateRequests({20}, 10, 64, 512, unit).steps, 10);
  // A 1000-token prompt needs two 512-row chunks.
  EXPECT_EQ(SimulateRequests({1000}, 10, 64, 512, unit).steps, 11);
  // Four requests admitted together: still 10 steps.
  const ModePrediction four = SimulateRequests({20, 20, 20, 20}, 10, 64, 512, unit);
  EXPECT_EQ(four.steps, 10);
  EXPECT_EQ(four.ttft_s, 1);
  // max_seqs 2: two waves.
  EXPECT_EQ(SimulateRequests({20, 20, 20, 20}, 10, 2, 512, unit).steps, 20);
}

TEST(LatencyAdvisorTest, PricesRowsAndContext) {
  // 1 ms per step + 1 ms per decode row; prefill and context free.
  const StepTimeFit fit = Fit(1e-3, 1e-3, 0, 0);
  // Two requests of 3 tokens: step 1 prefills both (1 ms), steps 2-3 decode 2 rows (3 ms each).
  EXPECT_NEAR(SimulateRequests({5, 5}, 3, 64, 512, fit).wall_s, 1e-3 + 2 * 3e-3, 1e-12);
  const StepTimeFit context = Fit(0, 0, 0, 1e-6);
  // Prompt of 4: attended 1+2+3+4 = 10; decode rows at positions 4, 5 attend 5 and 6.
  EXPECT_NEAR(SimulateRequests({4}, 3, 64, 512, context).wall_s, (10 + 5 + 6) * 1e-6, 1e-15);
}

TEST(LatencyAdvisorTest, ParallelWinsWhenRowsAreCheapAndCombinedWhenTheyAreNot) {
  AdviceQuery q;
  q.questions = 5;
  q.tokens = 50;
  q.prompt_tokens = 30;
  const Advice cheap_rows = Advise(q, Fit(10e-3, 0.5e-3, 0.2e-3, 0));
  ASSERT_EQ(cheap_rows.modes.size(), 3u);
  EXPECT_EQ(cheap_rows.recommended, "parallel");
  EXPECT_TRUE(cheap_rows.confident);
  const double combined = cheap_rows.modes[0].wall_s, parallel = cheap_rows.modes[1].wall_s;
  EXPECT_GT(combined / parallel, 3.5);
  EXPECT_NEAR(cheap_rows.modes[2].wall_s,
              5 * SimulateRequests({30}, 50, 64, 512, Fit(10e-3, 0.5e-3, 0.2e-3, 0)).wall_s, 1e-9);
  // Rows as dear as whole steps: parallel gains nothing over combined.
  const Advice dear_rows = Advise(q, Fit(0, 10e-3, 0.2e-3, 0));
  EXPECT_NEAR(dear_rows.modes[0].wall_s, dear_rows.modes[1].wall_s, dear_rows.modes[0].wall_s * 0.05);

  StepTimeFit fresh = Fit(1e-3, 1e-3, 0, 0);
  fresh.samples = 3;
  EXPECT_FALSE(Advise(q, fresh).confident);
  EXPECT_NE(Advise(q, fresh).note.find("3 steps"), std::string::npos);
  fresh.samples = 500;
  fresh.multi_row_decode_samples = 0;
  EXPECT_FALSE(Advise(q, fresh).confident);
  fresh.multi_row_decode_samples = 100;
  fresh.max_decode_rows_seen = 2;  // 5 questions: parallel would decode 5 together
  EXPECT_FALSE(Advise(q, fresh).confident);
  EXPECT_NE(Advise(q, fresh).note.find("extrapolated"), std::string::npos);
  fresh.max_decode_rows_seen = 5;
  EXPECT_TRUE(Advise(q, fresh).confident);
}

}  // namespace
}  // namespace lockstep::server
