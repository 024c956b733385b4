#include "flow/late_starts.hpp"

#include <gtest/gtest.h>

namespace xtk {
namespace {

// Times in us from the scheduled start (due = 0) for readability.
StartTimes at(std::int64_t handed_us, std::int64_t taken_us, std::int64_t asleep_us, std::int64_t started_us) {
  return {1'000'000, 1'000'000 + handed_us * 1000, 1'000'000 + taken_us * 1000, asleep_us * 1000,
          1'000'000 + started_us * 1000};
}

TEST(LateStarts, PartsAddUpToTheLateness) {
  // Handed 50 us late, asleep 30 us past that, taken 200 us late, started 1000 us late.
  const auto p = LatenessParts::of(at(50, 200, 30, 1000));
  EXPECT_EQ(p.ns[static_cast<std::size_t>(LateCause::feeder)], 50'000);
  EXPECT_EQ(p.ns[static_cast<std::size_t>(LateCause::wake_up)], 30'000);
  EXPECT_EQ(p.ns[static_cast<std::size_t>(LateCause::worker)], 120'000);
  EXPECT_EQ(p.ns[static_cast<std::size_t>(LateCause::connection)], 800'000);
  EXPECT_EQ(p.longest(), LateCause::connection);
  // Handed early: no feeder part, and the worker's parts count from the scheduled start.
  const auto q = LatenessParts::of(at(-500, 400, 350, 401));
  EXPECT_EQ(q.ns[static_cast<std::size_t>(LateCause::feeder)], 0);
  EXPECT_EQ(q.longest(), LateCause::wake_up);
  // A sleep reported longer than the time it could span is cut to it.
  const auto r = LatenessParts::of(at(0, 100, 900, 100));
  EXPECT_EQ(r.ns[static_cast<std::size_t>(LateCause::wake_up)], 100'000);
  EXPECT_EQ(r.ns[static_cast<std::size_t>(LateCause::worker)], 0);
}

TEST(LateStarts, CountsOnlyFlowsLaterThan100usUnderTheirLongestPart) {
  LateStarts a;
  a.add(at(0, 0, 0, 100));        // exactly 100 us: not late
  a.add(at(90, 95, 0, 120));      // feeder 90 of 120
  a.add(at(0, 700, 650, 710));    // wake-up
  a.add(at(0, 2500, 100, 2600));  // worker
  a.add(at(0, 10, 0, 5000));      // connection, the latest
  EXPECT_EQ(a.flows(LateCause::feeder), 1u);
  EXPECT_EQ(a.flows(LateCause::wake_up), 1u);
  EXPECT_EQ(a.flows(LateCause::worker), 1u);
  EXPECT_EQ(a.flows(LateCause::connection), 1u);
  EXPECT_EQ(a.total(), 4u);
  EXPECT_EQ(a.max_ns(), 5'000'000);
  EXPECT_EQ(a.max_cause(), LateCause::connection);
  EXPECT_EQ(a.describe(), "feeder 1, wake-up 1, worker 1, connection 1; latest 5000.0 us: connection");
  const auto j = a.to_json();
  EXPECT_EQ(j["wake-up"], 1);
  EXPECT_EQ(j["latest_cause"], "connection");
  EXPECT_TRUE(LateStarts().to_json()["latest_cause"].is_null());
  EXPECT_EQ(LateStarts().describe(), "feeder 0, wake-up 0, worker 0, connection 0");
}

}  // namespace
}  // namespace xtk
