// The worker's choice of its next wait (flow/client_worker.hpp): what it
// sleeps to, and whether it spins to a start at the end.
#include <gtest/gtest.h>

#include <cstdint>

#include "flow/client_worker.hpp"

namespace xtk::client_detail {
namespace {

constexpr std::int64_t kNow = 1'000'000'000;
constexpr std::int64_t kSweep = kNow + 10'000'000;  // when the worker wakes anyway
constexpr std::int64_t kSpin = 100'000;

TEST(NextWait, AStartBeforeTheSweepIsSpunTo) {
  const NextWait w = next_wait(kNow, kSweep, kNow + 2'000'000, true, false, kSpin);
  EXPECT_EQ(w.deadline, kNow + 2'000'000);
  EXPECT_TRUE(w.spin);
}

// Sleeping to the sweep's time, the worker would wake after this start as
// late as the kernel wakes it.
TEST(NextWait, AStartWithinSpinAfterTheSweepTakesItsPlace) {
  for (const std::int64_t after : {std::int64_t{1}, std::int64_t{10'000}, kSpin}) {
    const NextWait w = next_wait(kNow, kSweep, kSweep + after, true, false, kSpin);
    EXPECT_EQ(w.deadline, kSweep + after) << after;
    EXPECT_TRUE(w.spin) << after;
  }
}

TEST(NextWait, AStartLaterThanThatWaitsForTheSweep) {
  const NextWait w = next_wait(kNow, kSweep, kSweep + kSpin + 1, true, false, kSpin);
  EXPECT_EQ(w.deadline, kSweep);
  EXPECT_FALSE(w.spin);
}

TEST(NextWait, AStartWithNoConnectionFreeIsNotSpunToAndWakesAtMostEveryBatch) {
  NextWait w = next_wait(kNow, kSweep, kNow + 2'000'000, false, false, kSpin);
  EXPECT_EQ(w.deadline, kNow + 2'000'000);
  EXPECT_FALSE(w.spin);
  w = next_wait(kNow, kSweep, kNow - 1'000, false, false, kSpin);  // due already
  EXPECT_EQ(w.deadline, kNow + kBatchNs);
  EXPECT_FALSE(w.spin);
}

// With the backlog full only an event (a connection freed) lets a flow leave
// the ring: no timer for it.
TEST(NextWait, WithTheBacklogFullOnlyTheSweepIsWaitedFor) {
  const NextWait w = next_wait(kNow, kSweep, kNow - 1'000, true, true, kSpin);
  EXPECT_EQ(w.deadline, kSweep);
  EXPECT_FALSE(w.spin);
}

TEST(NextWait, NoFlowOnTheRingWaitsForTheSweep) {
  const NextWait w = next_wait(kNow, kSweep, INT64_MAX, true, false, kSpin);
  EXPECT_EQ(w.deadline, kSweep);
  EXPECT_FALSE(w.spin);
}

}  // namespace
}  // namespace xtk::client_detail
