#include "core/handoff.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace xtk {
namespace {

struct Numbers {
  std::vector<int> values;
};

TEST(Handoff, BatchesArriveInOrderAndComeBackToBeFilledAgain) {
  Handoff<Numbers> handoff(2);  // far fewer batches than rounds: each one is refilled many times
  std::vector<int> seen;
  std::vector<const Numbers*> batches_seen;
  std::thread second([&] {
    while (Numbers* b = handoff.take_full()) {
      seen.insert(seen.end(), b->values.begin(), b->values.end());
      batches_seen.push_back(b);
      b->values.clear();
      handoff.put_empty(b);
    }
  });
  int next = 0;
  for (int round = 0; round < 500; ++round) {
    Numbers* b = handoff.take_empty();
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(b->values.empty()) << "handed back emptied";
    for (int i = 0; i < 7; ++i) b->values.push_back(next++);
    handoff.put_full(b);
  }
  handoff.finish();
  second.join();
  ASSERT_EQ(seen.size(), 3500u);
  for (int i = 0; i < 3500; ++i) ASSERT_EQ(seen[static_cast<std::size_t>(i)], i);
  std::sort(batches_seen.begin(), batches_seen.end());
  EXPECT_EQ(std::unique(batches_seen.begin(), batches_seen.end()) - batches_seen.begin(), 2) << "only its own batches";
}

TEST(Handoff, AStoppedSecondStageReleasesAFirstStageWaitingForABatch) {
  Handoff<Numbers> handoff(1);
  Numbers* only = handoff.take_empty();
  ASSERT_NE(only, nullptr);
  handoff.put_full(only);
  std::thread second([&] {
    ASSERT_EQ(handoff.take_full(), only);
    handoff.stop();  // as on an error: the batch is never given back
  });
  EXPECT_EQ(handoff.take_empty(), nullptr) << "waited for the one batch, then got none";
  second.join();
  handoff.finish();
  EXPECT_EQ(handoff.take_full(), nullptr);
}

}  // namespace
}  // namespace xtk
