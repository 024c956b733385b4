#include "flow/spsc_ring.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace xtk {
namespace {

TEST(SpscRing, HoldsItsCapacityInOrderAcrossTheWrap) {
  SpscRing<int> ring(5);  // 8 slots: room for 7
  int pushed = 0;
  while (ring.push(pushed)) ++pushed;
  EXPECT_GE(pushed, 5);
  EXPECT_EQ(ring.peek(static_cast<std::size_t>(pushed)), nullptr);
  ASSERT_NE(ring.peek(static_cast<std::size_t>(pushed - 1)), nullptr);
  EXPECT_EQ(*ring.peek(static_cast<std::size_t>(pushed - 1)), pushed - 1);
  // Many times around the slots: every element comes out once, in order.
  int next_out = 0;
  for (int round = 0; round < 100; ++round) {
    ASSERT_NE(ring.front(), nullptr);
    EXPECT_EQ(*ring.front(), next_out++);
    ring.pop();
    ASSERT_TRUE(ring.push(pushed++));
    EXPECT_FALSE(ring.push(-1)) << "full again";
  }
  while (const int* v = ring.front()) {
    EXPECT_EQ(*v, next_out++);
    ring.pop();
  }
  EXPECT_EQ(next_out, pushed);
}

TEST(SpscRing, ProducerAndConsumerThreadsLoseNothing) {
  SpscRing<long> ring(64);
  constexpr long kCount = 200'000;
  std::thread producer([&] {
    for (long i = 0; i < kCount;) {
      if (ring.push(i)) ++i;
    }
  });
  long expected = 0, out_of_order = 0;
  while (expected < kCount) {
    if (const long* v = ring.front()) {
      if (*v != expected) ++out_of_order;
      ++expected;
      ring.pop();
    }
  }
  producer.join();
  EXPECT_EQ(out_of_order, 0);
  EXPECT_EQ(ring.front(), nullptr);
}

}  // namespace
}  // namespace xtk
