// Fits t = A exp(B / (C - BW)^n) recover known A, B and n from noisy data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "analysis/fit.hpp"

namespace xtk::analysis {
namespace {

struct Data {
  std::vector<double> load, time;
};

// 21 loads from 0 to 24 Gbit/s on a 25 Gbit/s link, multiplicative noise.
Data synthetic(double a, double b, double n, double noise, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, noise);
  Data d;
  for (int i = 0; i <= 20; ++i) {
    const double load = 24.0 * i / 20;
    d.load.push_back(load);
    d.time.push_back(a * std::exp(b / std::pow(25.0 - load, n)) * (1 + dist(rng)));
  }
  return d;
}

}  // namespace

TEST(AnalysisFit, ExactDataGivesExactParameters) {
  const auto d = synthetic(120000, 3.0, 1.0, 0.0, 1);
  const auto fit = fit_iteration_time(d.load, d.time, 25, 1.0);
  ASSERT_TRUE(fit.ok()) << fit.status;
  EXPECT_NEAR(fit.a_us, 120000, 1e-3);
  EXPECT_NEAR(fit.b, 3.0, 1e-9);
  EXPECT_NEAR(fit.r2, 1.0, 1e-12);
  EXPECT_EQ(fit.points, 21u);
  EXPECT_NEAR(fit.at(20), 120000 * std::exp(3.0 / 5), 1e-3);
}

TEST(AnalysisFit, RecoversKnownParametersFromNoisyData) {
  struct Truth {
    double a, b, n;
  };
  for (const auto& truth : {Truth{100000, 5.0, 1.0}, Truth{80000, 2.0, 0.5}, Truth{150000, 12.0, 2.0}}) {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      const auto d = synthetic(truth.a, truth.b, truth.n, 0.02, seed);
      const auto fits = fit_candidates(d.load, d.time, 25, std::nullopt);
      ASSERT_EQ(fits.size(), 3u);
      const ExpFit* best = nullptr;
      for (const auto& f : fits) {
        ASSERT_TRUE(f.ok()) << f.status;
        if (best == nullptr || f.r2 > best->r2) best = &f;
      }
      const std::string what = "n " + std::to_string(truth.n) + " seed " + std::to_string(seed);
      EXPECT_EQ(best->n, truth.n) << what;
      EXPECT_NEAR(best->a_us / truth.a, 1.0, 0.03) << what;
      EXPECT_NEAR(best->b / truth.b, 1.0, 0.05) << what;
      EXPECT_GT(best->r2, 0.99) << what;
      // The standard errors cover the truth (within 4 sigma).
      EXPECT_LT(std::abs(best->b - truth.b), 4 * best->b_stderr + 1e-12) << what;
      EXPECT_GT(best->a_stderr_us, 0) << what;
    }
  }
}

TEST(AnalysisFit, LoadsAtOrAboveCapacityAreLeftOut) {
  auto d = synthetic(100000, 5.0, 1.0, 0.0, 1);
  d.load.push_back(25.0);
  d.time.push_back(1e12);
  d.load.push_back(25.3);  // measured loads can exceed the nominal capacity
  d.time.push_back(1e12);
  const auto fit = fit_iteration_time(d.load, d.time, 25, 1.0);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit.points, 21u);
  EXPECT_NEAR(fit.b, 5.0, 1e-9);
}

TEST(AnalysisFit, TooFewPointsOrOneLoad) {
  EXPECT_EQ(fit_iteration_time({1, 2}, {10, 20}, 25, 1.0).status, "too few points below capacity (2; a fit needs 3)");
  EXPECT_TRUE(std::isnan(fit_iteration_time({1, 2}, {10, 20}, 25, 1.0).r2));
  EXPECT_EQ(fit_iteration_time({3, 3, 3}, {10, 11, 12}, 25, 1.0).status, "all points at one load: nothing to fit");
  EXPECT_EQ(fit_candidates({0, 10, 20}, {1, 2, 8}, 25, 2.0).size(), 1u);
}

TEST(AnalysisFit, HyperbolicRescale) {
  EXPECT_DOUBLE_EQ(rescaled_load(0, 25), 1.0);
  EXPECT_DOUBLE_EQ(rescaled_load(20, 25), 5.0);
}

}  // namespace xtk::analysis
