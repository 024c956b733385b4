#include <gtest/gtest.h>

#include <sstream>

#include "workload/generator.hpp"
#include "workload/inspect.hpp"

namespace xtk {
namespace {

InspectReport inspect_text(const std::string& text, InspectOptions options = {}) {
  std::istringstream in(text);
  ScheduleReader reader(in, "t.csv");
  auto report = inspect_schedule(reader, options);
  report.source = "t.csv";
  return report;
}

}  // namespace

TEST(Inspect, FiguresOfAHandMadeSchedule) {
  // 10 ms, burst grid 1 ms every 5 ms; flows at 0.1, 0.5, 2.5, 5.2 and 7 ms.
  const std::string text =
      "# xtk-schedule\n# format_version=1\n# duration_ns=10000000\n# load_bps_per_src=4000000\n# src=a,b\n"
      "# burst_width_ns=1000000\n# burst_period_ns=5000000\n"
      "flow_id,start_ns,src,dst,size_bytes,dscp\n"
      "0,100000,a,x,1000,0\n1,500000,b,x,2000,26\n2,2500000,a,y,3000,0\n3,5200000,a,x,4000,26\n"
      "4,7000000,b,y,10000,0\n";
  const auto r = inspect_text(text);
  EXPECT_EQ(r.flows, 5u);
  EXPECT_EQ(r.bytes, 20000u);
  EXPECT_EQ(r.duration_ns, 10'000'000);
  EXPECT_DOUBLE_EQ(r.offered_bps, 20000 * 8 / 0.01);  // 16 Mbit/s
  EXPECT_DOUBLE_EQ(r.target_bps, 8e6);                // 4 Mbit/s x 2 sources
  EXPECT_DOUBLE_EQ(r.mean_size_bytes, 4000);
  EXPECT_EQ(r.size_min, 1000);
  EXPECT_EQ(r.size_max, 10000);
  EXPECT_EQ(r.first_start_ns, 100000);
  EXPECT_EQ(r.last_start_ns, 7'000'000);
  ASSERT_EQ(r.windows.size(), 2u);
  const auto& ms1 = r.windows[0];
  EXPECT_EQ(ms1.windows, 10u);
  EXPECT_DOUBLE_EQ(ms1.max_bps, 10000 * 8 / 1e-3);  // the 7 ms window
  EXPECT_DOUBLE_EQ(ms1.mean_bps, r.offered_bps);
  EXPECT_DOUBLE_EQ(ms1.empty_share, 0.6);  // windows 0, 2, 5, 7 have flows
  EXPECT_EQ(r.windows[1].windows, 1u);
  ASSERT_TRUE(r.burst);
  EXPECT_EQ(r.burst->burst_windows, 2u);
  EXPECT_DOUBLE_EQ(r.burst->burst_bps, (1000 + 2000 + 4000) * 8 / 2e-3);
  EXPECT_DOUBLE_EQ(r.burst->rest_bps, (3000 + 10000) * 8 / 8e-3);
  EXPECT_EQ(r.burst->min_flows_per_burst, 1u);
  EXPECT_EQ(r.by_src.at("a").flows, 3u);
  EXPECT_EQ(r.by_dst.at("y").bytes, 13000u);
  EXPECT_EQ(r.flows_by_dscp.at(26), 2u);
  const auto j = to_json(r);
  EXPECT_EQ(j["flows"], 5);
  EXPECT_EQ(j["burst"]["burst_windows"], 2);
  EXPECT_EQ(j["header"]["src"], "a,b");
  std::ostringstream human;
  print_report(r, human);
  EXPECT_NE(human.str().find("burst-window load"), std::string::npos);
  EXPECT_NE(human.str().find("16.00 Mbit/s (+100.00% vs target)"), std::string::npos);
}

TEST(Inspect, EmptyBurstWindowsCountAsZeroFlows) {
  const std::string text =
      "# xtk-schedule\n# format_version=1\n# duration_ns=20000000\n# burst_width_ns=1000000\n# "
      "burst_period_ns=10000000\n"
      "flow_id,start_ns,src,dst,size_bytes\n0,100,a,x,1\n1,200,a,x,1\n";
  EXPECT_EQ(inspect_text(text).burst->min_flows_per_burst, 0u);
}

TEST(Inspect, GridFromOptionsOverridesTheHeader) {
  const std::string text =
      "# xtk-schedule\n# format_version=1\n# duration_ns=4000000\nflow_id,start_ns,src,dst,size_bytes\n0,0,a,x,100\n";
  InspectOptions options;
  options.burst_width_ns = 1'000'000;
  options.burst_period_ns = 2'000'000;
  const auto r = inspect_text(text, options);
  ASSERT_TRUE(r.burst);
  EXPECT_DOUBLE_EQ(r.burst->burst_vs_mean, 2.0);
  EXPECT_FALSE(inspect_text(text).burst);
}

// inspect agrees with what the generator was asked for.
TEST(Inspect, GeneratedBurstScheduleMatchesItsProfile) {
  GenConfig c;
  c.profile = Profile::burst;
  c.cdf = std::make_shared<FlowSizeCdf>(FlowSizeCdf::load_file(std::string(XTK_CDF_DIR) + "/web-search.cdf"));
  c.load_bps = 25e9;
  c.link_bps = 25e9;
  c.duration_ns = 10'000'000'000;
  c.sources = {"h0"};
  c.destinations = parse_host_mix("h1", "--dst");
  std::ostringstream text;
  {
    ScheduleGenerator gen(c);
    const auto header = make_header(c);
    text << "# xtk-schedule\n# format_version=1\n";
    for (const auto& [k, v] : header.params) text << "# " << k << "=" << v << "\n";
    text << "flow_id,start_ns,src,dst,size_bytes\n";
    Flow f;
    while (gen.next(f))
      text << f.id << ',' << f.start_ns << ',' << f.src << ',' << f.dst << ',' << f.size_bytes << '\n';
  }
  const auto r = inspect_text(text.str());
  ASSERT_TRUE(r.burst);
  EXPECT_NEAR(r.burst->burst_vs_mean, 3.0, 0.3);
  EXPECT_NEAR(r.burst->rest_vs_mean, 0.778, 0.05);
  EXPECT_GE(r.burst->min_flows_per_burst, 2u);
  EXPECT_EQ(r.burst->burst_windows, 1000u);
  EXPECT_NEAR(r.offered_bps / r.target_bps, 1.0, 0.05);
}

}  // namespace xtk
