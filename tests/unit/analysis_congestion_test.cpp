// The two-line congestion point: on synthetic flat-then-exponential series it
// lands within one step of the true knee, and says why when there is none.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "analysis/congestion.hpp"

namespace xtk::analysis {

TEST(AnalysisCongestion, HandComputedIntersection) {
  // Flat at 8000 up to 5, then 10000 and 13000: tangent slope 3000, so the
  // lines meet at 6 - 2000 / 3000 = 5.333, nearest the point at 5.
  const std::vector<double> x{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<double> y{8000, 8000, 8000, 8000, 8000, 8000, 10000, 13000, 20000, 40000};
  const auto cp = find_congestion_point(x, y, {});
  ASSERT_TRUE(cp.ok()) << cp.status;
  EXPECT_EQ(cp.flat_points, 6u);
  EXPECT_EQ(cp.tangent_points, 2u);
  EXPECT_DOUBLE_EQ(cp.flat.slope, 0);
  EXPECT_DOUBLE_EQ(cp.flat.intercept, 8000);
  EXPECT_DOUBLE_EQ(cp.tangent.slope, 3000);
  EXPECT_NEAR(cp.intersection_x, 16.0 / 3, 1e-12);
  EXPECT_EQ(cp.nearest, 5u);
  EXPECT_DOUBLE_EQ(cp.first_congested_reference, 8000);  // what the 10000 at 6 was held to
  // Three tangent points: least squares through (6,10000), (7,13000), (8,20000).
  const auto three = find_congestion_point(x, y, {0.05, 3});
  ASSERT_TRUE(three.ok());
  EXPECT_DOUBLE_EQ(three.tangent.slope, 5000);
}

TEST(AnalysisCongestion, SyntheticSeriesWithinOneStepOfTheTruth) {
  // 20 steps of 1.25 Gbit/s on a 25 Gbit/s link; flat at 100 ms with 1 %
  // noise up to the knee, then growing by exp(k (x - knee)).
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.01);
  int trials = 0;
  for (int knee_step : {6, 9, 12, 15}) {
    for (double k : {0.25, 0.5, 1.0}) {
      for (int seed = 0; seed < 5; ++seed) {
        std::vector<double> x, y;
        const double knee = knee_step * 1.25;
        for (int i = 0; i < 20; ++i) {
          const double load = i * 1.25;
          const double t = 100000 * (load <= knee ? 1.0 : std::exp(k * (load - knee)));
          x.push_back(load);
          y.push_back(t * (1 + noise(rng)));
        }
        const auto cp = find_congestion_point(x, y, {});
        ASSERT_TRUE(cp.ok()) << cp.status << " knee " << knee << " k " << k;
        EXPECT_LE(std::abs(static_cast<int>(cp.nearest) - knee_step), 1)
            << "knee step " << knee_step << " k " << k << " found " << cp.nearest << " (x* " << cp.intersection_x
            << ")";
        ++trials;
      }
    }
  }
  EXPECT_EQ(trials, 60);
}

TEST(AnalysisCongestion, NoCongestionPointSaysWhy) {
  EXPECT_EQ(find_congestion_point({0, 1}, {1, 1}, {}).status, "too few steps (2; the method needs 3 or more)");
  EXPECT_EQ(find_congestion_point({0, 1, 2, 3}, {100, 101, 99, 102}, {}).status,
            "not reached: every step is within 5 % of the flat line");
  EXPECT_EQ(find_congestion_point({0, 1, 2, 3}, {100, 101, 99, 200}, {}).status,
            "only the last step is congested: a tangent needs 2 points");
  EXPECT_EQ(find_congestion_point({0, 1, 2, 3}, {100, 120, 150, 200}, {}).status,
            "no flat region: the second step is more than 5 % above the first");
  // A jump, then a fall: the "tangent" does not rise.
  EXPECT_EQ(find_congestion_point({0, 1, 2, 3}, {100, 100, 300, 200}, {}).status,
            "the congested steps do not rise faster than the flat line");
  // seed-001's DenseNet-161 under long-lived flows (Gbit/s, ms): flat to
  // 0.684, then 4 % and 1 % more; the two lines met at 0.055, which the
  // method then reported as the 0.1 step.
  EXPECT_EQ(find_congestion_point({0.0, 0.1, 0.2, 0.301, 0.4, 0.5, 0.6, 0.684, 0.752, 0.818},
                                  {385.6, 384.1, 385.7, 384.7, 385.4, 387.1, 393.4, 405.4, 421.5, 425.2}, {})
                .status.rfind("the congested steps rise too gently: their line meets the flat line at 0.0", 0),
            0u);
  // A looser tolerance keeps 106 in the flat region.
  const auto loose = find_congestion_point({0, 1, 2, 3, 4}, {100, 100, 106, 150, 200}, {0.10, 2});
  ASSERT_TRUE(loose.ok());
  EXPECT_EQ(loose.flat_points, 3u);
}

TEST(AnalysisCongestion, TangentSpansMoreThanOneLoad) {
  // demo run 1's consistent series (Gbit/s, ms): the 60 % and 70 % steps
  // measured 0.658 and 0.647 Gbit/s. Through those two alone the tangent fell.
  const std::vector<double> x{0, 0.105, 0.202, 0.295, 0.415, 0.476, 0.647, 0.658, 0.804, 0.951};
  const std::vector<double> y{821.3, 823.6, 824.7, 827.4, 839.4, 841.4, 938.2, 947.9, 1785.3, 4577.3};
  const auto cp = find_congestion_point(x, y, {});
  ASSERT_TRUE(cp.ok()) << cp.status;
  EXPECT_EQ(cp.flat_points, 6u);
  EXPECT_EQ(cp.tangent_points, 3u);  // 0.011 apart, below half the median step (0.1 / 2): the next step joins
  EXPECT_GT(cp.tangent.slope, cp.flat.slope);
  EXPECT_GT(cp.intersection_x, 0.476);
  EXPECT_LT(cp.intersection_x, 0.658);
  // Steps far enough apart keep the two-point tangent.
  EXPECT_EQ(find_congestion_point({0, 1, 2, 3, 4}, {100, 100, 100, 150, 200}, {}).tangent_points, 2u);
}

TEST(AnalysisCongestion, TangentTakesTheNextStepWhenItMeetsInsideTheFlatRegion) {
  // demo-fine's consistent series (Gbit/s, ms): the first two congested steps
  // (0.608, 0.658) are 12 % above the flat region and 0.5 % apart in time; the
  // line through them met the flat line at -1.59, so no point was reported.
  const std::vector<double> x{0, 0.193, 0.404, 0.483, 0.510, 0.522, 0.608, 0.658, 0.724, 0.848};
  const std::vector<double> y{822.6, 829.7, 840.8, 851.6, 855.1, 845.2, 956.0, 961.1, 1181.8, 2233.9};
  const auto cp = find_congestion_point(x, y, {});
  ASSERT_TRUE(cp.ok()) << cp.status;
  EXPECT_EQ(cp.flat_points, 6u);
  EXPECT_EQ(cp.tangent_points, 3u);
  EXPECT_GT(cp.intersection_x, 0.522);
  EXPECT_LT(cp.intersection_x, 0.608);
  // A falling pair is the same noise: the next step decides.
  const auto fall = find_congestion_point({0, 1, 2, 3, 4, 5}, {100, 100, 100, 150, 148, 300}, {});
  ASSERT_TRUE(fall.ok()) << fall.status;
  EXPECT_EQ(fall.tangent_points, 3u);
  EXPECT_GT(fall.intersection_x, 2);
  EXPECT_LT(fall.intersection_x, 3);
}

}  // namespace xtk::analysis
