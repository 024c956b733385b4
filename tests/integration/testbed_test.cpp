// xtk-server and xtk-client as processes in a network-namespace testbed: real
// links, a bridge as the switch, tc shaping. Needs root; skips otherwise.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <tuple>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/kernel_files.hpp"
#include "core/process.hpp"
#include "core/units.hpp"
#include "testbed/testbed.hpp"
#include "workload/generator.hpp"

namespace xtk {
namespace {

using namespace std::chrono_literals;

class TestbedFlows : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto reason = Testbed::unavailable_reason()) GTEST_SKIP() << "no testbed: " << *reason;
    dir_ = std::filesystem::temp_directory_path() /
           ("xtk_tb_" + std::to_string(::getpid()) + "_" + std::to_string(++count_));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    servers_.clear();
    testbed_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  void build(std::size_t hosts, std::vector<Shaping> shaping = {}) {
    TestbedSpec spec;
    spec.name = "it" + std::to_string(::getpid() % 100000) + "-" + std::to_string(count_);
    spec.hosts = hosts;
    spec.shaping = std::move(shaping);
    testbed_ = std::make_unique<Testbed>(spec);
  }

  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  ChildProcess& start_server(std::size_t host) {
    servers_.push_back(std::make_unique<ChildProcess>(
        testbed_->in_host(host, {XTK_SERVER_BIN, "--listen", "[::]:7000", "--quiet"}), file("server.log")));
    std::this_thread::sleep_for(200ms);  // listening before the first connect
    return *servers_.back();
  }

  // A web-search or google-rpc schedule from h0 to `destinations`; returns its flow count.
  std::uint64_t schedule(const std::string& path, const std::string& destinations, double load_bps,
                         std::int64_t duration_ns, const std::string& cdf = "google-rpc") {
    GenConfig c;
    c.cdf = std::make_shared<FlowSizeCdf>(FlowSizeCdf::load_file(std::string(XTK_CDF_DIR) + "/" + cdf + ".cdf"));
    c.load_bps = load_bps;
    c.link_bps = 1e9;
    c.duration_ns = duration_ns;
    c.sources = {"h0"};
    c.destinations = parse_host_mix(destinations, "--dst");
    return write_schedule(c, path).flows;
  }

  std::vector<std::string> client(std::vector<std::string> args) {
    std::vector<std::string> argv{XTK_CLIENT_BIN, "--map", "h1=10.77.0.2,h2=10.77.0.3",
                                  "--retry-for",  "500ms", "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    return testbed_->in_host(0, argv);
  }

  static std::map<std::string, std::uint64_t> statuses(const std::string& path, std::uint64_t* total) {
    std::map<std::string, std::uint64_t> out;
    std::ifstream in(path);
    *total = 0;
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#' || line.rfind("flow_id,", 0) == 0) continue;
      ++*total;
      std::size_t pos = 0;
      for (int i = 0; i < 8; ++i) pos = line.find(',', pos) + 1;
      out[line.substr(pos, line.find(',', pos) - pos)]++;
    }
    return out;
  }

  std::unique_ptr<Testbed> testbed_;
  std::vector<std::unique_ptr<ChildProcess>> servers_;
  std::filesystem::path dir_;
  static inline int count_ = 0;
};

TEST_F(TestbedFlows, PushAndPullPoolAndPerFlowAllComplete) {
  build(2);
  start_server(1);
  const auto flows = schedule(file("s.csv"), "h1", 100e6, 1'000'000'000);
  for (const char* policy : {"pool", "per-flow"}) {
    for (const char* direction : {"push", "pull"}) {
      const auto out =
          run_checked(client({file("s.csv"), "-o", file("r.csv"), "--policy", policy, "--direction", direction}), 30s);
      const auto j = nlohmann::json::parse(out);
      EXPECT_EQ(j["summary"]["flows_by_status"]["ok"], flows) << policy << " " << direction;
      std::uint64_t total = 0;
      EXPECT_EQ(statuses(file("r.csv"), &total)["ok"], flows);
      EXPECT_EQ(total, flows);
    }
  }
}

// Push fan-in: clients on h0 and h2 into one server on h1 through its shaped
// port, started together (--start-at); `xtk-analyze flows` merges their records.
TEST_F(TestbedFlows, FanInPushFromTwoClientsMergedIntoOneSummary) {
  Shaping port;
  port.where = Shaping::Where::port;
  port.host = 1;
  port.rate_bps = 200e6;
  build(3, {port});
  start_server(1);
  const auto flows0 = schedule(file("s0.csv"), "h1", 70e6, 2'000'000'000, "web-search");
  const auto flows2 = schedule(file("s2.csv"), "h1", 70e6, 2'000'000'000, "google-rpc");
  const std::string start = fmt::format("{:.3f}", static_cast<double>(realtime_ns()) / 1e9 + 1.5);
  const std::vector<std::string> common{XTK_CLIENT_BIN, "--map", "h1=10.77.0.2", "--start-at", start, "--json"};
  auto on = [&](std::size_t host, const std::string& schedule_file, const std::string& records) {
    std::vector<std::string> argv = common;
    argv.insert(argv.end(), {schedule_file, "-o", records});
    return testbed_->in_host(host, argv);
  };
  ChildProcess second(on(2, file("s2.csv"), file("r2.csv")), file("client2.log"));
  const auto first = run_command(on(0, file("s0.csv"), file("r0.csv")), 60s);
  ASSERT_EQ(first.exit_status, 0) << first.output;
  ASSERT_EQ(second.wait(60s), 0);
  const auto out = run_checked({XTK_ANALYZE_BIN, "flows", file("r0.csv"), file("r2.csv"), "--json"}, 30s);
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["files"].size(), 2u);
  EXPECT_EQ(j["files"][0]["flows"], flows0);
  EXPECT_EQ(j["files"][1]["flows"], flows2);
  EXPECT_EQ(j["summary"]["flows"], flows0 + flows2);
  EXPECT_EQ(j["summary"]["flows_by_status"]["ok"], flows0 + flows2);
  // Both clients' bytes came through the one shaped port: together they stay under it.
  EXPECT_GT(j["summary"]["goodput_bps"].get<double>(), 100e6);
  EXPECT_LT(j["summary"]["goodput_bps"].get<double>(), 200e6 * 1.05);
}

// At a congested port a handshake queues behind the data: four large flows
// keep h1's 1.2 MB queue (up to 190 ms at 50 Mbit/s) full or refilling while
// small flows come every 150 ms, then 16 at once. The pool learns how long the
// slow handshakes take and opens the burst's connections that much ahead (not
// only --pool-ahead's 40 ms), so none of the 16 waits for one; and a slow
// handshake is not answered with a new SYN every few milliseconds (the server
// counts the connections). The small flows come further apart than half the
// slowest handshake: each takes a spare whose replacement, opened when the one
// before it started, is ready by then, before the pool has seen any handshake
// wait in the queue. It holds whatever the machine's TCP (BBR, CUBIC, Reno):
// with a loss-based one the queue drains after each loss, so a handshake takes
// anything up to the full queue's time, and the pool keeps the slowest.
TEST_F(TestbedFlows, SlowHandshakesAtACongestedPortAreOpenedFurtherAhead) {
  Shaping port;
  port.host = 1;
  port.rate_bps = 50e6;
  port.queue_bytes = 1'200'000;
  build(2, {port});
  ChildProcess server(testbed_->in_host(1, {XTK_SERVER_BIN, "--listen", "[::]:7000"}), file("server.log"));
  std::this_thread::sleep_for(200ms);
  constexpr int kBurst = 16;
  {
    std::ofstream out(file("s.csv"));
    out << "# xtk-schedule\n# format_version=1\n# duration_ns=2200000000\nflow_id,start_ns,src,dst,size_bytes\n";
    int id = 0;
    for (int i = 0; i < 4; ++i) out << id++ << ",0,h0,h1,4000000\n";
    for (std::int64_t t = 300'000'000; t <= 1'500'000'000; t += 150'000'000)
      out << id++ << "," << t << ",h0,h1,10000\n";
    for (int i = 0; i < kBurst; ++i) out << id++ << ",2000000000,h0,h1,10000\n";
  }
  const auto out = run_checked(client({file("s.csv"), "-o", file("r.csv")}), 60s);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["summary"]["flows_by_status"]["ok"], 4 + 9 + kBurst);
  // On failure the summary says how far ahead the pool looked and why flows were late.
  EXPECT_EQ(j["summary"]["connection_waits"], 0) << "flows that waited for a handshake: " << j["summary"].dump();
  // The summary says how far ahead the pool came to look: past --pool-ahead's 40 ms.
  EXPECT_GT(j["summary"]["pool_ahead_ns"].get<std::int64_t>(), 40'000'000);
  EXPECT_FALSE(j["summary"]["pool_ahead_at_ceiling"].get<bool>());
  // The burst's flows queued behind the large ones: the handshakes did too.
  std::ifstream records(file("r.csv"));
  std::int64_t burst_fct_us = 0;
  for (std::string line; std::getline(records, line);) {
    if (line.find(",2000000000,") == std::string::npos) continue;
    const auto fields = [&] {
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
      return f;
    }();
    burst_fct_us = std::max<std::int64_t>(burst_fct_us, std::llround(std::stod(fields[6])));
  }
  EXPECT_GT(burst_fct_us, 30'000) << "the port's queue was not full: the test shows nothing";
  server.stop();
  std::ifstream log(file("server.log"));
  std::stringstream text;
  text << log.rdbuf();
  const auto at = text.str().find(" connections ");
  ASSERT_NE(at, std::string::npos) << text.str();
  const auto connections = std::stoull(text.str().substr(at + 13));
  EXPECT_GE(connections, static_cast<unsigned long long>(kBurst));
  EXPECT_LE(connections, static_cast<unsigned long long>(3 * kBurst)) << text.str();
}

TEST_F(TestbedFlows, FanInPullFromTwoServersThroughAShapedPort) {
  // h0's switch port carries both servers' bytes: the incast bottleneck (configuration B).
  Shaping port;
  port.where = Shaping::Where::port;
  port.host = 0;
  port.rate_bps = 200e6;
  build(3, {port});
  start_server(1);
  start_server(2);
  const auto flows = schedule(file("s.csv"), "h1,h2", 150e6, 2'000'000'000, "web-search");
  const auto out = run_checked(client({file("s.csv"), "-o", file("r.csv"), "--direction", "pull"}), 60s);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["summary"]["flows_by_status"]["ok"], flows);
  EXPECT_LT(j["summary"]["goodput_bps"].get<double>(), 200e6 * 1.05);  // the shaped port holds
  std::uint64_t total = 0;
  statuses(file("r.csv"), &total);
  EXPECT_EQ(total, flows);
}

TEST_F(TestbedFlows, ShapedPortLimitsBulkStreams) {
  Shaping port;
  port.host = 1;
  port.rate_bps = 500e6;
  build(2, {port});
  start_server(1);
  const auto out = run_checked(testbed_->in_host(0, {XTK_CLIENT_BIN, "--bulk", "2", "--dst", "10.77.0.2", "-t", "2s",
                                                     "-o", file("r.csv"), "--json"}),
                               30s);
  const double goodput = nlohmann::json::parse(out)["summary"]["goodput_bps"].get<double>();
  EXPECT_GT(goodput, 500e6 * 0.85);
  EXPECT_LT(goodput, 500e6 * 1.02);
}

// queue=BYTES: the shaper's queue holds that many bytes (GSO super-packets
// counted by their segments), never more, and drops the rest, as a switch
// port's buffer does; without it four streams queue more than that.
TEST_F(TestbedFlows, ShapedPortQueueHoldsItsBytes) {
  const auto most_queued = [&](std::uint64_t queue_bytes, std::uint64_t* dropped) {
    Shaping port;
    port.host = 1;
    port.rate_bps = 500e6;
    port.queue_bytes = queue_bytes;
    build(2, {port});
    start_server(1);
    const auto stats = [&] {
      return run_checked({"ip", "netns", "exec", testbed_->switch_ns(), "tc", "-s", "qdisc", "show", "dev", "p1"});
    };
    ChildProcess client_process(
        testbed_->in_host(0, {XTK_CLIENT_BIN, "--bulk", "4", "--dst", "10.77.0.2", "-t", "2s", "-o", file("r.csv")}),
        file("client.log"));
    std::uint64_t most = 0;
    while (!client_process.wait(50ms)) {
      const auto text = stats();
      // The root's backlog: "backlog 744888b 15p" (the first one, htb's, sums its class's queue).
      if (const auto at = text.find(" backlog "); at != std::string::npos) {
        most = std::max<std::uint64_t>(most, std::stoull(text.substr(at + 9)));
      }
    }
    const auto text = stats();
    const auto at = text.find("(dropped ");
    *dropped = at == std::string::npos ? 0 : std::stoull(text.substr(at + 9));
    if (queue_bytes > 0) {
      EXPECT_NE(text.find("bfifo"), std::string::npos) << text;
    }
    servers_.clear();
    testbed_.reset();
    return most;
  };
  std::uint64_t dropped = 0;
  const auto unbounded = most_queued(0, &dropped);
  EXPECT_GT(unbounded, 300'000u);  // the qdisc's 1,000 packets, most of them 64 KiB super-packets
  const auto bounded = most_queued(200'000, &dropped);
  EXPECT_LE(bounded, 200'000u);
  EXPECT_GT(bounded, 100'000u);
  EXPECT_GT(dropped, 0u);
}

TEST_F(TestbedFlows, ServerKilledMidRunEveryFlowHasARecord) {
  build(2);
  auto& server = start_server(1);
  const auto flows = schedule(file("s.csv"), "h1", 50e6, 3'000'000'000);
  ChildProcess client_process(client({file("s.csv"), "-o", file("r.csv")}), file("client.log"));
  std::this_thread::sleep_for(1200ms);
  server.signal(SIGKILL);
  const auto status = client_process.wait(30s);
  ASSERT_TRUE(status) << "client did not end";
  std::uint64_t total = 0;
  auto by_status = statuses(file("r.csv"), &total);
  EXPECT_EQ(total, flows);
  EXPECT_GT(by_status["ok"], 0u);
  EXPECT_GT(by_status["failed"], 0u);
}

TEST_F(TestbedFlows, ClientInterruptedRecordsTheRestAsCancelled) {
  build(2);
  start_server(1);
  const auto flows = schedule(file("s.csv"), "h1", 50e6, 5'000'000'000);
  ChildProcess client_process(client({file("s.csv"), "-o", file("r.csv"), "--grace", "300ms"}), file("client.log"));
  // Interrupted once flows are done (a busy machine may take a while to start it), well before the end.
  std::uint64_t done = 0;
  for (int i = 0; i < 100 && done == 0; ++i) {
    std::this_thread::sleep_for(50ms);
    statuses(file("r.csv"), &done);
  }
  ASSERT_GT(done, 0u) << "no flow done within 5 s";
  client_process.signal(SIGINT);
  const auto status = client_process.wait(10s);
  ASSERT_TRUE(status) << "client did not stop";
  EXPECT_EQ(*status, 0);
  std::uint64_t total = 0;
  auto by_status = statuses(file("r.csv"), &total);
  EXPECT_EQ(total, flows);
  EXPECT_GT(by_status["ok"], 0u);
  EXPECT_GT(by_status["cancelled"], flows / 2);
}

TEST(Testbed, TearDownLeavesNoNamespaces) {
  if (auto reason = Testbed::unavailable_reason()) GTEST_SKIP() << "no testbed: " << *reason;
  const std::string name = "td" + std::to_string(::getpid() % 100000);
  {
    TestbedSpec spec;
    spec.name = name;
    spec.hosts = 3;
    Testbed testbed(spec);
    EXPECT_NE(run_checked({"ip", "netns", "list"}).find("xtk-" + name + "-h2"), std::string::npos);
  }
  EXPECT_EQ(run_checked({"ip", "netns", "list"}).find("xtk-" + name + "-"), std::string::npos);
  EXPECT_THROW(parse_shaping("port:x1=1G"), UsageError);
  EXPECT_EQ(parse_shaping("nic:h2=10G/tbf").qdisc, Shaping::Qdisc::tbf);
  const auto queued = parse_shaping("port:h0=1G/tbf/queue=1MiB");
  EXPECT_EQ(queued.qdisc, Shaping::Qdisc::tbf);
  EXPECT_EQ(queued.queue_bytes, 1048576u);
  EXPECT_EQ(parse_shaping("port:h0=1G/queue=300KB").queue_bytes, 300'000u);
  EXPECT_THROW(parse_shaping("port:h0=1G/queue=0"), UsageError);
  EXPECT_THROW(parse_shaping("port:h0=1G/fifo"), UsageError);
  TestbedSpec small;
  small.name = name;
  small.shaping = {parse_shaping("port:h0=1G/queue=100KB")};  // less than two 64 KiB super-packets
  EXPECT_THROW(Testbed{small}, UsageError);
  small.offloads = false;  // two 1514-byte frames are enough then
  EXPECT_EQ(small.min_queue_bytes(), 3028u);
}

// /queue=BYTES: htb's class gets a bfifo of that many bytes, tbf that limit
// (tc reports it as the latency it makes at the rate after the bucket).
TEST(Testbed, ShapersQueueTheirBytes) {
  if (auto reason = Testbed::unavailable_reason()) GTEST_SKIP() << "no testbed: " << *reason;
  TestbedSpec spec;
  spec.name = "q" + std::to_string(::getpid() % 100000);
  spec.shaping = {parse_shaping("port:h0=1G/tbf/queue=200KB"), parse_shaping("port:h1=1G/queue=300KB")};
  Testbed testbed(spec);
  const auto qdiscs = [&](const std::string& dev) {
    return nlohmann::json::parse(
        run_checked({"ip", "netns", "exec", testbed.switch_ns(), "tc", "-j", "qdisc", "show", "dev", dev}));
  };
  const auto tbf = qdiscs("p0").at(0);
  ASSERT_EQ(tbf["kind"], "tbf") << tbf;
  const double bucket = tbf["options"]["burst"], bytes_per_s = tbf["options"]["rate"];
  EXPECT_NEAR(tbf["options"]["lat"].get<double>(), (200'000 - bucket) / bytes_per_s * 1e6, 1.0) << tbf;
  bool bfifo = false;
  for (const auto& q : qdiscs("p1")) {
    if (q["kind"] != "bfifo") continue;
    bfifo = true;
    EXPECT_EQ(q["parent"], "1:1") << q;
    EXPECT_EQ(q["options"]["limit"], 300'000) << q;
  }
  EXPECT_TRUE(bfifo) << qdiscs("p1");
}

// congestion_control: every host's namespace takes it as its default, the
// machine's own stays; a name the kernel lacks fails the build, naming it.
TEST(Testbed, CongestionControlIsEveryHostsDefault) {
  if (auto reason = Testbed::unavailable_reason()) GTEST_SKIP() << "no testbed: " << *reason;
  const std::string sysctl = "/proc/sys/net/ipv4/tcp_congestion_control";
  const std::string machine = read_first_line(sysctl);
  TestbedSpec spec;
  spec.name = "cc" + std::to_string(::getpid() % 100000);
  spec.hosts = 2;
  spec.congestion_control = machine == "reno" ? "cubic" : "reno";  // both are built into Debian's kernels
  {
    Testbed testbed(spec);
    for (std::size_t h = 0; h < spec.hosts; ++h) {
      EXPECT_EQ(run_checked({"ip", "netns", "exec", testbed.host_ns(h), "cat", sysctl}),
                spec.congestion_control + "\n");
    }
  }
  EXPECT_EQ(read_first_line(sysctl), machine);
  spec.congestion_control = "nosuchcc";
  try {
    Testbed testbed(spec);
    ADD_FAILURE() << "a congestion control the kernel lacks was accepted";
  } catch (const UsageError&) {
    ADD_FAILURE() << "a well-formed name is not a usage error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'nosuchcc'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("available: "), std::string::npos) << e.what();
  }
  EXPECT_EQ(run_checked({"ip", "netns", "list"}).find("xtk-" + spec.name + "-"), std::string::npos);
  spec.congestion_control = "BBR";
  EXPECT_THROW(Testbed{spec}, UsageError);
}

// A kernel built with bbr allows only `reno bbr` outside its own namespace:
// the testbed allows the algorithm it was asked for, and says so.
TEST(Testbed, CongestionControlNotAllowedIsAllowedAndNoted) {
  if (auto reason = Testbed::unavailable_reason()) GTEST_SKIP() << "no testbed: " << *reason;
  const std::string allowed_file = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
  const std::string available = read_first_line("/proc/sys/net/ipv4/tcp_available_congestion_control");
  const std::string machine = read_first_line("/proc/sys/net/ipv4/tcp_congestion_control");
  const std::string wanted = machine == "cubic" ? "reno" : "cubic";
  if (available.find(wanted) == std::string::npos) GTEST_SKIP() << wanted << " is not in this kernel";
  const std::string before = read_first_line(allowed_file);
  // Only the machine's default stays allowed (it always is, in its own namespace).
  run_checked({"sh", "-c", fmt::format("echo {} > {}", machine, allowed_file)});
  TestbedSpec spec;
  spec.name = "ccallow" + std::to_string(::getpid() % 100000);
  spec.hosts = 1;
  spec.congestion_control = wanted;
  std::string note;
  std::string host_default;
  try {
    Testbed testbed(spec);
    note = testbed.note();
    host_default =
        run_checked({"ip", "netns", "exec", testbed.host_ns(0), "cat", "/proc/sys/net/ipv4/tcp_congestion_control"});
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
  const std::string after = read_first_line(allowed_file);
  run_checked({"sh", "-c", fmt::format("echo '{}' > {}", before, allowed_file)});
  EXPECT_EQ(host_default, wanted + "\n");
  EXPECT_NE((" " + after + " ").find(" " + wanted + " "), std::string::npos) << after;
  // Another test's testbed may have allowed it first, or widened the list
  // for its own algorithm meanwhile; if this one allowed it, it says so, with
  // the list before (without it) and after (with it).
  if (!note.empty()) {
    const auto was = note.find("tcp_allowed_congestion_control was '");
    ASSERT_NE(was, std::string::npos) << note;
    const auto quoted = [&](std::size_t from) {
      const auto open = note.find('\'', from) + 1;
      return fmt::format(" {} ", note.substr(open, note.find('\'', open) - open));
    };
    const std::string listed_before = quoted(was);
    const auto is = note.find(", is '", was);
    ASSERT_NE(is, std::string::npos) << note;
    EXPECT_EQ(listed_before.find(" " + wanted + " "), std::string::npos) << note;
    EXPECT_NE(listed_before.find(" " + machine + " "), std::string::npos) << note;
    EXPECT_NE(quoted(is).find(" " + wanted + " "), std::string::npos) << note;
  }
}

// What the user is told to do when a namespace refuses a congestion control:
// load a module it lacks, or allow one it has (a kernel built with another
// default restricts the rest outside the machine's own namespace).
TEST(Testbed, CongestionControlRefusalNamesTheFix) {
  auto m = congestion_control_refusal("cubic", "xtk-a-h0", "reno bbr cubic", "reno bbr");
  EXPECT_NE(m.find("net.ipv4.tcp_allowed_congestion_control: reno bbr"), std::string::npos) << m;
  EXPECT_NE(m.find("sysctl -w net.ipv4.tcp_allowed_congestion_control='reno bbr cubic'"), std::string::npos) << m;
  m = congestion_control_refusal("dctcp", "xtk-a-h0", "reno bbr cubic", "reno bbr cubic");
  EXPECT_NE(m.find("(available: reno bbr cubic; load its module, e.g. modprobe tcp_dctcp)"), std::string::npos) << m;
  m = congestion_control_refusal("bb", "xtk-a-h0", "reno bbr", "reno bbr");  // a prefix is not a name
  EXPECT_NE(m.find("modprobe tcp_bb"), std::string::npos) << m;
  m = congestion_control_refusal("bbr", "xtk-a-h0", "reno bbr", "reno bbr");
  EXPECT_NE(m.find("(available: reno bbr, allowed: reno bbr)"), std::string::npos) << m;
}

// A CUBIC connection from h0 to h1 sends 4 MB, idles, then sends one byte:
// its congestion window before and after, and its retransmission timeout
// (TCP_INFO). Linux restarts an idle connection from its initial window once
// the idle time exceeds that timeout, which rto_min bounds from below.
struct IdleWindow {
  std::uint32_t before = 0, after = 0;
  std::chrono::microseconds rto{0};
};

// Idles for `idle`, or with `past_rto` 300 ms past the connection's timeout
// if that is longer: RTT samples taken on a loaded machine can raise it above
// the 200 ms floor.
IdleWindow cwnd_across_idle(const Testbed& testbed, std::chrono::milliseconds idle, bool past_rto) {
  IdleWindow cwnd;
  std::string error;
  // setns moves only the calling thread; the sockets keep the namespace they were made in.
  std::thread([&] {
    const auto check = [](bool ok, const char* what) {
      if (!ok) throw std::runtime_error(fmt::format("{}: {}", what, std::strerror(errno)));
    };
    const auto enter = [&](std::size_t host) {
      const int ns = ::open(("/var/run/netns/" + testbed.host_ns(host)).c_str(), O_RDONLY | O_CLOEXEC);
      check(ns >= 0, "open netns");
      check(::setns(ns, CLONE_NEWNET) == 0, "setns");
      ::close(ns);
    };
    const auto snd_cwnd = [&](int fd) {
      tcp_info info{};
      socklen_t len = sizeof info;
      check(::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0, "TCP_INFO");
      return std::tuple{info.tcpi_snd_cwnd, info.tcpi_unacked, std::chrono::microseconds(info.tcpi_rto)};
    };
    try {
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(7100);
      ::inet_pton(AF_INET, Testbed::ipv4(1).c_str(), &addr.sin_addr);
      const auto* sa = reinterpret_cast<const sockaddr*>(&addr);
      enter(1);
      const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      check(::bind(listener, sa, sizeof addr) == 0 && ::listen(listener, 1) == 0, "listen on h1");
      enter(0);
      const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      check(::setsockopt(client, IPPROTO_TCP, TCP_CONGESTION, "cubic", 5) == 0, "TCP_CONGESTION cubic");
      check(::connect(client, sa, sizeof addr) == 0, "connect h0 to h1");
      const int server = ::accept(listener, nullptr, nullptr);
      check(server >= 0, "accept");
      std::thread drain([server] {
        char buf[1 << 16];
        while (::read(server, buf, sizeof buf) > 0) {
        }
      });
      const std::vector<char> data(4 << 20, 'x');
      check(::send(client, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size()), "send");
      const auto deadline = std::chrono::steady_clock::now() + 10s;  // all acknowledged: idle
      while (std::get<1>(snd_cwnd(client)) > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
      std::tie(cwnd.before, std::ignore, cwnd.rto) = snd_cwnd(client);
      const auto wait = past_rto ? std::max<std::chrono::microseconds>(idle, cwnd.rto + 300ms) : idle;
      std::this_thread::sleep_for(wait);
      check(::send(client, data.data(), 1, MSG_NOSIGNAL) == 1, "send after idle");
      cwnd.after = std::get<0>(snd_cwnd(client));
      ::close(client);
      drain.join();
      ::close(server);
      ::close(listener);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }).join();
  if (!error.empty()) throw Error(error);
  return cwnd;
}

// rto_min: every host's routes carry it, so a connection idle for less than
// it keeps its congestion window; under the kernel's 200 ms it restarts.
TEST(Testbed, RtoMinKeepsAnIdleConnectionsWindow) {
  if (auto reason = Testbed::unavailable_reason()) GTEST_SKIP() << "no testbed: " << *reason;
  TestbedSpec spec;
  spec.name = "rto" + std::to_string(::getpid() % 100000);
  spec.hosts = 2;
  IdleWindow kernels, dilated;
  {
    Testbed testbed(spec);
    kernels = cwnd_across_idle(testbed, 500ms, true);
  }
  spec.rto_min_ms = 1000;
  {
    Testbed testbed(spec);
    const auto routes = run_checked({"ip", "-n", testbed.host_ns(0), "route", "show"});
    EXPECT_NE(routes.find("rto_min lock 1s"), std::string::npos) << routes;
    dilated = cwnd_across_idle(testbed, 500ms, false);
  }
  spec.rto_min_ms = 120'001;  // above TCP_RTO_MAX: refused before anything is built
  EXPECT_THROW(Testbed{spec}, UsageError);
  ASSERT_GT(kernels.before, 20u) << "slow start never grew the window: nothing to restart";
  EXPECT_LT(kernels.after, kernels.before)
      << "idle past the timeout (" << kernels.rto.count() << " us) restarts the window";
  ASSERT_GT(dilated.before, 20u);
  EXPECT_GE(dilated.rto, 1s) << "rto_min 1000 ms is the timeout's floor";
  EXPECT_EQ(dilated.after, dilated.before) << "500 ms idle under rto_min 1000 ms keeps the window";
}

// --net-cpus: every interface of the testbed steers its receive processing
// (RPS) to the CPUs given.
TEST(Testbed, NetCpusSteersEveryInterface) {
  if (auto reason = Testbed::unavailable_reason()) GTEST_SKIP() << "no testbed: " << *reason;
  TestbedSpec spec;
  spec.name = "rps" + std::to_string(::getpid() % 100000);
  spec.net_cpus = parse_cpu_list("0", "--net-cpus");
  Testbed testbed(spec);
  const auto mask = [](const std::string& ns, const std::string& dev) {
    const auto out = run_checked({"ip", "netns", "exec", ns, "cat", "/sys/class/net/" + dev + "/queues/rx-0/rps_cpus"});
    return std::stoul(out, nullptr, 16);
  };
  EXPECT_EQ(mask(testbed.host_ns(0), "eth0"), 1u);
  EXPECT_EQ(mask(testbed.host_ns(1), "eth0"), 1u);
  EXPECT_EQ(mask(testbed.switch_ns(), "p0"), 1u);
  EXPECT_EQ(mask(testbed.switch_ns(), "p1"), 1u);
  EXPECT_THROW(parse_cpu_list("0,x", "--net-cpus"), UsageError);
  EXPECT_THROW(parse_cpu_list("4096", "--net-cpus"), UsageError);
  EXPECT_THROW(parse_cpu_list("1-0", "--net-cpus"), UsageError);
  EXPECT_EQ(parse_cpu_list("0-0,0", "--net-cpus").size(), 2u);
}

}  // namespace
}  // namespace xtk
