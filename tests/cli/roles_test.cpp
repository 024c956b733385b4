// Every role xtk-run launches, run by its own tool with exactly the argv the
// step builds (lib/experiment/commands): a flag renamed in a tool, or a value
// it no longer takes, fails here instead of in a root-only netns run. The
// schedule and training commands are run by emulation_test.cpp. Loopback only;
// the libpcap capture needs root and skips without it.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/process.hpp"
#include "experiment/commands.hpp"

namespace xtk {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class Roles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path;
    for (const char* tool : {XTK_GEN_BIN, XTK_SERVER_BIN, XTK_CLIENT_BIN, XTK_LOG_BIN, XTK_ANALYZE_BIN}) {
      path += fs::path(tool).parent_path().string() + ":";
    }
    ::setenv("PATH", (path + std::getenv("PATH")).c_str(), 1);
    dir_ = fs::temp_directory_path() / ("xtk_roles_" + std::to_string(::getpid()) + "_" + std::to_string(++count_));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
  static inline int count_ = 0;
};

TEST_F(Roles, ServerAndClientRunTheStepsArgv) {
  const auto port = static_cast<std::uint16_t>(21000 + ::getpid() % 5000);
  run_checked({XTK_GEN_BIN, "--profile", "consistent", "--cdf", "web-search", "--link", "100M", "--load", "0.2",
               "--duration", "500ms", "--src", "h1", "--dst", "h0", "-o", file("schedule.csv")},
              30s);
  const auto tcp = parse_experiment_config("", "e.toml");
  ChildProcess server(server_command(tcp, port), file("server.log"));
  std::this_thread::sleep_for(300ms);
  const auto client = run_command(client_command(tcp, file("schedule.csv"), "h0", "127.0.0.1", port, file("flows.csv"),
                                                 realtime_ns() + 500'000'000),
                                  30s);
  ASSERT_EQ(client.exit_status, 0) << client.output;
  const auto summary = nlohmann::json::parse(client.output.substr(client.output.find('{')));
  EXPECT_GT(summary["summary"]["flows"].get<int>(), 0) << client.output;
  EXPECT_NE(read(file("flows.csv")).find("# xtk-flow-records"), std::string::npos);
  server.signal(SIGINT);
  EXPECT_EQ(server.wait(10s), 0) << read(file("server.log"));
}

TEST_F(Roles, CounterSamplerRunsTheStepsArgv) {
  ChildProcess counters(counters_command({"net:lo"}, "1ms", file("counters.csv")), file("counters.log"));
  std::this_thread::sleep_for(500ms);
  counters.signal(SIGINT);
  ASSERT_EQ(counters.wait(10s), 0) << read(file("counters.log"));
  const std::string text = read(file("counters.csv"));
  EXPECT_EQ(text.rfind("# xtk-counters\n", 0), 0u);
  EXPECT_NE(text.find(",net:lo,tx_bytes,"), std::string::npos) << text.substr(0, 400);
}

TEST_F(Roles, CaptureRunsTheStepsArgv) {
  if (::geteuid() != 0) GTEST_SKIP() << "libpcap on lo needs root (CAP_NET_RAW)";
  ChildProcess capture(capture_command("lo", "1ms", fmt::format("tcp port {}", kCrossTrafficPort), file("bins.csv")),
                       file("capture.log"));
  std::this_thread::sleep_for(800ms);
  capture.signal(SIGINT);
  ASSERT_EQ(capture.wait(10s), 0) << read(file("capture.log"));
  EXPECT_EQ(read(file("bins.csv")).rfind("# xtk-trace-bins\n", 0), 0u);
}

TEST_F(Roles, TablesRunTheRunnersArgv) {
  const auto tables = run_command(tables_command(XTK_ANALYSIS_EXPERIMENT, file("tables")), 60s);
  ASSERT_EQ(tables.exit_status, 0) << tables.output;
  EXPECT_TRUE(fs::exists(file("tables/congestion_point.csv")));
}

}  // namespace
}  // namespace xtk
