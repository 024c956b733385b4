// xtk-gen as users run it: exit statuses, messages and files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/run_tool.hpp"

namespace {

using Result = xtk::testing::ToolResult;

Result run(const std::string& args) { return xtk::testing::run_tool_command(XTK_GEN_BIN, args); }

class XtkGenCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("xtk_cli_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(XtkGenCli, HelpListsTheOptionsAndExitsZero) {
  const auto r = run("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* flag : {"--profile", "--cdf", "--load", "--link", "--duration", "--seed", "--dst", "--pattern",
                           "--burst-width", "--dscp", "--flow-rate", "--cc", "inspect"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(run("inspect --help").status, 0);
}

TEST_F(XtkGenCli, UsageErrorsExitTwoAndNameTheFlag) {
  auto r = run("--no-such-flag");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("xtk-gen: error:"), std::string::npos);
  r = run("--load 2");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--load: load '2' is ambiguous"), std::string::npos) << r.out;
  r = run("--profile sawtooth");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--profile: 'sawtooth' is not a profile"), std::string::npos);
  r = run("--duration 1parsec");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--duration:"), std::string::npos);
  r = run("--cdf no-such-workload");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--cdf 'no-such-workload': no such file"), std::string::npos);
  r = run("--profile burst --burst-height 20");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--burst-height"), std::string::npos);
  EXPECT_EQ(run("--inspect").status, 2);  // needs -o FILE
  r = run("--cc BBR");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--cc: 'BBR' is not a congestion control name"), std::string::npos) << r.out;
}

TEST_F(XtkGenCli, BadCdfFileExitsOneWithFileAndLine) {
  {
    std::ofstream bad(file("bad.cdf"));
    bad << "0 0\n100 0.5\n50 1\n";
  }
  const auto r = run("--cdf " + file("bad.cdf") + " -o " + file("s.csv"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(file("bad.cdf") + ":3: size 50 is smaller than 100"), std::string::npos) << r.out;
}

TEST_F(XtkGenCli, GeneratesAndInspectsASchedule) {
  const auto r =
      run("--profile burst --load 0.8 --link 1G -t 2s --dscp 0:0.7,26:0.3 -o " + file("b.csv") + " --inspect");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("burst-window load"), std::string::npos);
  EXPECT_NE(r.out.find("wrote"), std::string::npos);
  const auto j = run("inspect --json " + file("b.csv"));
  ASSERT_EQ(j.status, 0) << j.out;
  const auto report = nlohmann::json::parse(j.out);
  EXPECT_EQ(report["header"]["profile"], "burst");
  EXPECT_EQ(report["burst"]["burst_windows"], 200);
  EXPECT_NEAR(report["burst"]["burst_vs_mean"].get<double>(), 3.0, 0.3);
  EXPECT_TRUE(report.contains("flows_by_dscp"));
}

TEST_F(XtkGenCli, WritesToStdoutByDefault) {
  const auto r = run("-t 10ms --load 1G");
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("# xtk-schedule\n", 0), 0u);
  EXPECT_NE(r.out.find("flow_id,start_ns,src,dst,size_bytes\n"), std::string::npos);
}

TEST_F(XtkGenCli, OnePerSourceWithSrcTemplate) {
  const auto r = run("--src a,b,c --dst sink --pattern fan-in -t 100ms --load 1G -o '" + file("{src}.csv") + "'");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* s : {"a", "b", "c"}) EXPECT_TRUE(std::filesystem::exists(file(std::string(s) + ".csv"))) << s;
}

TEST_F(XtkGenCli, AllToAllDefaultsToTheSourcesAsDestinations) {
  const auto r = run("--src a,b,c --pattern all-to-all -t 200ms --load 1G -o " + file("a2a.csv"));
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(run("inspect --json " + file("a2a.csv")).out);
  EXPECT_EQ(j["by_dst"].size(), 3u);
  EXPECT_EQ(run("--src a:5").status, 2);  // sources take no weight
}

TEST_F(XtkGenCli, InspectReportsDamageWithLineAndExitsOne) {
  {
    std::ofstream s(file("broken.csv"));
    s << "# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes\n0,5,a,b,10\n1,4,a,b,10\n";
  }
  const auto r = run("inspect " + file("broken.csv"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(file("broken.csv") + ":5: start_ns 4 is before"), std::string::npos) << r.out;
  EXPECT_EQ(run("inspect " + file("missing.csv")).status, 1);
}

// A repeated flow id would give two records one id: the reader refuses it at its line.
TEST_F(XtkGenCli, InspectRefusesARepeatedFlowId) {
  {
    std::ofstream s(file("repeat.csv"));
    s << "# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes\n0,5,a,b,10\n3,6,a,b,10\n"
         "3,7,c,b,10\n";
  }
  const auto r = run("inspect " + file("repeat.csv"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(file("repeat.csv") + ":6: flow_id 3 is not above the previous flow's 3"), std::string::npos)
      << r.out;
}

// Ids count flows in start order across sources, so a {src} split's files
// are each increasing and together unique; --cc adds the cc column.
TEST_F(XtkGenCli, SplitFilesKeepIncreasingIdsAndTheCcColumn) {
  ASSERT_EQ(run("--src a,b --dst sink --pattern fan-in -t 100ms --load 1G --cc cubic:0.5,reno:0.5 -o '" +
                file("{src}.csv") + "'")
                .status,
            0);
  std::set<std::string> ids;
  std::set<std::string> algorithms;
  for (const char* s : {"a", "b"}) {
    EXPECT_EQ(run("inspect " + file(std::string(s) + ".csv")).status, 0) << s;
    std::ifstream in(file(std::string(s) + ".csv"));
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      if (line.rfind("flow_id", 0) == 0) {
        EXPECT_EQ(line, "flow_id,start_ns,src,dst,size_bytes,cc");
        continue;
      }
      EXPECT_TRUE(ids.insert(line.substr(0, line.find(','))).second) << line;
      algorithms.insert(line.substr(line.rfind(',') + 1));
    }
  }
  EXPECT_GT(ids.size(), 10u);
  EXPECT_EQ(algorithms, (std::set<std::string>{"cubic", "reno"}));
}

}  // namespace
