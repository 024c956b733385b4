// The client's timing choices that do not need privileges: which worker CPUs
// keep away from the flows' network interrupts, and the route lookup.
#include <gtest/gtest.h>

#include "flow/timing.hpp"

namespace xtk {

TEST(Timing, WorkersAvoidTheCpusTakingTheFlowsInterrupts) {
  const auto choice = choose_worker_cpus({0, 1, 2, 3}, {{"eth0", {0, 2}}, {"lo", {}}});
  EXPECT_EQ(choice.cpus, (std::vector<int>{1, 3}));
  EXPECT_EQ(choice.why, "eth0's interrupts go to CPU 0,2");
  // Two NICs: neither one's CPUs.
  EXPECT_EQ(choose_worker_cpus({0, 1, 2, 3}, {{"eth0", {0}}, {"eth1", {1, 2}}}).cpus, (std::vector<int>{3}));
}

TEST(Timing, NoPinningWhereNothingCanBeAvoided) {
  // Loopback and veth take no device interrupts: nothing to keep away from.
  auto choice = choose_worker_cpus({0, 1}, {{"lo", {}}});
  EXPECT_TRUE(choice.cpus.empty());
  EXPECT_EQ(choice.why, "not pinned: lo takes no device interrupts");
  // Interrupts on every CPU this process may use.
  choice = choose_worker_cpus({0, 1}, {{"eth0", {0, 1}}});
  EXPECT_TRUE(choice.cpus.empty());
  EXPECT_EQ(choice.why, "not pinned: eth0's interrupts go to CPU 0-1, all this process may use");
  // Interrupts only outside this process's CPUs: all of them are away already.
  choice = choose_worker_cpus({2, 3}, {{"eth0", {0}}});
  EXPECT_TRUE(choice.cpus.empty());
  EXPECT_EQ(choice.why, "not pinned: eth0's interrupts go to CPU 0, none this process uses");
  EXPECT_TRUE(choose_worker_cpus({0, 1}, {}).cpus.empty());
}

TEST(Timing, LoopbackRoutesThroughLoAndLoHasNoInterrupts) {
  EXPECT_EQ(route_interface(resolve_address("127.0.0.1", 7000, "test")), "lo");
  EXPECT_TRUE(interface_interrupt_cpus("lo").empty());
  EXPECT_TRUE(interface_interrupt_cpus("no-such-interface").empty());
}

TEST(Timing, TurnedOffAskForNothingAndLackNothing) {
  TimingRequest request;
  request.realtime = false;
  request.pinning = CpuPinning::none;
  request.cpu_wake_latency_ns = kWakeLatencyNone;
  const Timing timing(request, {});
  EXPECT_FALSE(timing.realtime());
  EXPECT_TRUE(timing.worker_cpus().empty());
  EXPECT_TRUE(timing.lacking().empty());
  EXPECT_EQ(timing.describe(), "normal priority; workers not pinned: --cpus none; no PM QoS request");
}

// Bulk streams drop SCHED_FIFO and the automatic PM QoS request, and keep a
// latency the user gave and the CPU choice.
TEST(Timing, BulkStreamsKeepNoStartTimes) {
  TimingRequest r;
  r.pinning = CpuPinning::list;
  r.cpus = {1};
  const auto bulk = r.without_start_times();
  EXPECT_FALSE(bulk.realtime);
  EXPECT_EQ(bulk.cpu_wake_latency_ns, kWakeLatencyNone);
  EXPECT_EQ(bulk.pinning, CpuPinning::list);
  EXPECT_EQ(bulk.cpus, std::vector<int>{1});
  r.cpu_wake_latency_ns = 20'000;
  EXPECT_EQ(r.without_start_times().cpu_wake_latency_ns, 20'000);
}

}  // namespace xtk
