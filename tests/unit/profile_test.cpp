#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "workload/cdf.hpp"
#include "workload/profile.hpp"

namespace xtk {
namespace {

const FlowSizeCdf& web_search() {
  static const FlowSizeCdf cdf = FlowSizeCdf::load_file(std::string(XTK_CDF_DIR) + "/web-search.cdf");
  return cdf;
}

std::vector<Arrival> drain(ArrivalProcess& process) {
  std::vector<Arrival> out;
  Arrival a;
  while (process.next(a)) out.push_back(a);
  return out;
}

double offered_bps(const std::vector<Arrival>& flows, std::int64_t duration_ns) {
  double bytes = 0;
  for (const auto& f : flows) bytes += static_cast<double>(f.size_bytes);
  return bytes * 8e9 / static_cast<double>(duration_ns);
}

}  // namespace

TEST(Consistent, SixtySecondsAt25GbpsOffersTheTargetWithinOnePercent) {
  constexpr double rate = 25e9;
  constexpr std::int64_t duration = 60'000'000'000;
  auto process = make_consistent(web_search(), rate, duration, Rng(1, 1), Rng(1, 2));
  const auto flows = drain(*process);
  EXPECT_NEAR(offered_bps(flows, duration) / rate, 1.0, 0.01);
  // The flow count of a Poisson process: mean lambda T, within 4 sigma.
  const double expected = rate * 60 / 8 / web_search().mean_bytes();
  EXPECT_NEAR(static_cast<double>(flows.size()), expected, 4 * std::sqrt(expected));
  EXPECT_TRUE(std::is_sorted(flows.begin(), flows.end(),
                             [](const Arrival& a, const Arrival& b) { return a.start_ns < b.start_ns; }));
  EXPECT_LT(flows.back().start_ns, duration);
}

TEST(Consistent, GapsAreExponentialWithTheMeanSizeOverTheRate) {
  constexpr double rate = 10e9;
  auto process = make_consistent(web_search(), rate, 30'000'000'000, Rng(2, 1), Rng(2, 2));
  const auto flows = drain(*process);
  const double mean_gap_ns = web_search().mean_bytes() * 8 / rate * 1e9;
  std::vector<double> gaps;
  std::int64_t last = 0;
  for (const auto& f : flows) {
    gaps.push_back(static_cast<double>(f.start_ns - last));
    last = f.start_ns;
  }
  std::sort(gaps.begin(), gaps.end());
  double sum = 0, d = 0;
  const double n = static_cast<double>(gaps.size());
  for (std::size_t i = 0; i < gaps.size(); ++i) {
    sum += gaps[i];
    const double f = 1 - std::exp(-gaps[i] / mean_gap_ns);
    d = std::max({d, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
  }
  EXPECT_NEAR(sum / n / mean_gap_ns, 1.0, 4 / std::sqrt(n));
  EXPECT_LT(d, 1.95 / std::sqrt(n));  // KS at alpha = 0.001
}

TEST(Consistent, ZeroLoadHasNoFlows) {
  auto process = make_consistent(web_search(), 0, 1'000'000'000, Rng(1, 1), Rng(1, 2));
  EXPECT_TRUE(drain(*process).empty());
}

struct BurstCase {
  double rate_bps;
  std::int64_t duration_ns;
  friend std::ostream& operator<<(std::ostream& out, const BurstCase& c) {
    return out << c.rate_bps / 1e9 << " Gbit/s for " << c.duration_ns / 1'000'000'000 << " s";
  }
};

class BurstDefaults : public ::testing::TestWithParam<BurstCase> {};

// The seed's profile with defaults: 1 ms at 3x every 10 ms, the rest at 0.78x.
TEST_P(BurstDefaults, WindowsCarryThreeTimesTheMeanAndTheRestTheRemainder) {
  const auto [rate, duration] = GetParam();
  const BurstShape shape;  // width 1 ms, period 10 ms, height 3
  auto process = make_burst(web_search(), rate, duration, shape, Rng(3, 1), Rng(3, 2));
  const auto flows = drain(*process);
  const std::int64_t period = shape.period();
  const std::int64_t periods = duration / period;
  std::map<std::int64_t, int> burst_flows, rest_flows;
  double burst_bytes = 0, rest_bytes = 0;
  for (const auto& f : flows) {
    const bool in_burst = f.start_ns % period < shape.width_ns;
    (in_burst ? burst_flows : rest_flows)[f.start_ns / period]++;
    (in_burst ? burst_bytes : rest_bytes) += static_cast<double>(f.size_bytes);
  }
  const double mean_bps = offered_bps(flows, duration);
  const double burst_bps = burst_bytes * 8e9 / static_cast<double>(periods * shape.width_ns);
  const double rest_bps = rest_bytes * 8e9 / static_cast<double>(periods * (period - shape.width_ns));
  EXPECT_NEAR(burst_bps / mean_bps, 3.0, 0.3);
  EXPECT_NEAR(rest_bps / mean_bps, 0.7 / 0.9, 0.05);
  EXPECT_NEAR(mean_bps / rate, 1.0, 0.05);
  ASSERT_EQ(static_cast<std::int64_t>(burst_flows.size()), periods) << "a burst window without flows";
  ASSERT_EQ(static_cast<std::int64_t>(rest_flows.size()), periods);
  for (const auto& [p, n] : burst_flows) ASSERT_GE(n, 2) << "period " << p;
  for (const auto& [p, n] : rest_flows) ASSERT_GE(n, 8) << "period " << p;
}

INSTANTIATE_TEST_SUITE_P(Rates, BurstDefaults,
                         ::testing::Values(BurstCase{25e9, 20'000'000'000},  // flows at full size
                                           BurstCase{1e9, 60'000'000'000}),  // sizes scaled to fit
                         [](const auto& test) { return test.param.rate_bps > 2e9 ? "25G" : "1G"; });

TEST(Burst, ShapeSharesAndValidation) {
  BurstShape shape;
  EXPECT_EQ(shape.period(), 10'000'000);
  EXPECT_DOUBLE_EQ(shape.burst_share(), 0.3);
  EXPECT_NEAR(shape.rest_factor(), 0.7 / 0.9, 1e-12);
  shape.height = 11;  // 11 x 1 ms would need more than the period's bytes
  EXPECT_THROW(shape.validate(), UsageError);
  shape.height = 0.5;
  EXPECT_THROW(shape.validate(), UsageError);
  shape.height = 3;
  shape.period_ns = 1'000'000;
  EXPECT_THROW(shape.validate(), UsageError);
}

TEST(Burst, CustomShapeStaysOnItsGrid) {
  BurstShape shape;
  shape.width_ns = 2'000'000;
  shape.period_ns = 50'000'000;
  shape.height = 5;
  auto process = make_burst(web_search(), 10e9, 5'000'000'000, shape, Rng(4, 1), Rng(4, 2));
  double burst_bytes = 0, all_bytes = 0;
  for (const auto& f : drain(*process)) {
    all_bytes += static_cast<double>(f.size_bytes);
    if (f.start_ns % shape.period_ns < shape.width_ns) burst_bytes += static_cast<double>(f.size_bytes);
  }
  EXPECT_NEAR(burst_bytes / all_bytes, shape.burst_share(), 0.03);  // 5 x 2 / 50 = 20 %
}

TEST(LongLived, FlowsRunTheWholeDurationAtTheirShareOfTheLoad) {
  auto process = make_long_lived(4, 1e9, 10'000'000'000, 0);
  const auto flows = drain(*process);
  ASSERT_EQ(flows.size(), 4u);
  for (const auto& f : flows) {
    EXPECT_EQ(f.start_ns, 0);
    EXPECT_EQ(f.rate_bps, 250'000'000u);
    EXPECT_EQ(f.size_bytes, 312'500'000u);  // 250 Mbit/s x 10 s
  }
  auto staggered = make_long_lived(3, 3e9, 10'000'000'000, 1'000'000'000);
  const auto s = drain(*staggered);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[2].start_ns, 2'000'000'000);
  EXPECT_EQ(s[2].size_bytes, 1'000'000'000u);  // 1 Gbit/s for the 8 s left
}

}  // namespace xtk
