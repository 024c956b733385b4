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

// Until `waits` holds, or 10 s: a thread only just started may not run for a
// while on a loaded machine, so no fixed sleep can be sure it is waiting yet.
template <typename Waits>
bool until(Waits waits) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!waits()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

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
  EXPECT_TRUE(until([&] { return handoff.first_stage_waits(); }));
  ASSERT_EQ(handoff.take_full(), filled[0]);
  handoff.put_empty(filled[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // time to wake, were it woken
  EXPECT_FALSE(got) << "woken by one batch of four";
  EXPECT_TRUE(handoff.first_stage_waits());
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
  EXPECT_TRUE(until([&] { return handoff.second_stage_waits(); }));
  Numbers* b = handoff.take_empty();
  b->values = {1, 2, 3};
  handoff.put_full(b);  // one of the two it waits for
  handoff.finish();
  second.join();
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
}

}  // namespace
}  // namespace xtk
