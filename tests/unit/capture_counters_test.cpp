// Counter sources (a fake sysfs/proc tree for RDMA and SNMP, the real sysfs
// of lo), the sampler and its file, and rates from cumulative counters with
// resets, wraps and slow samples.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "capture/counter_rates.hpp"
#include "capture/counter_source.hpp"
#include "capture/sampler.hpp"
#include "common/cpu_wake_latency.hpp"
#include "core/clock.hpp"
#include "core/cpus.hpp"
#include "core/error.hpp"
#include "core/idle_poller.hpp"
#include "core/kernel_files.hpp"
#include "formats/counters.hpp"

namespace xtk::capture {
namespace {

namespace fs = std::filesystem;

class CaptureCounters : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xtk_counters_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    paths_.sys = (dir_ / "sys").string();
    paths_.proc = (dir_ / "proc").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void put(const std::string& relative, const std::string& text) {
    const fs::path p = dir_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void fake_rdma() {
    const std::string port = "sys/class/infiniband/mlx5_0/ports/1/";
    put(port + "counters/port_xmit_data", "1000\n");
    put(port + "counters/port_rcv_data", "2000\n");
    put(port + "counters/port_xmit_wait", "5\n");
    put(port + "hw_counters/np_cnp_sent", "7\n");
    put(port + "hw_counters/rp_cnp_handled", "8\n");
    put(port + "hw_counters/out_of_sequence", "0\n");
    put("sys/class/infiniband/mlx5_0/hw_counters/local_ack_timeout_err", "3\n");
    put("sys/class/net/eth0/statistics/rx_bytes", "123\n");
  }

  void fake_snmp(const std::string& icmp_names = "InType3", const std::string& icmp_values = "4",
                 const std::string& tcp_ext_names = "TCPTimeouts") {
    put("proc/net/snmp", "Ip: Forwarding DefaultTTL InReceives\nIp: 1 64 100\nIcmpMsg: " + icmp_names + "\nIcmpMsg: " +
                             icmp_values + "\nTcp: RtoAlgorithm MaxConn CurrEstab RetransSegs\nTcp: 1 -1 5 42\n");
    put("proc/net/netstat", "TcpExt: SyncookiesSent " + tcp_ext_names + "\nTcpExt: 0 9\n");
  }

  fs::path dir_;
  SystemPaths paths_;
};

TEST(CaptureSourceSpec, ParsesKindsTargetsAndGlobs) {
  auto s = parse_source_spec("ethtool:eth*=rx_*_phy,tx_*_phy");
  EXPECT_EQ(s.kind, "ethtool");
  EXPECT_EQ(s.target, "eth*");
  EXPECT_EQ(s.globs, (std::vector<std::string>{"rx_*_phy", "tx_*_phy"}));
  s = parse_source_spec("snmp");
  EXPECT_EQ(s.globs, std::vector<std::string>{"*"});
  EXPECT_EQ(parse_source_spec("rdma:mlx5_0/1").target, "mlx5_0/1");
  EXPECT_THROW(parse_source_spec("nic:eth0"), UsageError);
  EXPECT_THROW(parse_source_spec("net"), UsageError);
  EXPECT_THROW(parse_source_spec("net:eth0="), UsageError);
  EXPECT_THROW(parse_source_spec("snmp:x"), UsageError);
  EXPECT_EQ(counter_bytes_per_unit("rx_bytes_phy"), 1);
  EXPECT_EQ(counter_bytes_per_unit("port_xmit_data"), 4);
  EXPECT_EQ(counter_bytes_per_unit("InOctets"), 1);
  EXPECT_EQ(counter_bytes_per_unit("rx_packets"), 0);
}

TEST_F(CaptureCounters, RdmaPortAndDeviceCountersFromSysfs) {
  fake_rdma();
  auto sources = open_sources(parse_source_spec("rdma:mlx5_0/1=port_*_data,*cnp*"), paths_);
  ASSERT_EQ(sources.size(), 1u);
  EXPECT_EQ(sources[0]->name(), "rdma:mlx5_0/1");
  EXPECT_EQ(sources[0]->counters(),
            (std::vector<std::string>{"port_rcv_data", "port_xmit_data", "np_cnp_sent", "rp_cnp_handled"}));
  std::vector<std::uint64_t> v(4);
  ASSERT_TRUE(sources[0]->read(v.data()));
  EXPECT_EQ(v, (std::vector<std::uint64_t>{2000, 1000, 7, 8}));
  put("sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "4000000000\n");
  ASSERT_TRUE(sources[0]->read(v.data()));
  EXPECT_EQ(v[1], 4000000000u);

  // The whole device: its ports and its device-wide hw_counters.
  auto all = open_sources(parse_source_spec("rdma:mlx5_*"), paths_);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]->name(), "rdma:mlx5_0");
  EXPECT_EQ(all[0]->counters(), std::vector<std::string>{"local_ack_timeout_err"});
  EXPECT_EQ(all[1]->counters().size(), 6u);
}

TEST_F(CaptureCounters, MissingDevicesAndCountersNameWhatExists) {
  fake_rdma();
  try {
    open_sources(parse_source_spec("rdma:mlx5_9"), paths_);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no RDMA device 'mlx5_9' here (RDMA devices: mlx5_0)"), std::string::npos)
        << e.what();
  }
  try {
    open_sources(parse_source_spec("net:eth9"), paths_);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no interface 'eth9' here (interfaces: eth0)"), std::string::npos) << e.what();
  }
  try {
    open_sources(parse_source_spec("net:eth0=tx_*"), paths_);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no counter of net:eth0 matches tx_*"), std::string::npos) << e.what();
  }
  SystemPaths empty{path("nothing"), path("nothing")};
  EXPECT_THROW(open_sources(parse_source_spec("rdma:*"), empty), UsageError);
}

TEST_F(CaptureCounters, SnmpCountersSkipGaugesAndFollowNewColumns) {
  fake_snmp();
  auto sources = open_sources(parse_source_spec("snmp=Tcp:*,TcpExt:TCPTimeouts,IcmpMsg:*"), paths_);
  ASSERT_EQ(sources.size(), 1u);
  auto& s = *sources[0];
  // MaxConn (-1, a setting) and CurrEstab (a gauge) are not counters.
  EXPECT_EQ(s.counters(),
            (std::vector<std::string>{"IcmpMsg:InType3", "Tcp:RtoAlgorithm", "Tcp:RetransSegs", "TcpExt:TCPTimeouts"}));
  std::vector<std::uint64_t> v(4);
  ASSERT_TRUE(s.read(v.data()));
  EXPECT_EQ(v, (std::vector<std::uint64_t>{4, 1, 42, 9}));
  // The kernel adds an IcmpMsg column in front: the positions are looked up again.
  fake_snmp("InType0 InType3", "1 4");
  ASSERT_TRUE(s.read(v.data()));
  EXPECT_EQ(v[0], 4u);
  // A counter that disappears ends the source with a reason.
  fake_snmp("InType3", "4", "SomethingElse");
  EXPECT_FALSE(s.read(v.data()));
  EXPECT_NE(s.why().find("TcpExt:TCPTimeouts disappeared"), std::string::npos) << s.why();
}

TEST_F(CaptureCounters, RealLoopbackCountersSeeAKnownTransfer) {
  auto sources = open_sources(parse_source_spec("net:lo=rx_bytes,tx_bytes"));
  ASSERT_EQ(sources[0]->counters(), (std::vector<std::string>{"rx_bytes", "tx_bytes"}));
  std::vector<std::uint64_t> before(2), after(2);
  ASSERT_TRUE(sources[0]->read(before.data()));
  // 4 MiB through a loopback TCP connection.
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  listen(listener, 1);
  constexpr std::size_t kBytes = 4 << 20;
  std::thread sender([&] {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      std::vector<char> chunk(64 * 1024, 'x');
      for (std::size_t sent = 0; sent < kBytes; sent += chunk.size()) {
        if (send(fd, chunk.data(), chunk.size(), 0) <= 0) break;
      }
    }
    close(fd);
  });
  const int conn = accept(listener, nullptr, nullptr);
  std::size_t received = 0;
  char buffer[65536];
  for (ssize_t n; (n = recv(conn, buffer, sizeof buffer, 0)) > 0;) received += static_cast<std::size_t>(n);
  sender.join();
  close(conn);
  close(listener);
  ASSERT_EQ(received, kBytes);
  ASSERT_TRUE(sources[0]->read(after.data()));
  // Other programs may use lo too: at least the transfer, headers included.
  EXPECT_GE(after[0] - before[0], kBytes);
  EXPECT_GE(after[1] - before[1], kBytes);
}

// net:IF on the live system reads every statistic with one RTM_GETSTATS
// request: each value lies between the sysfs file's value read just before
// and just after it, for all 24 of lo's counters.
TEST_F(CaptureCounters, NetlinkAndSysfsAgreeOnEveryLoopbackCounter) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& entry : fs::directory_iterator("/sys/class/net/lo/statistics")) {
    files.emplace_back(entry.path().filename().string(), entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> names;
  for (const auto& [name, path] : files) names.push_back(name);
  const auto netlink = open_netlink_counters("lo", names);
  ASSERT_NE(netlink, nullptr) << "RTM_GETSTATS did not answer for lo";
  EXPECT_EQ(netlink->name(), "net:lo");
  ASSERT_EQ(netlink->counters(), names);
  const auto sysfs = open_sysfs_counters("net:lo", files);
  ASSERT_EQ(sysfs->counters(), names);  // every file of lo is readable
  std::vector<std::uint64_t> before(names.size()), now(names.size()), after(names.size());
  ASSERT_TRUE(sysfs->read(before.data()));
  ASSERT_TRUE(netlink->read(now.data()));
  ASSERT_TRUE(sysfs->read(after.data()));
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_LE(before[i], now[i]) << names[i];
    EXPECT_LE(now[i], after[i]) << names[i];
  }
  EXPECT_EQ(open_netlink_counters("lo", {"no_such_counter"}), nullptr);  // sysfs serves those
  EXPECT_EQ(open_netlink_counters("xtk-no-such-if", {"rx_bytes"}), nullptr);
}

// A source that reads `reads` times, then goes away.
class FadingSource final : public CounterSource {
 public:
  explicit FadingSource(int reads) : left_(reads) {
    name_ = "fake:x";
    counters_ = {"a_bytes", "b"};
  }
  bool read(std::uint64_t* values) override {
    if (left_-- <= 0) {
      why_ = "it went away";
      return false;
    }
    values[0] = value_ += 1000;
    values[1] = 1;
    return true;
  }

 private:
  int left_;
  std::uint64_t value_ = 0;
};

// A source whose reads take 20 ms each, keeping when each began and ended.
class SlowSource final : public CounterSource {
 public:
  SlowSource() {
    name_ = "fake:slow";
    counters_ = {"a"};
  }
  bool read(std::uint64_t* values) override {
    const std::int64_t began = monotonic_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    values[0] = reads.size();
    reads.emplace_back(began, monotonic_ns());
    return true;
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> reads;
};

TEST_F(CaptureCounters, EachSampleIsStampedInsideItsReads) {
  std::vector<std::unique_ptr<CounterSource>> sources;
  sources.push_back(std::make_unique<SlowSource>());
  const auto& slow = static_cast<const SlowSource&>(*sources[0]);
  SamplerOptions o;
  o.period_ns = 100'000'000;
  o.duration_ns = 350'000'000;
  o.out = path("slow.csv");
  std::atomic<bool> stop{false};
  const auto r = run_sampler(sources, o, stop);
  ASSERT_GE(r.samples, 2u);
  EXPECT_EQ(r.slow, r.samples);  // 20 ms of reads is over the 10 ms limit of a 100 ms period
  CountersReader reader(o.out);
  CounterSample row;
  std::size_t k = 0;
  while (reader.next(row)) {
    ASSERT_LT(k, slow.reads.size());
    EXPECT_EQ(row.value, k);
    // Stamped after the reads, it would be past the end of each.
    EXPECT_GE(row.t_ns, slow.reads[k].first) << "sample " << k;
    EXPECT_LE(row.t_ns, slow.reads[k].second) << "sample " << k;
    EXPECT_TRUE(row.slow);
    ++k;
  }
  EXPECT_EQ(k, r.samples);
}

TEST_F(CaptureCounters, SamplerWritesAValidFileAndReportsTheIntervals) {
  std::vector<std::unique_ptr<CounterSource>> sources;
  sources.push_back(std::make_unique<FadingSource>(1'000'000));
  for (auto& s : open_sources(parse_source_spec("net:lo"))) sources.push_back(std::move(s));
  SamplerOptions o;
  o.period_ns = 1'000'000;
  o.duration_ns = 60'000'000;
  o.out = path("c.csv");
  o.header = {{"host", "test"}};
  std::atomic<bool> stop{false};
  const auto r = run_sampler(sources, o, stop);
  EXPECT_GE(r.samples, 20u);  // a loaded machine misses some of the 60, never most
  EXPECT_LE(r.samples, 61u);
  EXPECT_EQ(r.samples + r.missed, 60u);
  EXPECT_EQ(r.rows, r.samples * (2 + sources[1]->counters().size()));
  EXPECT_EQ(r.interval_ns.count(), r.samples - 1);
  EXPECT_GE(r.interval_ns.quantile(0.5), 0.9e6);
  EXPECT_FALSE(r.all_vanished);

  CountersReader reader(o.out);
  EXPECT_EQ(reader.header("period_ns"), "1000000");
  EXPECT_EQ(reader.header("host"), "test");
  CounterSample row;
  std::map<std::string, std::int64_t> last_t;
  std::uint64_t rows = 0;
  while (reader.next(row)) {
    const std::string key = std::string(row.source) + "/" + std::string(row.name);
    EXPECT_GT(row.t_ns, last_t[key]);
    last_t[key] = row.t_ns;
    ++rows;
  }
  EXPECT_EQ(rows, r.rows);

  const auto rates = analyze_counters(o.out, {});
  ASSERT_EQ(rates.counters[0].name, "a_bytes");
  EXPECT_EQ(rates.counters[0].intervals, r.samples - 1);
  EXPECT_EQ(rates.counters[0].delta, (r.samples - 1) * 1000);
  EXPECT_EQ(rates.period_ns, 1'000'000);
}

using testing::cpu_wake_latency_target;

// True once the target is back to `value`: an xtk-client of a test running
// beside this one may hold the CPUs polling for a few seconds (its default).
bool target_returns_to(std::optional<std::int32_t> value) {
  for (int i = 0; i < 600; ++i) {
    if (cpu_wake_latency_target() == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST_F(CaptureCounters, SamplerHoldsTheCpuWakeLatencyRequestOnlyWhileItRuns) {
  const auto before = cpu_wake_latency_target();
  if (!before) GTEST_SKIP() << "/dev/cpu_dma_latency cannot be read here (needs root)";
  if (*before == 0) GTEST_SKIP() << "another process holds the CPUs polling already";
  std::vector<std::unique_ptr<CounterSource>> sources;
  for (auto& s : open_sources(parse_source_spec("net:lo=rx_bytes"))) sources.push_back(std::move(s));
  SamplerOptions o;
  o.duration_ns = 400'000'000;
  o.cpu_wake_latency_ns = 0;
  o.out = path("c.csv");
  std::atomic<bool> stop{false};
  SamplerReport r;
  std::thread sampler([&] { r = run_sampler(sources, o, stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto during = cpu_wake_latency_target();
  sampler.join();
  EXPECT_EQ(during, 0);
  EXPECT_TRUE(target_returns_to(before));
  EXPECT_EQ(r.options.cpu_wake_latency_ns, 0);
  EXPECT_GT(r.samples, 0u);
  // Without a cpuidle driver the request is kept by polling every CPU the
  // sampler may use, and that spinning stays out of the sampler's own CPU.
  if (read_first_line("/sys/devices/system/cpu/cpuidle/current_driver") == "none" && cgroup_cpu_quota().empty()) {
    EXPECT_EQ(r.wake_latency, fmt::format("PM QoS 0 us, kept by polling CPU {} at SCHED_IDLE (no cpuidle driver)",
                                          cpu_list_text(allowed_cpus())));
    EXPECT_GT(r.polling_cpu_percent, 0);
    EXPECT_LT(r.cpu_percent, 50) << "the pollers' spinning counted as the sampler's";
  } else {
    EXPECT_EQ(r.wake_latency.rfind("PM QoS 0 us", 0), 0u) << r.wake_latency;
    EXPECT_EQ(r.polling_cpu_percent, 0);
  }
  o.cpu_wake_latency_ns = 3'000'000'000'000;  // 3000 s: more microseconds than the kernel's int32 holds
  o.out = path("refused.csv");
  EXPECT_THROW(run_sampler(sources, o, stop), UsageError);
  EXPECT_FALSE(fs::exists(o.out));
  EXPECT_TRUE(target_returns_to(before));
}

TEST_F(CaptureCounters, SamplerStopsASourceThatGoesAwayAndEndsWhenNoneIsLeft) {
  std::vector<std::unique_ptr<CounterSource>> sources;
  sources.push_back(std::make_unique<FadingSource>(5));
  SamplerOptions o;
  o.period_ns = 1'000'000;
  o.duration_ns = 5'000'000'000;  // ends long before: nothing left to sample
  o.out = path("c.csv");
  std::atomic<bool> stop{false};
  const auto r = run_sampler(sources, o, stop);
  EXPECT_TRUE(r.all_vanished);
  EXPECT_EQ(r.samples, 5u);
  ASSERT_EQ(r.vanished.size(), 1u);
  EXPECT_NE(r.vanished[0].find("fake:x: it went away at +"), std::string::npos) << r.vanished[0];
  EXPECT_LT(r.wall_ns, 1'000'000'000);
}

TEST_F(CaptureCounters, RatesHandleResetsWrapsAndSlowSamples) {
  std::ofstream(path("c.csv")) << "# xtk-counters\n# format_version=1\n# period_ns=1000000\n"
                                  "t_ns,realtime_ns,source,name,value,slow\n"
                                  "1000000,5000000,net:eth0,rx_bytes,1000,0\n"
                                  "1000000,5000000,ib,port_xmit_data,4294967000,0\n"
                                  "2000000,6000000,net:eth0,rx_bytes,126000,0\n"  // +125000 B in 1 ms
                                  "2000000,6000000,ib,port_xmit_data,704,0\n"     // 32-bit wrap: +1000 words
                                  "3000000,7000000,net:eth0,rx_bytes,500,0\n"     // reset
                                  "3000000,7000000,ib,port_xmit_data,1704,1\n"    // slow
                                  "4000000,8000000,net:eth0,rx_bytes,125500,0\n"  // +125000
                                  "4000000,8000000,ib,port_xmit_data,2704,0\n";   // previous slow
  CounterRateOptions o;
  o.rates_path = path("rates.csv");
  const auto r = analyze_counters(path("c.csv"), o);
  ASSERT_EQ(r.counters.size(), 2u);
  const auto& rx = r.counters[0];
  EXPECT_EQ(rx.resets, 1u);
  EXPECT_EQ(rx.delta, 250000u);
  EXPECT_DOUBLE_EQ(rx.mean_per_s(), 125000.0 / 1e-3);
  EXPECT_DOUBLE_EQ(rx.max_per_s, 125000.0 / 1e-3);
  const auto& ib = r.counters[1];
  EXPECT_EQ(ib.bytes_per_unit, 4);
  EXPECT_EQ(ib.wraps, 1u);
  EXPECT_EQ(ib.slow, 2u);
  EXPECT_EQ(ib.delta, 3000u);
  EXPECT_EQ(ib.rated_delta, 1000u);

  std::ifstream in(path("rates.csv"));
  std::vector<std::string> l;
  for (std::string line; std::getline(in, line);) l.push_back(line);
  ASSERT_EQ(l.size(), 4u + 6u);
  EXPECT_EQ(l[3], "t_ns,realtime_ns,interval_ns,source,name,delta,rate_per_s,rate_bps,status");
  EXPECT_EQ(l[4], "2000000,6000000,1000000,net:eth0,rx_bytes,125000,1.25e+08,1000000000,ok");
  EXPECT_EQ(l[5], "2000000,6000000,1000000,ib,port_xmit_data,1000,1e+06,32000000,wrap");
  EXPECT_EQ(l[6], "3000000,7000000,1000000,net:eth0,rx_bytes,,,,reset");
  EXPECT_EQ(l[7], "3000000,7000000,1000000,ib,port_xmit_data,1000,,,slow");

  const auto table = counter_rate_table(r);
  EXPECT_EQ(table.rows(), 2u);
  const auto j = counter_rate_json(r);
  EXPECT_EQ(j["counters"][1]["mean_bps"], 32000000.0);

  o.rates_path.clear();
  o.names = {"rx_*"};
  o.from = parse_time_bound("2ms", "--from");  // from the sample at t=3 ms
  const auto windowed = analyze_counters(path("c.csv"), o);
  ASSERT_EQ(windowed.counters.size(), 1u);
  EXPECT_EQ(windowed.counters[0].intervals, 1u);
  EXPECT_EQ(windowed.counters[0].resets, 0u);
  o.names = {"nothing*"};
  EXPECT_THROW(analyze_counters(path("c.csv"), o), UsageError);
}

TEST_F(CaptureCounters, BadCounterFilesNameTheLine) {
  auto expect_error = [&](const std::string& text, const std::string& what) {
    std::ofstream(path("bad.csv")) << text;
    try {
      CountersReader reader(path("bad.csv"));
      CounterSample row;
      while (reader.next(row)) {
      }
      FAIL() << "no error for " << what;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  const std::string head = "# xtk-counters\n# format_version=1\nt_ns,realtime_ns,source,name,value,slow\n";
  expect_error("t_ns,realtime_ns\n", "the first line must be '# xtk-counters'");
  expect_error("# xtk-counters\nt_ns,realtime_ns,source,name,value,slow\n", "no '# format_version=N' line");
  expect_error("# xtk-counters\n# format_version=2\n", "format_version 2 is not supported");
  expect_error(head + "1,2,net:eth0,rx_bytes,-5,0\n", "bad.csv:4: value '-5'");
  expect_error(head + "1,2,net:eth0,rx_bytes,5,yes\n", "bad.csv:4: slow 'yes'");
  expect_error(head + "1,2,net:eth0,rx_bytes,5\n", "bad.csv:4: 5 fields, expected 6");
  expect_error(head + "1,2,net:eth0,rx_bytes,5,0,7\n", "bad.csv:4: more than 6 fields");
}

}  // namespace
}  // namespace xtk::capture
