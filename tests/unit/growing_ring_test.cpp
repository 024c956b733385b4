#include "flow/growing_ring.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <vector>

namespace xtk {
namespace {

std::vector<int> contents(const GrowingRing<int>& ring) {
  std::vector<int> out;
  ring.for_each([&](int v) { out.push_back(v); });
  return out;
}

TEST(GrowingRing, KeepsOrderThroughGrowthAndTheWrap) {
  GrowingRing<int> ring;
  EXPECT_TRUE(ring.empty());
  ring.push_front(-1);  // before anything else: the head wraps below zero
  for (int i = 0; i < 40; ++i) ring.push_back(i);
  ring.push_front(-2);
  ASSERT_EQ(ring.size(), 42u);
  std::vector<int> expected{-2, -1};
  for (int i = 0; i < 40; ++i) expected.push_back(i);
  EXPECT_EQ(contents(ring), expected);
  EXPECT_EQ(ring.front(), -2);
  ring.clear();
  EXPECT_TRUE(ring.empty());
  EXPECT_TRUE(contents(ring).empty());
}

// Against std::deque, the queue it replaces: the same elements, in the same
// order, after every step of a long random mix of pushes at both ends and pops.
TEST(GrowingRing, MatchesADequeStepByStep) {
  std::mt19937 random(7);
  GrowingRing<int> ring;
  std::deque<int> deque;
  for (int step = 0; step < 20'000; ++step) {
    const auto roll = random() % 8;
    if (roll < 4) {
      ring.push_back(step);
      deque.push_back(step);
    } else if (roll == 4) {
      ring.push_front(step);
      deque.push_front(step);
    } else if (!deque.empty()) {
      ASSERT_EQ(ring.front(), deque.front()) << "step " << step;
      ring.pop_front();
      deque.pop_front();
    }
    ASSERT_EQ(ring.size(), deque.size()) << "step " << step;
  }
  EXPECT_EQ(contents(ring), std::vector<int>(deque.begin(), deque.end()));
}

}  // namespace
}  // namespace xtk
