// The hosts executor: the signal-forwarding wrapper it has ssh run (locally,
// no root), its [hosts] keys, and xtk-run over real ssh to sshd instances in
// the namespaces of a testbed (root, /usr/sbin/sshd): a run completes, and
// Ctrl-C on xtk-run, or xtk-run killed, ends every remote role.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/process.hpp"
#include "experiment/config.hpp"
#include "experiment/executor.hpp"
#include "formats/iterations.hpp"
#include "testbed/testbed.hpp"

namespace xtk {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path scratch(const std::string& what) {
  static int count = 0;
  fs::path dir = fs::temp_directory_path() / fmt::format("xtk_{}_{}_{}", what, static_cast<int>(::getpid()), ++count);
  fs::create_directories(dir);
  return dir;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Iterations rank 0 has written so far (the writer hands whole rows to the kernel).
std::size_t iterations_written(const fs::path& path) {
  if (!fs::exists(path)) return 0;
  std::size_t rows = 0;
  read_iterations(read_all(path), path.string(), 0, [&](const IterationRecord&) { ++rows; });
  return rows;
}

// The wrapper run by a local sh, as sshd's login shell would run it.
std::vector<std::string> wrapped(const std::string& script) {
  return {"sh", "-c", forward_signals_command({"sh", "-c", script})};
}

// A tool that reports a signal and exits with a status of its own. A trap on
// a signal ignored at its start would silently not be set: SIGINT must arrive.
constexpr const char* kTrapping =
    "trap 'echo got INT; exit 3' INT; trap 'echo got TERM; exit 4' TERM; echo ready; "
    "while :; do sleep 0.05; done";

class ForwardSignals : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratch("forward"); }
  void TearDown() override { fs::remove_all(dir_); }
  // Waits until the tool has set its traps.
  void await_ready(const fs::path& log) {
    for (int i = 0; i < 100 && read_all(log).find("ready") == std::string::npos; ++i) std::this_thread::sleep_for(50ms);
    ASSERT_NE(read_all(log).find("ready"), std::string::npos) << read_all(log);
  }
  fs::path dir_;
};

TEST_F(ForwardSignals, ASignalNameOnStdinReachesTheTool) {
  const fs::path log = dir_ / "tool.log";
  ChildProcess tool(wrapped(kTrapping), log.string(), {.own_group = true, .signals_on_stdin = true});
  await_ready(log);
  tool.signal(SIGINT);
  const auto status = tool.wait(5s);
  ASSERT_TRUE(status) << "SIGINT did not end the tool";
  EXPECT_EQ(*status, 3);
  EXPECT_NE(read_all(log).find("got INT"), std::string::npos) << read_all(log);
}

TEST_F(ForwardSignals, EndOfFileOnStdinIsSigterm) {
  // Stdin from a pipe that ends once the tool has set its traps, as when xtk-run dies.
  const auto result = run_command({"sh", "-c", "sleep 0.5 | " + shell_quote(wrapped(kTrapping))}, 10s);
  EXPECT_EQ(result.exit_status, 4) << result.output;
  EXPECT_NE(result.output.find("got TERM"), std::string::npos) << result.output;
}

TEST_F(ForwardSignals, TheToolsOwnExitEndsTheWrapper) {
  ChildProcess tool(wrapped("echo done; exit 7"), (dir_ / "tool.log").string(), {.signals_on_stdin = true});
  const auto status = tool.wait(5s);
  ASSERT_TRUE(status) << "the wrapper outlived its tool";
  EXPECT_EQ(*status, 7);
  EXPECT_EQ(read_all(dir_ / "tool.log"), "done\n");
}

TEST_F(ForwardSignals, StopForwardsTermThenKill) {
  const fs::path log = dir_ / "tool.log";
  ChildProcess tool(wrapped("trap 'echo got TERM' TERM; echo ready; while :; do sleep 0.05; done"), log.string(),
                    {.signals_on_stdin = true});
  await_ready(log);
  EXPECT_EQ(tool.stop(300ms), 128 + SIGKILL);
  EXPECT_NE(read_all(log).find("got TERM"), std::string::npos) << read_all(log);
}

// The session the hosts executor reads a host's clock over.
TEST(TalkingChild, LinesGoBothWaysAndATimeoutOrTheEndIsNone) {
  ChildProcess echo({"sh", "-c", "echo ready; while read -r l; do echo \"got $l\"; done"}, "", {.talk = true});
  EXPECT_EQ(echo.read_line(5s), "ready");
  echo.write_line("a");
  EXPECT_EQ(echo.read_line(5s), "got a");
  echo.write_line("b c");
  EXPECT_EQ(echo.read_line(5s), "got b c");
  EXPECT_EQ(echo.read_line(100ms), std::nullopt);  // it waits for a line: nothing to read
  ChildProcess once({"sh", "-c", "echo one; printf tail"}, "", {.talk = true});
  EXPECT_EQ(once.read_line(5s), "one");
  EXPECT_EQ(once.read_line(5s), std::nullopt);  // its output ended without a newline
  EXPECT_EQ(once.unread(), "tail");
  EXPECT_EQ(once.wait(5s), 0);
}

TEST(HostsConfig, SshConfigIsReadAndAnEmptyOneNamed) {
  const auto c = parse_experiment_config(
      "[experiment]\nexecutor = \"hosts\"\n[hosts]\nfile = \"h.txt\"\nssh_config = \"ssh.conf\"\n", "e.toml");
  EXPECT_EQ(c.hosts.ssh_config, "ssh.conf");
  try {
    parse_experiment_config("[experiment]\nexecutor = \"hosts\"\n[hosts]\nfile = \"h.txt\"\nssh_config = \"\"\n",
                            "e.toml");
    FAIL() << "an empty ssh_config passed";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "e.toml:5: 'ssh_config' is empty: give ssh's config file (ssh -F), or leave it out");
  }
}

TEST(HostsConfig, AMissingSshConfigNamesTheConfigAndKey) {
  auto c = parse_experiment_config(
      "[experiment]\nexecutor = \"hosts\"\n[hosts]\nfile = \"h.txt\"\nssh_config = \"/nonexistent/ssh.conf\"\n",
      "e.toml");
  try {
    make_executor(c, 3);
    FAIL() << "a missing ssh_config passed";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "e.toml: [hosts] ssh_config '/nonexistent/ssh.conf': No such file or directory");
  }
}

// h0..h2 run sshd (the two ranks' hosts and the cross-traffic host); xtk-run
// runs in h3 and reaches them over the testbed's bridge.
class SshHosts : public ::testing::Test {
 protected:
  static constexpr std::size_t kRoleHosts = 3;

  void SetUp() override {
    if (auto reason = Testbed::unavailable_reason()) GTEST_SKIP() << "no testbed: " << *reason;
    if (!fs::exists("/usr/sbin/sshd")) GTEST_SKIP() << "no /usr/sbin/sshd: apt-get install openssh-server";
    dir_ = scratch("ssh");
    TestbedSpec spec;
    spec.name = fmt::format("ssh{}", ::getpid() % 100000);
    spec.hosts = kRoleHosts + 1;
    testbed_ = std::make_unique<Testbed>(spec);
    run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path("host_key")});
    run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path("id")});
    fs::copy_file(dir_ / "id.pub", dir_ / "authorized_keys");
    // Everything xtk-run's ssh needs, through [hosts] ssh_config alone.
    std::ofstream(dir_ / "ssh_config") << "Host *\n  User root\n  Port 2222\n  IdentityFile " << path("id")
                                       << "\n  IdentitiesOnly yes\n  UserKnownHostsFile " << path("known_hosts")
                                       << "\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking accept-new\n"
                                       << "  LogLevel ERROR\n";
    fs::create_directories("/run/sshd");  // sshd's privilege-separation directory
    std::ofstream hosts(dir_ / "hosts.txt");
    for (std::size_t h = 0; h < kRoleHosts; ++h) {
      const std::string config = path(fmt::format("sshd_config_{}", h));
      // PidFile none: the machine's own sshd keeps its pid file.
      std::ofstream(config) << "ListenAddress " << Testbed::ipv4(h) << "\nPort 2222\nHostKey " << path("host_key")
                            << "\nAuthorizedKeysFile " << path("authorized_keys")
                            << "\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                            << "KbdInteractiveAuthentication no\nStrictModes no\nUsePAM no\nPidFile none\n";
      sshd_.push_back(std::make_unique<ChildProcess>(testbed_->in_host(h, {"/usr/sbin/sshd", "-D", "-e", "-f", config}),
                                                     path(fmt::format("sshd_{}.log", h))));
      hosts << Testbed::host_name(h) << ' ' << Testbed::ipv4(h) << " eth0\n";
    }
    for (std::size_t h = 0; h < kRoleHosts; ++h) {
      CommandResult reach;
      for (int i = 0; i < 50 && !reach.ok(); ++i) {
        if (i > 0) std::this_thread::sleep_for(100ms);
        reach = run_command(testbed_->in_host(kRoleHosts, {"ssh", "-F", path("ssh_config"), "-o", "BatchMode=yes",
                                                           Testbed::ipv4(h), "true"}),
                            5s);
      }
      ASSERT_TRUE(reach.ok()) << "sshd in " << Testbed::host_name(h) << " not reachable: " << reach.output
                              << read_all(dir_ / fmt::format("sshd_{}.log", h));
    }
  }

  // Our sshd first, by PID; then the namespaces, with whatever still runs in them.
  void TearDown() override {
    sshd_.clear();
    testbed_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string exp() const { return path("exp"); }

  std::string config(int iterations) const {
    std::string file = path("experiment.toml");
    std::ofstream(file) << "[experiment]\nname = \"t\"\nexecutor = \"hosts\"\nlink = \"200M\"\nstep_timeout = \"60s\"\n"
                        << "[training]\nmodel = \"" << XTK_TINY_MODEL << "\"\nranks = 2\niterations = "
                        << iterations
                        // Every role starts over ssh: on a loaded 2-core CI machine a rank once
                        // came 1.7 s after the default 3 s launch margin (plus twice the slowest
                        // ssh round trip) had passed, and once 0.5 s after an 8 s one, with both
                        // tests of this fixture running at once.
                        << "\nwarmup = 0\ntimeout = \"20s\"\nstartup = \"20s\"\n"
                        << "[cross_traffic]\nprofiles = [\"consistent\"]\nloads = [0.5]\nwarmup = \"500ms\"\n"
                        << "[capture]\ncounter_period = \"1ms\"\n"
                        << "[hosts]\nfile = \"" << path("hosts.txt") << "\"\nssh_config = \"" << path("ssh_config")
                        << "\"\n";
    return file;
  }
  std::vector<std::string> xtk_run(const std::string& cfg) const {
    return testbed_->in_host(kRoleHosts, {XTK_RUN_BIN, cfg, "-o", exp(), "-q"});
  }

  // What runs in a host's namespace besides our sshd: "PID comm" each.
  std::vector<std::string> others_in(std::size_t host) const {
    std::vector<std::string> out;
    std::istringstream pids(run_command({"ip", "netns", "pids", testbed_->host_ns(host)}).output);
    for (pid_t p; pids >> p;) {
      if (host < sshd_.size() && p == sshd_[host]->pid()) continue;
      std::string comm = read_all(fmt::format("/proc/{}/comm", p));
      if (!comm.empty() && comm.back() == '\n') comm.pop_back();
      if (!comm.empty()) out.push_back(fmt::format("{} {}", p, comm));
    }
    return out;
  }
  bool runs_in(std::size_t host, const std::string& comm) const {
    for (const auto& p : others_in(host)) {
      if (p.substr(p.find(' ') + 1) == comm) return true;
    }
    return false;
  }
  // Until every role host holds nothing but its sshd, at most `limit`.
  std::string leftovers_after(std::chrono::seconds limit) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (true) {
      std::string left;
      for (std::size_t h = 0; h <= kRoleHosts; ++h) {
        for (const auto& p : others_in(h)) left += fmt::format(" {}:{}", Testbed::host_name(h), p);
      }
      if (left.empty() || std::chrono::steady_clock::now() > deadline) return left;
      std::this_thread::sleep_for(100ms);
    }
  }

  // Starts xtk-run in its own process group, as a shell starts a job, and
  // sends `signo` to that group (Ctrl-C: SIGINT) while the loaded step's
  // cross traffic and ranks run; xtk-run must exit with `expected`.
  void interrupt_mid_step(int signo, std::optional<int> expected) {
    ChildProcess run(xtk_run(config(100)), path("run.log"), {.own_group = true});
    const auto running = [&] {
      return runs_in(0, "xtk-server") && runs_in(2, "xtk-client") && runs_in(0, "xtk-collective") &&
             runs_in(1, "xtk-collective");
    };
    // Mid-step: past the common start, with rank 0's first iterations written
    // (the start-up margin is long, and roles waiting for it are not the case).
    const fs::path iterations = fs::path(exp()) / "tiny-mlp/consistent/step01/iterations-0.csv";
    const auto iterating = [&] { return iterations_written(iterations) > 0; };
    for (int i = 0; i < 1200 && !(running() && iterating()) && run.running(); ++i) std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(running() && iterating()) << "the loaded step never ran: " << read_all(path("run.log"));
    ASSERT_EQ(::kill(-run.pid(), signo), 0);  // the group we made for it
    const auto status = run.wait(60s);
    ASSERT_TRUE(status) << "xtk-run did not end";
    if (expected) {
      EXPECT_EQ(*status, *expected) << read_all(path("run.log"));
    }
    const std::string left = leftovers_after(20s);
    EXPECT_EQ(left, "") << "still running after xtk-run ended";
    EXPECT_FALSE(fs::exists(fs::path(exp()) / "tiny-mlp/consistent/step01/run.json"));
  }

  fs::path dir_;
  std::unique_ptr<Testbed> testbed_;
  std::vector<std::unique_ptr<ChildProcess>> sshd_;
};

TEST_F(SshHosts, ARunCompletesWithEveryFile) {
  const auto result = run_command(xtk_run(config(3)), 180s);
  ASSERT_EQ(result.exit_status, 0) << result.output;
  for (const char* step : {"tiny-mlp/none/step00", "tiny-mlp/consistent/step01"}) {
    const fs::path s = fs::path(exp()) / step;
    ASSERT_TRUE(fs::exists(s / "run.json")) << step;
    const auto j = nlohmann::json::parse(read_all(s / "run.json"));
    EXPECT_EQ(j["status"], "ok") << step;
    EXPECT_TRUE(fs::exists(s / "iterations-0.csv"));
    EXPECT_TRUE(fs::exists(s / "iterations-1.csv"));
  }
  const fs::path loaded = fs::path(exp()) / "tiny-mlp/consistent/step01";
  for (const char* f : {"flows.csv", "counters.csv", "counters_training.csv", "schedule.csv"}) {
    EXPECT_TRUE(fs::exists(loaded / f)) << f;
  }
  const auto j = nlohmann::json::parse(read_all(loaded / "run.json"));
  EXPECT_EQ(j["executor"]["executor"], "hosts");
  ASSERT_EQ(j["executor"]["hosts"].size(), kRoleHosts) << j["executor"].dump();
  EXPECT_EQ(j["executor"]["hosts"][2]["address"], "10.77.0.3");
  // One machine: every clock is ours, so an offset is the measurement's own
  // error, at most half the round trip it was read in (the midpoint's bound).
  // The whole ssh run's midpoint was off by most of the set-up: 0.7 s once.
  for (const auto& h : j["executor"]["hosts"]) {
    EXPECT_LE(std::abs(h["clock_offset_ns"].get<double>()), h["clock_rtt_ns"].get<double>() / 2 + 1e6) << h;
  }
  EXPECT_EQ(j["provenance"]["hosts"][1]["host"], "h1");
  EXPECT_NE(j["provenance"]["hosts"][1]["kernel"], "unknown");
  EXPECT_TRUE(fs::exists(fs::path(exp()) / "tables" / "iteration_time.csv"));
  EXPECT_EQ(leftovers_after(10s), "");
}

TEST_F(SshHosts, AHostWithoutSshdIsNamedWithWhatSshSaid) {
  // h3 runs xtk-run and no sshd: its own address refuses the connection.
  std::ofstream(path("hosts.txt")) << Testbed::host_name(kRoleHosts) << ' ' << Testbed::ipv4(kRoleHosts) << " eth0\nh1 "
                                   << Testbed::ipv4(1) << " eth0\nh2 " << Testbed::ipv4(2) << " eth0\n";
  const auto result = run_command(xtk_run(config(3)), 60s);
  EXPECT_EQ(result.exit_status, 1) << result.output;
  EXPECT_NE(result.output.find(Testbed::ipv4(kRoleHosts) + ": reading its clock over ssh: no shell"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("Connection refused"), std::string::npos) << result.output;
}

TEST_F(SshHosts, CtrlCEndsTheRemoteRoles) { interrupt_mid_step(SIGINT, 130); }

// xtk-run killed outright: each ssh's stdin reaches end of file, and the
// wrappers end their tools with SIGTERM.
TEST_F(SshHosts, KilledXtkRunEndsTheRemoteRoles) { interrupt_mid_step(SIGKILL, 128 + SIGKILL); }

}  // namespace
}  // namespace xtk
