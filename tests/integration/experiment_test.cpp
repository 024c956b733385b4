// xtk-run end to end on the netns executor: complete step directories, Ctrl-C
// and resume, a killed role failing its step by name. Needs root.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/process.hpp"
#include "testbed/testbed.hpp"

namespace xtk {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class Experiment : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto reason = Testbed::unavailable_reason()) GTEST_SKIP() << "no testbed: " << *reason;
    dir_ = fs::temp_directory_path() / ("xtk_exp_" + std::to_string(::getpid()) + "_" + std::to_string(++count_));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string config(const std::string& loads, int iterations) {
    const std::string path = (dir_ / "experiment.toml").string();
    std::ofstream out(path);
    out << "[experiment]\nname = \"t\"\nlink = \"200M\"\nstep_timeout = \"60s\"\n"
        << "[training]\nmodel = \"" << XTK_TINY_MODEL << "\"\nranks = 2\niterations = " << iterations
        << "\nwarmup = 0\ntimeout = \"20s\"\n"
        << "[cross_traffic]\nprofiles = [\"consistent\"]\nloads = [" << loads << "]\nwarmup = \"500ms\"\n"
        << "[capture]\ncounter_period = \"1ms\"\n";
    return path;
  }
  std::string exp() const { return (dir_ / "exp").string(); }
  std::vector<std::string> xtk_run(const std::string& cfg) const { return {XTK_RUN_BIN, cfg, "-o", exp(), "-q"}; }

  static nlohmann::json run_json(const fs::path& step) {
    std::ifstream in(step / "run.json");
    return nlohmann::json::parse(in);
  }

  // The rows of an analysis table (tables/NAME.csv), each by column name.
  std::vector<std::map<std::string, std::string>> table_rows(const std::string& name) const {
    const auto split = [](const std::string& line) {
      std::vector<std::string> fields;
      std::stringstream in(line);
      for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
      return fields;
    };
    std::ifstream table(fs::path(exp()) / "tables" / (name + ".csv"));
    std::string header;
    std::getline(table, header);
    const auto names = split(header);
    std::vector<std::map<std::string, std::string>> rows;
    for (std::string line; std::getline(table, line);) {
      const auto values = split(line);
      auto& row = rows.emplace_back();
      for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) row[names[i]] = values[i];
    }
    return rows;
  }

  // A column of table 1 (iteration_time) in the consistent step's row.
  std::string consistent_row(const std::string& column) const {
    std::string value;
    for (const auto& row : table_rows("iteration_time")) {
      if (row.count("profile") != 0 && row.at("profile") == "consistent" && row.count(column) != 0) {
        value = row.at(column);
      }
    }
    EXPECT_FALSE(value.empty()) << "no column " << column << " in a consistent row of table 1";
    return value.empty() ? "nan" : value;
  }

  fs::path dir_;
  static inline int count_ = 0;
};

TEST_F(Experiment, TwoStepsCompleteWithEveryFile) {
  const auto result = run_command(xtk_run(config("0, 0.5", 3)), 180s);
  ASSERT_EQ(result.exit_status, 0) << result.output;
  for (const char* step : {"tiny-mlp/none/step00", "tiny-mlp/consistent/step01"}) {
    const fs::path s = fs::path(exp()) / step;
    ASSERT_TRUE(fs::exists(s / "run.json")) << step;
    EXPECT_EQ(run_json(s)["status"], "ok");
    EXPECT_TRUE(fs::exists(s / "iterations-0.csv"));
    EXPECT_TRUE(fs::exists(s / "iterations-1.csv"));
    EXPECT_EQ(run_json(s)["files"]["collectives"], (nlohmann::json{"collectives-0.csv", "collectives-1.csv"}));
  }
  const fs::path loaded = fs::path(exp()) / "tiny-mlp/consistent/step01";
  for (const char* f : {"flows.csv", "counters.csv", "schedule.csv"}) EXPECT_TRUE(fs::exists(loaded / f)) << f;
  EXPECT_EQ(run_json(loaded)["bottleneck"]["counter"], "tx_bytes");
  EXPECT_EQ(run_json(loaded)["bottleneck"]["host"], "10.77.0.1");  // as the trace bins name it
  // 1448 bytes of TCP payload in each 1514-byte frame the shaper counts.
  EXPECT_NEAR(run_json(loaded)["bottleneck"]["payload_share"].get<double>(), 1448.0 / 1514, 1e-12);
  const auto provenance = run_json(loaded)["provenance"];
  ASSERT_EQ(provenance["hosts"].size(), 3u) << provenance.dump();
  EXPECT_EQ(provenance["hosts"][2]["host"], "h2");
  EXPECT_NE(provenance["hosts"][0]["kernel"], "unknown");
  EXPECT_FALSE(provenance["xtk"]["git_revision"].get<std::string>().empty());
  EXPECT_TRUE(fs::exists(fs::path(exp()) / "tables" / "iteration_time.csv"));
  EXPECT_NE(result.output.find("Iteration time per cross-traffic step"), std::string::npos);
  EXPECT_NE(result.output.find("8. Stragglers"), std::string::npos);
  // Every host NIC runs at the link rate, as on the seed's switch.
  EXPECT_EQ(run_json(loaded)["executor"]["host_links"], "every host NIC 200000000 bit/s (htb)")
      << run_json(loaded)["executor"];
  // Its own testbed (other tests' may run beside it): named in run.json.
  const std::string testbed = run_json(fs::path(exp()) / "tiny-mlp/none/step00")["executor"]["testbed"];
  ASSERT_FALSE(testbed.empty());
  EXPECT_EQ(run_command({"ip", "netns", "list"}).output.find("xtk-" + testbed + "-"), std::string::npos)
      << "testbed " << testbed << " left behind";
}

// Two repetitions: each its own schedules (new seeds, so new flows) and its
// own tables; the experiment's directory holds no steps of its own.
TEST_F(Experiment, RepetitionsDrawNewSchedulesAndEachHasItsTables) {
  std::string cfg = config("0, 0.5", 2);
  {
    std::ifstream in(cfg);
    std::stringstream text;
    text << in.rdbuf();
    std::string edited = text.str();
    edited.replace(edited.find("[training]"), 0, "repetitions = 2\n");
    std::ofstream(cfg) << edited;
  }
  const auto result = run_command(xtk_run(cfg), 300s);
  ASSERT_EQ(result.exit_status, 0) << result.output;
  std::vector<std::string> schedules;
  for (const char* rep : {"rep1", "rep2"}) {
    const fs::path loaded = fs::path(exp()) / rep / "tiny-mlp/consistent/step01";
    EXPECT_EQ(run_json(loaded)["status"], "ok") << rep;
    EXPECT_TRUE(fs::exists(fs::path(exp()) / rep / "tables" / "iteration_time.csv")) << rep;
    std::ifstream in(loaded / "schedule.csv");
    std::stringstream text;
    text << in.rdbuf();
    schedules.push_back(text.str());
  }
  EXPECT_NE(schedules[0].find("# seed=2\n"), std::string::npos);
  EXPECT_NE(schedules[1].find("# seed=4\n"), std::string::npos);
  const auto rows = [](const std::string& schedule) { return schedule.substr(schedule.find("\n0,")); };
  EXPECT_NE(rows(schedules[0]).substr(0, 200), rows(schedules[1]).substr(0, 200)) << "the same flows twice";
  EXPECT_NE(result.output.find("# repetition 2: "), std::string::npos) << result.output;
  // At the top, only what spans the repetitions: the congestion point over them.
  std::vector<std::string> top;
  for (const auto& entry : fs::directory_iterator(fs::path(exp()) / "tables")) {
    top.push_back(entry.path().filename().string());
  }
  std::sort(top.begin(), top.end());
  EXPECT_EQ(top, (std::vector<std::string>{"congestion_point_runs.csv", "congestion_point_spread.csv"}));
  std::ifstream in(fs::path(exp()) / "tables" / "congestion_point_spread.csv");
  std::stringstream spread;
  spread << in.rdbuf();
  EXPECT_NE(spread.str().find("\ntiny-mlp,consistent,2,"), std::string::npos) << spread.str();
  EXPECT_NE(result.output.find("# the congestion point over the 2 repetitions"), std::string::npos) << result.output;
  EXPECT_TRUE(fs::exists(fs::path(exp()) / "plots" / "spread.png")) << result.output;
}

TEST_F(Experiment, InterruptedRunResumesToACompleteDirectory) {
  const auto cfg = config("0, 0.3, 0.6", 6);
  {
    ChildProcess run(xtk_run(cfg), (dir_ / "first.log").string());
    const fs::path first = fs::path(exp()) / "tiny-mlp/none/step00/run.json";
    for (int i = 0; i < 600 && !fs::exists(first); ++i) std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(fs::exists(first)) << "the first step did not finish";
    std::this_thread::sleep_for(1500ms);  // into the second step
    run.signal(SIGINT);
    const auto status = run.wait(60s);
    ASSERT_TRUE(status);
    EXPECT_EQ(*status, 130);
  }
  EXPECT_FALSE(fs::exists(fs::path(exp()) / "tiny-mlp/consistent/step02/run.json"));
  const auto resumed = run_command(xtk_run(cfg), 240s);
  ASSERT_EQ(resumed.exit_status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("kept"), std::string::npos);
  for (const char* step : {"none/step00", "consistent/step01", "consistent/step02"}) {
    EXPECT_EQ(run_json(fs::path(exp()) / "tiny-mlp" / step)["status"], "ok") << step;
  }
  // Another seed is another experiment: its steps are not these, and nothing recorded is lost.
  std::ifstream in(cfg);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("[experiment]\n"), 13, "[experiment]\nseed = 2\n");
  const std::string other = (dir_ / "seed2.toml").string();
  std::ofstream(other) << text;
  const auto refused = run_command(xtk_run(other), 60s);
  EXPECT_EQ(refused.exit_status, 2) << refused.output;
  EXPECT_NE(refused.output.find("[experiment] seed was absent, is 2"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("--fresh"), std::string::npos) << refused.output;
  EXPECT_EQ(run_json(fs::path(exp()) / "tiny-mlp/consistent/step02")["cross_traffic"]["seed"], 3);
}

TEST_F(Experiment, KilledRankFailsItsStepByName) {
  const auto cfg = config("0", 200);
  ChildProcess run(xtk_run(cfg), (dir_ / "run.log").string());
  const std::string ns = "xtk-run" + std::to_string(run.pid() % 100000) + "-h1";
  const fs::path log = fs::path(exp()) / "tiny-mlp/none/step00/rank-1.log";
  // Rank 1 is the xtk-collective in h1 (h1 also runs the training NIC's sampler).
  // A process that exits while its cmdline is read fails the read (ESRCH): it is no live rank.
  const auto is_rank = [](pid_t p) {
    try {
      std::ifstream in("/proc/" + std::to_string(p) + "/cmdline");
      const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      return cmdline.find("xtk-collective") != std::string::npos;
    } catch (const std::ios_base::failure&) {
      return false;
    }
  };
  std::vector<pid_t> pids;
  for (int i = 0; i < 200 && pids.empty(); ++i) {
    std::this_thread::sleep_for(100ms);
    std::istringstream list(run_command({"ip", "netns", "pids", ns}).output);
    for (pid_t p; list >> p;) {
      if (is_rank(p)) pids.push_back(p);
    }
  }
  ASSERT_FALSE(pids.empty()) << "rank 1 never started in " << ns;
  std::this_thread::sleep_for(3s);        // past the rendezvous, mid-iterations
  for (pid_t p : pids) kill(p, SIGKILL);  // rank 1, started by our xtk-run
  const auto status = run.wait(90s);
  ASSERT_TRUE(status) << "xtk-run did not end";
  EXPECT_EQ(*status, 1);
  const auto j = run_json(fs::path(exp()) / "tiny-mlp/none/step00");
  EXPECT_EQ(j["status"], "failed");
  EXPECT_NE(j["error"].get<std::string>().find("rank "), std::string::npos) << j["error"];
}

// [training] command: a real training script per rank (torch.distributed over
// Gloo) writes the iterations file that the tables read, through the testbed.
TEST_F(Experiment, CommandModeRunsAScriptPerRank) {
  if (!run_command({"/usr/bin/python3", "-c", "import torch.distributed as d; assert d.is_gloo_available()"}).ok()) {
    GTEST_SKIP() << "needs python3-torch (Debian's, with Gloo) for the example script";
  }
  const std::string path = (dir_ / "experiment.toml").string();
  {
    std::ofstream out(path);
    out << "[experiment]\nname = \"t\"\nlink = \"200M\"\nstep_timeout = \"90s\"\n"
        << "[training]\nmodel = \"" << XTK_TINY_MODEL << "\"\nranks = 2\niterations = 4\nwarmup = 1\n"
        << "startup = \"8s\"\ncommand = \"/usr/bin/python3 " << XTK_EXAMPLES
        << "/training/gloo_allreduce.py --mb 4 --compute-ms 10\"\n"
        << "[cross_traffic]\nprofiles = [\"consistent\"]\nloads = [0.5]\nwarmup = \"500ms\"\n"
        << "[capture]\ncounter_period = \"1ms\"\n";
  }
  const auto result = run_command(xtk_run(path), 240s);
  ASSERT_EQ(result.exit_status, 0) << result.output;
  const fs::path step = fs::path(exp()) / "tiny-mlp/consistent/step01";
  const auto j = run_json(step);
  EXPECT_EQ(j["status"], "ok");
  for (int rank = 0; rank < 2; ++rank) {
    std::ifstream in(step / ("iterations-" + std::to_string(rank) + ".csv"));
    int rows = 0;
    for (std::string line; std::getline(in, line);) rows += !line.empty() && line[0] != '#' && line[0] != 'r';
    EXPECT_EQ(rows, 4) << "rank " << rank;
  }
  // The script's own count (4 MB, two ranks: each sends 4 MB) and the training NIC's, headers included.
  const double wire = std::stod(consistent_row("wire_tx_bytes_per_iter"));
  EXPECT_GT(wire, 4.0e6);
  EXPECT_LT(wire, 4.4e6);
  // The same host's TCP counters, sampled beside its NIC's: counts, not nan.
  for (const char* name : {"tcp_retransmits_per_iter", "tcp_timeouts_per_iter"}) {
    const double count = std::stod(consistent_row(name));
    EXPECT_GE(count, 0) << name;
    EXPECT_FALSE(std::isnan(count)) << name;
  }
}

// Configuration A: the cross traffic leaves h0, a training host, through its
// own NIC towards the cross-traffic host; one loaded step end to end.
TEST_F(Experiment, ConfigurationAOneStepEndToEnd) {
  const std::string path = (dir_ / "a.toml").string();
  std::ofstream(path) << "[experiment]\nname = \"a\"\nconfiguration = \"A\"\nlink = \"200M\"\nstep_timeout = \"60s\"\n"
                      << "[training]\nmodel = \"" << XTK_TINY_MODEL
                      << "\"\nranks = 2\niterations = 3\nwarmup = 0\ntimeout = \"20s\"\n"
                      << "[cross_traffic]\nprofiles = [\"consistent\"]\nloads = [0.5]\nwarmup = \"500ms\"\n"
                      << "[capture]\ncounter_period = \"1ms\"\n";
  const auto result = run_command(xtk_run(path), 180s);
  ASSERT_EQ(result.exit_status, 0) << result.output;
  fs::path step;  // the one loaded step, whatever its number
  for (const auto& entry : fs::directory_iterator(fs::path(exp()) / "tiny-mlp" / "consistent")) step = entry.path();
  ASSERT_FALSE(step.empty());
  const auto j = run_json(step);
  EXPECT_EQ(j["status"], "ok") << j.dump();
  EXPECT_EQ(j["configuration"], "A");
  // In A the bottleneck is the cross-traffic host's receiving NIC, fed by h0's.
  EXPECT_EQ(j["bottleneck"]["counter"], "rx_bytes");
  std::ifstream flows(step / "flows.csv");
  std::string all((std::istreambuf_iterator<char>(flows)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find(",ok,"), std::string::npos) << "no cross-traffic flow completed";
  EXPECT_EQ(all.find(",failed,"), std::string::npos) << all.substr(0, 2000);
}

// [training] replay: the recorded DDP job's collectives (at 1/100 of their
// size) through the testbed as the step's training job, with its files.
TEST_F(Experiment, ReplayedJobRunsAsTheTrainingJob) {
  const std::string traces = std::string(XTK_REPLAY_DATA) + "/resnet50-ddp";
  const std::string path = (dir_ / "r.toml").string();
  // The traces' 97 MiB of gradients per iteration would take seconds at 200 Mbit/s: emulating a
  // 20 Gbit/s cluster by bytes sends 1/100 of them.
  std::ofstream(path) << "[experiment]\nname = \"r\"\nlink = \"200M\"\nemulate_link = \"20G\"\nemulation = \"bytes\"\n"
                      << "step_timeout = \"60s\"\n[training]\nmodel = \"resnet50\"\nranks = 2\niterations = 3\n"
                      << "warmup = 1\ntimeout = \"20s\"\nreplay = \"" << traces
                      << "/et-rank{rank}.json.gz\"\nkineto = \"" << traces
                      << "/kineto-rank{rank}.json.gz\"\n[cross_traffic]\nprofiles = [\"consistent\"]\nloads = [0]\n";
  const auto result = run_command(xtk_run(path), 180s);
  ASSERT_EQ(result.exit_status, 0) << result.output;
  const fs::path step = fs::path(exp()) / "resnet50" / "none" / "step00";
  EXPECT_EQ(run_json(step)["status"], "ok");
  std::ifstream calls(step / "collectives-1.csv");
  std::string all((std::istreambuf_iterator<char>(calls)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("\n1,2,6,all_reduce,"), std::string::npos) << all;  // the last bucket of the last iteration
  EXPECT_NE(all.find(",broadcast,"), std::string::npos) << all;
  std::ifstream log(step / "rank-0.log");
  std::string text0((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text0.find("7 collectives and 2 waits each"), std::string::npos) << text0;
}

// `xtk demo` itself, on a short version of its config (the same testbed,
// emulation and capture; 2 steps of 1 iteration): it runs, prints its tables
// and leaves no testbed behind.
TEST_F(Experiment, XtkDemoRunsAShortConfig) {
  std::ifstream shipped(std::string(XTK_CONFIG_DIR) + "/experiments/demo.toml");
  std::string text((std::istreambuf_iterator<char>(shipped)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  auto set = [&](const std::string& key, const std::string& value) {
    const auto at = text.find("\n" + key + " = ");
    ASSERT_NE(at, std::string::npos) << key;
    text.replace(at + 1, text.find('\n', at + 1) - at - 1, key + " = " + value);
  };
  set("profiles", "[\"consistent\"]");
  set("loads", "[0.0, 0.3]");
  set("iterations", "1");
  set("warmup", "0");
  const std::string path = (dir_ / "demo-short.toml").string();
  std::ofstream(path) << text;
  const auto result = run_command({XTK_BIN, "demo", "--config", path, "-o", exp()}, 300s);
  ASSERT_EQ(result.exit_status, 0) << result.output;
  EXPECT_NE(result.output.find("Iteration time per cross-traffic step"), std::string::npos) << result.output;
  for (const char* step : {"resnet50/none/step00", "resnet50/consistent/step01"}) {
    EXPECT_EQ(run_json(fs::path(exp()) / step)["status"], "ok") << step;
  }
  // The port's buffer: the emulated cluster's 16 MB, x 0.2 on the testbed.
  const auto loaded = run_json(fs::path(exp()) / "resnet50/consistent/step01");
  EXPECT_EQ(loaded["executor"]["bottleneck_queue"], "3200000 bytes (bfifo)") << loaded["executor"];
  // Every host's TCP is CUBIC, Linux's default, whatever this machine's default.
  EXPECT_EQ(loaded["executor"]["congestion_control"], "cubic") << loaded["executor"];
  for (const auto& host : loaded["provenance"]["hosts"]) EXPECT_EQ(host["tcp_congestion_control"], "cubic") << host;
  // In B the load is what crossed h0's port, in the trace at h0: the sender's
  // counters also count what the port dropped and the sender sent again.
  EXPECT_FALSE(loaded["bottleneck"].contains("source")) << loaded["bottleneck"];
  EXPECT_EQ(consistent_row("load_source"), "trace");
  // Table 1's ring counters are sampled on the host that sends the ring's
  // traffic into h0, as table 7's trace at h0 shows: Gloo sends to the rank before.
  EXPECT_EQ(loaded["training_nic"]["host"], "h1") << loaded["training_nic"];
  std::map<std::string, double> into_h0;  // node -> training bytes it sent, as h0 saw them
  for (const auto& row : table_rows("node_bandwidth")) {
    if (row.count("train_tx_gbps") != 0 && row.at("profile") == "consistent") {
      into_h0[row.at("node")] = std::stod(row.at("train_tx_gbps"));
    }
  }
  EXPECT_GT(into_h0["10.77.0.2"], 10 * into_h0["10.77.0.3"])
      << "h1 " << into_h0["10.77.0.2"] << ", h2 " << into_h0["10.77.0.3"];
  // Its own testbed (other tests' may run beside it): named in run.json.
  const std::string testbed = run_json(fs::path(exp()) / "resnet50/none/step00")["executor"]["testbed"];
  ASSERT_FALSE(testbed.empty());
  EXPECT_EQ(run_command({"ip", "netns", "list"}).output.find("xtk-" + testbed + "-"), std::string::npos)
      << "testbed " << testbed << " left behind";
}

}  // namespace
}  // namespace xtk
