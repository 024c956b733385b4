#include <gtest/gtest.h>

#include "flow/client_worker.hpp"

namespace xtk::client_detail {
namespace {

PlannedFlow planned(std::uint64_t id) {
  PlannedFlow p;
  p.id = id;
  p.size_bytes = 100;
  return p;
}

std::string error_of(const FinishedFlows& f, std::size_t i) {
  const std::uint32_t e = f.flows[i].error;
  return e == 0 ? "" : f.errors[e - 1];
}

// A worker's batch joins what the feeder has not drained yet: each flow keeps
// its own error text, the indices rebased past the errors already there.
TEST(FinishedFlows, ABatchTakenAfterAnotherKeepsEachFlowsError) {
  FinishedFlows shared, first, second;
  first.add(planned(1), 10, 20, FlowStatus::ok, "", 100);
  first.add(planned(2), 0, 0, FlowStatus::failed, "refused", 100);
  second.add(planned(3), 0, 0, FlowStatus::timeout, "no end", 100);
  second.add(planned(4), 30, 40, FlowStatus::ok, "", 100);
  second.add(planned(5), 0, 0, FlowStatus::cancelled, "interrupted", 100);
  shared.take(first);  // empty before: the vectors trade places
  EXPECT_TRUE(first.flows.empty() && first.errors.empty());
  shared.take(second);  // appended
  EXPECT_TRUE(second.flows.empty() && second.errors.empty());
  ASSERT_EQ(shared.flows.size(), 5u);
  const std::vector<std::string> expected{"", "refused", "no end", "", "interrupted"};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(shared.flows[i].plan.id, i + 1);
    EXPECT_EQ(error_of(shared, i), expected[i]) << "flow " << i + 1;
  }
  EXPECT_EQ(shared.flows[3].start_abs, 30);
  EXPECT_EQ(shared.flows[3].end_abs, 40);
}

}  // namespace
}  // namespace xtk::client_detail
