// Emulating a faster cluster (docs/experiments.md): the commands a step runs
// are run here as the step would run them, and their files checked against
// the docs - bytes scaled with times kept, or times dilated with bytes kept.
// Nothing here times a run. No root needed: the tools run on loopback.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/process.hpp"
#include "experiment/commands.hpp"
#include "formats/csv_file.hpp"
#include "formats/iterations.hpp"
#include "workload/schedule.hpp"

namespace xtk {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct Scheduled {
  std::vector<std::int64_t> start_ns;
  std::vector<std::uint64_t> size_bytes;
  ScheduleHeader header;
};

Scheduled read_schedule(const std::string& path) {
  auto reader = ScheduleReader::open(path);
  Scheduled s;
  s.header = reader->header();
  for (Flow f; reader->next(f);) {
    s.start_ns.push_back(f.start_ns);
    s.size_bytes.push_back(f.size_bytes);
  }
  return s;
}

// The values of one argv flag.
std::string flag_value(const std::vector<std::string>& argv, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) return argv[i + 1];
  }
  return "";
}

// Sets `flag` to `value`, adding it where the command leaves it at its default.
void set_flag(std::vector<std::string>& argv, const std::string& flag, const std::string& value) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) {
      argv[i + 1] = value;
      return;
    }
  }
  argv.insert(argv.end(), {flag, value});
}

class Emulation : public ::testing::Test {
 protected:
  void SetUp() override {
    // find_tool looks on PATH for the tools beside the build's other tools.
    const std::string path = fs::path(XTK_GEN_BIN).parent_path().string() + ":" +
                             fs::path(XTK_COLLECTIVE_BIN).parent_path().string() + ":" + std::getenv("PATH");
    ::setenv("PATH", path.c_str(), 1);
    dir_ = fs::temp_directory_path() / ("xtk_emulation_" + std::to_string(::getpid()) + "_" + std::to_string(++count_));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static ExperimentConfig config(const std::string& emulation) {
    std::string text = "[experiment]\nlink = \"1G\"\nstep_timeout = \"3s\"\n";
    if (!emulation.empty()) text += "emulate_link = \"25G\"\nemulation = \"" + emulation + "\"\n";
    text += "[training]\nmodel = \"" XTK_TINY_MODEL "\"\nranks = 2\niterations = 1\nwarmup = 0\ntimeout = \"30s\"\n";
    text += "[cross_traffic]\nwarmup = \"1s\"\nburst_width = \"1ms\"\n";
    return parse_experiment_config(text, "e.toml");
  }
  static StepPlan step(const std::string& profile) { return {XTK_TINY_MODEL, profile, 1, 0.3, "", 7}; }

  // The step's schedule, and the same flags on the emulated cluster's own link without scaling.
  std::pair<Scheduled, Scheduled> schedules(const ExperimentConfig& c, const std::string& profile) {
    auto argv = schedule_command(c, step(profile), "h3", "h0", (dir_ / "testbed.csv").string());
    run_checked(argv, 60s);
    set_flag(argv, "--link", "25G");
    set_flag(argv, "--size-scale", "1");
    set_flag(argv, "--burst-width", "1ms");
    set_flag(argv, "--out", (dir_ / "cluster.csv").string());
    run_checked(argv, 60s);
    return {read_schedule((dir_ / "testbed.csv").string()), read_schedule((dir_ / "cluster.csv").string())};
  }

  static RankLaunch launch(std::uint32_t rank, const std::string& master, const std::string& iterations) {
    RankLaunch l;
    l.rank = rank;
    l.master = master;
    l.iterations_path = iterations;
    return l;
  }

  // Runs the step's two training ranks on loopback; rank 0's output.
  std::string train(const ExperimentConfig& c) {
    const std::string master = "127.0.0.1:" + std::to_string(31000 + ::getpid() % 2000);
    const std::string iterations = (dir_ / "iterations-{rank}.csv").string();
    ChildProcess peer(training_command(c, step("none"), launch(1, master, iterations)), (dir_ / "rank-1.log").string());
    const auto rank0 = run_command(training_command(c, step("none"), launch(0, master, iterations)), 60s);
    EXPECT_EQ(peer.wait(30s), 0);
    EXPECT_EQ(rank0.exit_status, 0) << rank0.output;
    return rank0.output;
  }

  // Rank 0's last row, through the format's one reader.
  std::uint64_t bytes_per_iteration() const {
    const std::string path = (dir_ / "iterations-0.csv").string();
    std::uint64_t bytes = 0;
    read_iterations(read_text_file(path, "iterations"), path, 2, [&](const IterationRecord& r) { bytes = r.bytes; });
    return bytes;
  }

  fs::path dir_;
  static inline int count_ = 0;
};

TEST(EmulationConfig, ScalesFollowTheMethod) {
  auto c = parse_experiment_config("[experiment]\nlink = \"1G\"\nemulate_link = \"25G\"\n", "e.toml");
  EXPECT_EQ(c.emulation.method, EmulationMethod::both);  // the default
  EXPECT_DOUBLE_EQ(c.emulation.byte_scale(c.link_bps), 0.2);
  EXPECT_DOUBLE_EQ(c.emulation.time_scale(c.link_bps), 5.0);
  c = parse_experiment_config("[experiment]\nlink = \"1G\"\nemulate_link = \"25G\"\nemulation = \"bytes\"\n", "e.toml");
  EXPECT_DOUBLE_EQ(c.emulation.byte_scale(c.link_bps), 0.04);
  EXPECT_DOUBLE_EQ(c.emulation.time_scale(c.link_bps), 1.0);
  c = parse_experiment_config("[experiment]\nlink = \"1G\"\nemulate_link = \"25G\"\nemulation = \"time\"\n", "e.toml");
  EXPECT_DOUBLE_EQ(c.emulation.byte_scale(c.link_bps), 1.0);
  EXPECT_DOUBLE_EQ(c.emulation.time_scale(c.link_bps), 25.0);
  EXPECT_EQ(cross_traffic_warmup_ns(c), 25'000'000'000);  // the default 1 s, dilated
  // One warm-up iteration of tiny-mlp (60 ms of compute), dilated, bounded at twice its compute.
  c.training.models = {XTK_TINY_MODEL};
  EXPECT_EQ(training_warmup_ns(c, {XTK_TINY_MODEL, "none", 0, 0, "", 1}), 3'000'000'000);
  c = parse_experiment_config("[experiment]\nlink = \"1G\"\n", "e.toml");
  EXPECT_FALSE(c.emulation.on());
  EXPECT_DOUBLE_EQ(c.emulation.byte_scale(c.link_bps), 1.0);
  EXPECT_DOUBLE_EQ(c.emulation.time_scale(c.link_bps), 1.0);
}

TEST_F(Emulation, BytesScaleFlowSizesAndKeepArrivals) {
  const auto [testbed, cluster] = schedules(config("bytes"), "consistent");
  ASSERT_GT(cluster.start_ns.size(), 1000u);  // 0.3 x 25 Gbit/s of web-search for 3 s
  ASSERT_EQ(testbed.start_ns.size(), cluster.start_ns.size());
  EXPECT_EQ(testbed.header.get("size_scale"), "0.04");
  double testbed_bytes = 0, cluster_bytes = 0;
  for (std::size_t i = 0; i < cluster.start_ns.size(); ++i) {
    ASSERT_LE(std::abs(testbed.start_ns[i] - cluster.start_ns[i]), 1) << "flow " << i;
    ASSERT_NEAR(static_cast<double>(testbed.size_bytes[i]),
                std::max(1.0, static_cast<double>(cluster.size_bytes[i]) * 0.04), 1.0);
    testbed_bytes += static_cast<double>(testbed.size_bytes[i]);
    cluster_bytes += static_cast<double>(cluster.size_bytes[i]);
  }
  // Same share of each link: 0.3 of 1 Gbit/s against 0.3 of 25 Gbit/s.
  EXPECT_NEAR(testbed_bytes / cluster_bytes, 0.04, 1e-4);
}

TEST_F(Emulation, BytesKeepBurstTiming) {
  const auto [testbed, cluster] = schedules(config("bytes"), "burst");
  EXPECT_EQ(testbed.header.get("burst_width_ns"), "1000000");
  EXPECT_EQ(testbed.header.get("burst_period_ns"), "10000000");
  ASSERT_EQ(testbed.start_ns.size(), cluster.start_ns.size());
  for (std::size_t i = 0; i < cluster.start_ns.size(); ++i) {
    ASSERT_LE(std::abs(testbed.start_ns[i] - cluster.start_ns[i]), 1) << "flow " << i;
  }
}

TEST_F(Emulation, TimeDilatesArrivalsAndBurstsAndKeepsSizes) {
  for (const std::string profile : {"consistent", "burst"}) {
    const auto [testbed, cluster] = schedules(config("time"), profile);
    ASSERT_GT(testbed.start_ns.size(), 10u) << profile;  // 3 s of 0.3 Gbit/s
    EXPECT_FALSE(testbed.header.get("size_scale").has_value());
    if (profile == "burst") {
      EXPECT_EQ(testbed.header.get("burst_width_ns"), "25000000");
      EXPECT_EQ(testbed.header.get("burst_period_ns"), "250000000");
    }
    // The testbed's 3 s are the cluster's first 120 ms, 25 times slower.
    for (std::size_t i = 0; i < testbed.start_ns.size(); ++i) {
      ASSERT_EQ(testbed.size_bytes[i], cluster.size_bytes[i]) << profile << " flow " << i;
      ASSERT_NEAR(static_cast<double>(testbed.start_ns[i]), 25.0 * static_cast<double>(cluster.start_ns[i]),
                  1e-9 * static_cast<double>(testbed.start_ns[i]) + 25)
          << profile << " flow " << i;
    }
  }
}

TEST_F(Emulation, LongLivedFlowsAreLeftAlone) {
  const auto argv = schedule_command(config("bytes"), step("long-lived"), "h3", "h0", "x.csv");
  EXPECT_EQ(flag_value(argv, "--size-scale"), "");
  EXPECT_EQ(flag_value(argv, "--load"), "0.3");
}

TEST_F(Emulation, TrainingJobSendsScaledGradients) {
  train(config(""));
  const auto full = bytes_per_iteration();
  EXPECT_EQ(full, 6318120u);  // tiny-mlp's gradient bytes x 2(n-1)/n = 1 on 2 ranks
  const auto output = train(config("bytes"));
  // Every tensor x 0.04, rounded: 10 -> 0, kept at 1 element; the others within a byte each.
  EXPECT_NEAR(static_cast<double>(bytes_per_iteration()), 0.04 * 6318120, 4 * 6);
  EXPECT_NE(output.find("forward 15.000 ms, backward 45.000 ms"), std::string::npos) << output;
  std::ifstream in(dir_ / "iterations-0.csv");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("# size_scale=0.04"), std::string::npos) << text.str();
}

TEST_F(Emulation, TrainingJobComputesLonger) {
  const auto c = config("time");
  const auto argv = training_command(c, step("none"), launch(0, "h0:1", "i.csv"));
  EXPECT_EQ(flag_value(argv, "--compute-scale"), "25");
  const auto output = train(c);
  EXPECT_EQ(bytes_per_iteration(), 6318120u);
  EXPECT_NE(output.find("forward 375.000 ms, backward 1125.000 ms"), std::string::npos) << output;
}

}  // namespace
}  // namespace xtk
