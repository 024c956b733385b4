#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/error.hpp"
#include "workload/mix.hpp"
#include "workload/pattern.hpp"

namespace xtk {
namespace {

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Mix, HostsWithWeightsAndIpv6) {
  const auto mix = parse_host_mix("h1:3,h2,10.0.0.2:2,fd00::1,[fd00::2]:4", "--dst");
  EXPECT_EQ(mix.values(), (std::vector<std::string>{"h1", "h2", "10.0.0.2", "fd00::1", "fd00::2"}));
  EXPECT_EQ(mix.weights(), (std::vector<double>{3, 1, 2, 1, 4}));
  EXPECT_EQ(usage_error([] { parse_host_mix("h1,,h2", "--dst"); }), "--dst: empty entry in the list");
  EXPECT_EQ(usage_error([] { parse_host_mix("h1:x", "--dst"); }), "--dst: weight 'x' in 'h1:x' is not a number");
  EXPECT_EQ(usage_error([] { parse_host_mix("h1:0", "--dst"); }), "--dst: weight in 'h1:0' must be above 0");
  EXPECT_EQ(usage_error([] { parse_host_mix("h1,h1", "--dst"); }), "--dst: host 'h1' is listed twice");
  EXPECT_EQ(usage_error([] { parse_host_mix("[fd00::1", "--dst"); }), "--dst: '[fd00::1' has no closing ']'");
  EXPECT_EQ(usage_error([] { parse_host_mix("", "--src"); }), "--src: empty list");
}

TEST(Mix, WeightedPicksFollowTheWeights) {
  const auto mix = parse_dscp_mix("0:0.7,26:0.3", "--dscp");
  Rng rng(1);
  std::map<int, int> counts;
  constexpr int n = 100000;
  for (int i = 0; i < n; ++i) counts[mix.pick(rng)]++;
  // Binomial sigma at p = 0.3 is 0.0014; 5 sigma.
  EXPECT_NEAR(counts[26] / static_cast<double>(n), 0.3, 0.007);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_TRUE(parse_dscp_mix("46", "--dscp").constant());
  EXPECT_EQ(usage_error([] { parse_dscp_mix("64", "--dscp"); }), "--dscp: DSCP 64 is not an integer in 0-63");
  EXPECT_EQ(usage_error([] { parse_dscp_mix("ef", "--dscp"); }), "--dscp: DSCP 'ef' is not a number");
}

TEST(Mix, RatesWithUnits) {
  const auto mix = parse_rate_mix("100M:0.5,0:0.5", "--flow-rate");
  EXPECT_EQ(mix.values(), (std::vector<std::uint64_t>{100'000'000, 0}));
  EXPECT_EQ(describe(mix), "100000000:0.5,0:0.5");
  EXPECT_NE(usage_error([] { parse_rate_mix("fast", "--flow-rate"); }).find("--flow-rate: 'fast' is not a rate"),
            std::string::npos);
}

TEST(Pattern, Names) {
  for (auto p : {Pattern::fan_out, Pattern::one_to_one, Pattern::fan_in, Pattern::all_to_all, Pattern::permutation}) {
    EXPECT_EQ(parse_pattern(pattern_name(p)), p);
  }
  EXPECT_THROW(parse_pattern("ring"), UsageError);
}

TEST(Pattern, OneToOnePairsInOrder) {
  const std::vector<std::string> src{"a", "b", "c"};
  auto plan = plan_destinations(Pattern::one_to_one, src, parse_host_mix("x,y,z", "--dst"), 1);
  Rng rng(1);
  EXPECT_EQ(plan[0].pick(rng), "x");
  EXPECT_EQ(plan[2].pick(rng), "z");
  EXPECT_EQ(usage_error([&] { plan_destinations(Pattern::one_to_one, src, parse_host_mix("x", "--dst"), 1); }),
            "--pattern one-to-one pairs --src and --dst in order: 3 sources, 1 destinations");
}

TEST(Pattern, FanInNeedsOneDestination) {
  const std::vector<std::string> src{"a", "b", "c"};
  auto plan = plan_destinations(Pattern::fan_in, src, parse_host_mix("sink", "--dst"), 1);
  Rng rng(1);
  for (const auto& chooser : plan) EXPECT_EQ(chooser.pick(rng), "sink");
  EXPECT_THROW(plan_destinations(Pattern::fan_in, src, parse_host_mix("x,y", "--dst"), 1), UsageError);
}

TEST(Pattern, AllToAllNeverSendsToItselfAndReachesEveryOther) {
  const std::vector<std::string> hosts{"a", "b", "c", "d"};
  auto plan = plan_destinations(Pattern::all_to_all, hosts, parse_host_mix("a,b,c,d", "--dst"), 1);
  Rng rng(2);
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    std::set<std::string> seen;
    for (int k = 0; k < 1000; ++k) seen.insert(plan[i].pick(rng));
    EXPECT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen.count(hosts[i]), 0u);
  }
  EXPECT_THROW(plan_destinations(Pattern::all_to_all, {"a"}, parse_host_mix("a", "--dst"), 1), UsageError);
}

TEST(Pattern, PermutationIsADerangementFixedBySeed) {
  std::vector<std::string> hosts;
  for (int i = 0; i < 16; ++i) hosts.push_back("h" + std::to_string(i));
  WeightedMix<std::string> all;
  for (const auto& h : hosts) all.add(h, 1);
  Rng rng(1);
  auto targets = [&](std::uint64_t seed) {
    std::vector<std::string> out;
    for (const auto& chooser : plan_destinations(Pattern::permutation, hosts, all, seed)) {
      out.push_back(chooser.pick(rng));
    }
    return out;
  };
  const auto first = targets(5);
  EXPECT_EQ(first, targets(5));
  EXPECT_NE(first, targets(6));
  EXPECT_EQ(std::set<std::string>(first.begin(), first.end()).size(), hosts.size());
  for (std::size_t i = 0; i < hosts.size(); ++i) EXPECT_NE(first[i], hosts[i]);
  EXPECT_THROW(plan_destinations(Pattern::permutation, hosts, parse_host_mix("x", "--dst"), 1), UsageError);
}

}  // namespace xtk
