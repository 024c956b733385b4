#include "core/handoff.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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

TEST(Handoff, AStageThatWaitsSleepsUntilHalfTheBatchesAreReady) {
  Handoff<Numbers> handoff(4);
  std::vector<Numbers*> filled;
  for (int i = 0; i < 4; ++i) {
    filled.push_back(handoff.take_empty());
    handoff.put_full(filled.back());
  }
  std::atomic<bool> got{false};
  std::thread first([&] {
    EXPECT_NE(handoff.take_empty(), nullptr);
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the first stage is waiting
  ASSERT_EQ(handoff.take_full(), filled[0]);
  handoff.put_empty(filled[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got) << "woken by one batch of four";
  ASSERT_EQ(handoff.take_full(), filled[1]);
  handoff.put_empty(filled[1]);
  first.join();
  EXPECT_TRUE(got);
  handoff.finish();
}

TEST(Handoff, TheEndReleasesASecondStageWaitingForMoreBatchesThanCame) {
  Handoff<Numbers> handoff(4);
  std::vector<int> seen;
  std::thread second([&] {
    while (Numbers* b = handoff.take_full()) {
      seen.insert(seen.end(), b->values.begin(), b->values.end());
      handoff.put_empty(b);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the second stage is waiting
  Numbers* b = handoff.take_empty();
  b->values = {1, 2, 3};
  handoff.put_full(b);  // one of the two it waits for
  handoff.finish();
  second.join();
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
}

}  // namespace
}  // namespace xtk
