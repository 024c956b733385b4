// Measured cross-traffic load: counters, trace bins and flow records, each
// restricted to the iterations' window, with hand-computed answers.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "analysis/step.hpp"
#include "core/error.hpp"
#include "formats/counters.hpp"

namespace xtk::analysis {
namespace {

constexpr const char* kCounters = "# xtk-counters\n# format_version=1\nt_ns,realtime_ns,source,name,value,slow\n";
constexpr const char* kTrace =
    "# xtk-trace-bins\n# format_version=1\n# bin_ns=1000\nbin_start_ns,flow,src,dst,bytes,packets\n";
constexpr const char* kFlows =
    "# xtk-flow-records\n# format_version=1\n"
    "flow_id,dst,size_bytes,sched_start_ns,start_ns,end_ns,fct_us,lateness_us,status,error\n";

}  // namespace

TEST(AnalysisLoad, CountersUseTheWindowAndSkipSlowSamples) {
  // 1000 bytes per us on tx_bytes; realtime = t_ns + 5000. Another counter in between is ignored.
  const std::string text = std::string(kCounters) +
                           "0,5000,net:eth0,tx_bytes,0,0\n"
                           "1,5001,net:eth0,rx_bytes,77,0\n"
                           "1000,6000,net:eth0,tx_bytes,1000000,0\n"
                           "2000,7000,net:eth0,tx_bytes,2000000,0\n"
                           "3000,8000,net:eth0,tx_bytes,3000000,0\n";
  // The whole span: 3e6 bytes in 3000 ns = 8e12 bit/s.
  EXPECT_DOUBLE_EQ(counter_load_bps(text, "c.csv", "net:eth0", "tx_bytes", {0, 100000}), 8e12);
  // Half of the first interval and all of the second: the same rate.
  EXPECT_DOUBLE_EQ(counter_load_bps(text, "c.csv", "net:eth0", "tx_bytes", {5500, 7000}), 8e12);

  // A slow sample in the middle carries a burst that never happened: both
  // intervals touching it are void, the rest runs at 1000 B/us.
  const std::string slow = std::string(kCounters) +
                           "0,0,net:eth0,tx_bytes,0,0\n"
                           "1000,1000,net:eth0,tx_bytes,1000000,0\n"
                           "2000,2000,net:eth0,tx_bytes,90000000,1\n"
                           "3000,3000,net:eth0,tx_bytes,91000000,0\n"
                           "4000,4000,net:eth0,tx_bytes,92000000,0\n";
  EXPECT_DOUBLE_EQ(counter_load_bps(slow, "c.csv", "net:eth0", "tx_bytes", {0, 4000}), 8e12);

  // Intervals have their length from t_ns: realtime steps of 1000 ns but
  // t_ns steps of 2000 ns halve the rate.
  const std::string mono = std::string(kCounters) +
                           "0,0,net:eth0,tx_bytes,0,0\n"
                           "2000,1000,net:eth0,tx_bytes,1000000,0\n";
  EXPECT_DOUBLE_EQ(counter_load_bps(mono, "c.csv", "net:eth0", "tx_bytes", {0, 1000}), 4e12);

  try {
    counter_load_bps(text, "c.csv", "net:eth0", "tx_bytes", {9000, 10000});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "c.csv: no usable samples of net:eth0 tx_bytes inside the iterations' window [9000, 10000] realtime "
              "ns (two samples, neither slow, are needed around each interval)");
  }
}

TEST(AnalysisLoad, CounterWrapsResetsAndUnits) {
  // A 32-bit counter wraps between the second and third sample: 1000 B more.
  const std::string wrap = std::string(kCounters) +
                           "0,0,net:eth0,tx_bytes,4294966000,0\n"
                           "1000,1000,net:eth0,tx_bytes,4294967000,0\n"
                           "2000,2000,net:eth0,tx_bytes,704,0\n";
  EXPECT_DOUBLE_EQ(counter_load_bps(wrap, "c.csv", "net:eth0", "tx_bytes", {0, 2000}), 2000 * 8 / 2000e-9);
  // A drop that is no wrap is a reset: that interval is left out.
  const std::string reset = std::string(kCounters) +
                            "0,0,net:eth0,tx_bytes,5000000,0\n"
                            "1000,1000,net:eth0,tx_bytes,6000000,0\n"
                            "2000,2000,net:eth0,tx_bytes,10,0\n";
  EXPECT_DOUBLE_EQ(counter_load_bps(reset, "c.csv", "net:eth0", "tx_bytes", {0, 2000}), 8e12);
  // InfiniBand's port_xmit_data counts 4-byte words.
  const std::string ib = std::string(kCounters) +
                         "0,0,rdma:mlx5_0/1,port_xmit_data,0,0\n"
                         "1000,1000,rdma:mlx5_0/1,port_xmit_data,250,0\n";
  EXPECT_DOUBLE_EQ(counter_load_bps(ib, "c.csv", "rdma:mlx5_0/1", "port_xmit_data", {0, 1000}), 8e9);
  EXPECT_EQ(counter_bytes_per_unit("rx_prio3_bytes"), 1);
  EXPECT_EQ(counter_bytes_per_unit("ifHCOutOctets"), 1);
  EXPECT_EQ(counter_bytes_per_unit("tx_packets"), 0);
  EXPECT_THROW(counter_load_bps(ib, "c.csv", "rdma:mlx5_0/1", "tx_packets", {0, 1000}), InputError);
}

TEST(AnalysisLoad, TraceBinsCrossLoadAndNodes) {
  // Bins of 1000 ns from 0 to 4000; window [500, 3500]: half a bin, two full, half a bin.
  std::string cross = kTrace, training = kTrace;
  for (int b = 0; b < 4; ++b) {
    const std::string start = std::to_string(b * 1000);
    cross += start + ",tcp n0:1>sink:7000,n0,sink,1000,1\n";                                   // 8 Gbit/s
    training += start + ",tcp n0:2>n1:3,n0,n1," + std::to_string(b == 2 ? 4000 : 0) + ",3\n";  // one busy bin
    training += start + ",tcp n1:3>n0:2,n1,n0,500,1\n";                                        // 4 Gbit/s
    // Neighbour discovery and MLD at the capture: no testbed host, no row.
    training += start + ",icmp6 fe80::1>ff02::2,fe80::1,ff02::2,70,1\n";
  }
  TraceBins t({500, 3500});
  t.add(cross, "x.csv", true);
  t.add(training, "t.csv", false);
  EXPECT_TRUE(t.has_cross());
  EXPECT_DOUBLE_EQ(t.cross_load_bps(), 8e9);
  const auto nodes = t.nodes("n0");
  ASSERT_EQ(nodes.size(), 2u);  // sink carries no training traffic; fe80::1 and ff02::2 are not hosts
  EXPECT_EQ(nodes[0].node, "n0");
  EXPECT_EQ(nodes[0].shares_bottleneck, "yes");
  EXPECT_EQ(nodes[1].shares_bottleneck, "no");
  // n0 sent 4000 B in the full bin 2 over 3000 ns: 32e9/3 bit/s; it received 500 B per bin.
  EXPECT_DOUBLE_EQ(nodes[0].train_tx_bps, 4000 * 8 / 3000e-9);
  EXPECT_DOUBLE_EQ(nodes[0].train_rx_bps, 4e9);
  EXPECT_DOUBLE_EQ(nodes[0].cross_bps, 8e9);
  EXPECT_DOUBLE_EQ(nodes[1].cross_bps, 0);
  // Full bins in the window are 1 and 2 (0 and 3 are partial): the p99 of {0, 32e9}.
  EXPECT_DOUBLE_EQ(nodes[0].train_tx_p99_bps, 0.99 * 32e9);
  EXPECT_DOUBLE_EQ(nodes[1].train_tx_p99_bps, 4e9);

  // A window beyond the bins is covered only where the bins are: [3000, 4000).
  TraceBins late({3000, 9000});
  late.add(cross, "x.csv", true);
  EXPECT_DOUBLE_EQ(late.cross_load_bps(), 8e9);
  EXPECT_TRUE(late.nodes("").empty());  // no training bins
  TraceBins outside({5000, 9000});
  outside.add(cross, "x.csv", true);
  EXPECT_THROW(outside.cross_load_bps(), InputError);

  // Two training files on one grid add up; without cross bins the nodes' cross traffic is unknown.
  TraceBins two({500, 3500});
  two.add(training, "t0.csv", false);
  two.add(training, "t1.csv", false);
  EXPECT_FALSE(two.has_cross());
  const auto doubled = two.nodes("");
  EXPECT_DOUBLE_EQ(doubled[1].train_tx_p99_bps, 8e9);
  EXPECT_EQ(doubled[0].shares_bottleneck, "unknown");
  EXPECT_TRUE(std::isnan(doubled[0].cross_bps));
  // A file on another grid is refused.
  TraceBins mixed({500, 3500});
  mixed.add(training, "t0.csv", false);
  try {
    mixed.add(std::string(kTrace) + "250,f,n0,n1,1,1\n", "t1.csv", false);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "t1.csv: bins of 1000 ns from 250 are not on the grid of t0.csv (1000 ns from 0)");
  }
}

TEST(AnalysisLoad, FlowRecordsWithAndWithoutTheRealtimeZero) {
  // Two ok flows of 1000 B over [0, 1000] and [1000, 2000] ns; a failed one is not counted.
  const std::string text = std::string(kFlows) +
                           "0,h1,1000,0,0,1000,1.000,0.000,ok,\n"
                           "1,h1,1000,1000,1000,2000,1.000,0.000,ok,\n"
                           "2,h1,5000,1000,1000,-1,0.000,0.000,failed,reset\n";
  FlowLoad load;
  load.add_file(text, "f.csv");
  // Own span: 2000 B in 2000 ns.
  EXPECT_DOUBLE_EQ(load.load_bps({0, 1}, std::nullopt), 8e9);
  // Zero at realtime 10000, window [10500, 11000]: half of flow 0 in 500 ns.
  EXPECT_DOUBLE_EQ(load.load_bps({10500, 11000}, 10000), 8e9);
  // Window [10500, 20000] is covered up to the last end, 12000: 1500 B in 1500 ns.
  EXPECT_DOUBLE_EQ(load.load_bps({10500, 20000}, 10000), 8e9);
  EXPECT_THROW(load.load_bps({50000, 60000}, 10000), InputError);
  FlowLoad none;
  none.add_file(std::string(kFlows) + "2,h1,5000,1000,1000,-1,0.000,0.000,failed,reset\n", "f.csv");
  EXPECT_THROW(none.load_bps({0, 1}, std::nullopt), InputError);
}

}  // namespace xtk::analysis

namespace xtk::analysis {

// The training NIC's counter (xtk-run samples the last rank's host) over the
// iterations' window, divided by the iterations in it.
TEST(AnalysisLoad, TrainingNicGivesWireBytesPerIteration) {
  const auto dir = std::filesystem::temp_directory_path() / ("xtk_wire_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; };
  // Two iterations of one second each from realtime 1e9; 2e6 bytes every half second.
  write("iterations-0.csv",
        "# xtk-iterations\n# format_version=1\nrank,iter,start_ns,end_ns,iter_us,comm_us,bytes\n"
        "0,0,1000000000,2000000000,1000000.0,0.0,0\n0,1,2000000000,3000000000,1000000.0,0.0,0\n");
  std::string counters = kCounters;
  std::string tcp;  // the host's TCP counters: 3 retransmissions every half second, one timeout at 1.5 s
  for (int i = 0; i <= 8; ++i) {
    const long long t = i * 500'000'000LL;
    counters += fmt::format("{0},{0},net:eth0,tx_bytes,{1},0\n", t, i * 2'000'000LL);
    tcp += fmt::format("{0},{0},snmp,Tcp:RetransSegs,{1},0\n{0},{0},snmp,TcpExt:TCPTimeouts,{2},0\n", t, 3 * i,
                       i >= 3 ? 1 : 0);
  }
  write("counters_training.csv", counters);
  write("run.json", R"({"format_version": 1, "step": 0, "model": "resnet50", "ranks": 1,
    "cross_traffic": {"profile": "none", "load_bps": 0}, "link_bps": 1e9,
    "training_nic": {"host": "h1", "source": "net:eth0", "counter": "tx_bytes"},
    "files": {"iterations": "iterations-0.csv", "training_counters": "counters_training.csv"}})");
  const auto step = load_step(read_step_info(dir.string()), {});
  EXPECT_NEAR(step.wire_tx_bytes_per_iter, 4e6, 1);
  // A file from before the TCP counters were sampled: no counts, no error.
  EXPECT_TRUE(std::isnan(step.tcp_retransmits_per_iter));
  EXPECT_TRUE(std::isnan(step.tcp_timeouts_per_iter));
  write("counters_training.csv", counters + tcp);
  const auto with_tcp = load_step(read_step_info(dir.string()), {});
  EXPECT_NEAR(with_tcp.wire_tx_bytes_per_iter, 4e6, 1);
  EXPECT_NEAR(with_tcp.tcp_retransmits_per_iter, 6, 1e-9);  // 12 in the two iterations' window
  EXPECT_NEAR(with_tcp.tcp_timeouts_per_iter, 0.5, 1e-9);   // the one at 1.5 s
  EXPECT_TRUE(with_tcp.notes.empty());
  // A sampler that began after the iterations (a loaded host): the step still
  // loads, its wire and TCP figures are nan, and a note names the file.
  std::string late = kCounters;
  for (int i = 7; i <= 9; ++i) late += fmt::format("{0},{0},net:eth0,tx_bytes,{1},0\n", i * 500'000'000LL, i * 10);
  write("counters_training.csv", late);
  const auto missed = load_step(read_step_info(dir.string()), {});
  EXPECT_NEAR(missed.mean_us, 1e6, 1e-6);
  EXPECT_TRUE(std::isnan(missed.wire_tx_bytes_per_iter));
  EXPECT_TRUE(std::isnan(missed.tcp_retransmits_per_iter));
  ASSERT_EQ(missed.notes.size(), 1U);
  EXPECT_NE(missed.notes[0].find("counters_training.csv: no usable samples of net:eth0 tx_bytes"), std::string::npos)
      << missed.notes[0];
  EXPECT_NE(missed.notes[0].find("wire_tx_bytes_per_iter is nan"), std::string::npos) << missed.notes[0];
  std::filesystem::remove_all(dir);

  const auto without_nic = R"({"format_version": 1, "step": 0, "model": "m", "ranks": 1,
    "cross_traffic": {"profile": "none", "load_bps": 0}, "link_bps": 1e9,
    "files": {"iterations": "i.csv", "training_counters": "c.csv"}})";
  try {
    parse_run_json(without_nic, "s/run.json", "s", false);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "s/run.json:3: \"files.training_counters\" needs \"training_nic\" (its \"source\" and \"counter\")");
  }
}

// The ranks' own TCP counts (each process's first rank's rows) are summed over
// the kept iterations and replace the training NIC host's counters; each
// count left empty falls back to them.
TEST(AnalysisLoad, RanksOwnTcpCountsReplaceTheHostsCounters) {
  const auto dir = std::filesystem::temp_directory_path() / ("xtk_rank_tcp_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; };
  const std::string head =
      "# xtk-iterations\n# format_version=1\n"
      "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes,tcp_retransmits,tcp_timeouts,tcp_rwnd_limited_us\n";
  // Iteration 0 is warm-up (dropped): its 100 retransmissions do not count.
  write("iterations-0.csv", head +
                                "0,0,0,1000000000,1000000.0,0.0,0,100,9,\n"
                                "0,1,1000000000,2000000000,1000000.0,0.0,0,4,1,250000\n"
                                "0,2,2000000000,3000000000,1000000.0,0.0,0,0,0,\n");
  write("iterations-1.csv", head +
                                "1,0,0,1000000000,1000000.0,0.0,0,100,9,\n"
                                "1,1,1000000000,2000000000,1000000.0,0.0,0,2,0,\n"
                                "1,2,2000000000,3000000000,1000000.0,0.0,0,6,1,50000\n");
  std::string counters = kCounters;  // the host's: 1 retransmission and 1 timeout every half second
  for (int i = 0; i <= 8; ++i) {
    const long long t = i * 500'000'000LL;
    counters += fmt::format("{0},{0},net:eth0,tx_bytes,{1},0\n{0},{0},snmp,Tcp:RetransSegs,{1},0\n", t, i);
    counters += fmt::format("{0},{0},snmp,TcpExt:TCPTimeouts,{1},0\n", t, i);
  }
  write("counters_training.csv", counters);
  write("run.json", R"({"format_version": 1, "step": 0, "model": "resnet50", "ranks": 2,
    "cross_traffic": {"profile": "none", "load_bps": 0}, "link_bps": 1e9,
    "training_nic": {"host": "h1", "source": "net:eth0", "counter": "tx_bytes"},
    "files": {"iterations": ["iterations-0.csv", "iterations-1.csv"], "training_counters": "counters_training.csv"}})");
  StepOptions options;
  options.warmup = 1;
  const auto step = load_step(read_step_info(dir.string()), options);
  EXPECT_NEAR(step.tcp_retransmits_per_iter, (4 + 0 + 2 + 6) / 2.0, 1e-9);
  EXPECT_NEAR(step.tcp_timeouts_per_iter, (1 + 0 + 0 + 1) / 2.0, 1e-9);
  EXPECT_NEAR(step.tcp_rwnd_limited_ms_per_iter, (250 + 50) / 2.0, 1e-9);
  // Timeouts not counted by the ranks (a kernel before Linux 6.7): the host's.
  write("iterations-0.csv", head +
                                "0,0,0,1000000000,1000000.0,0.0,0,100,,\n"
                                "0,1,1000000000,2000000000,1000000.0,0.0,0,4,,\n"
                                "0,2,2000000000,3000000000,1000000.0,0.0,0,0,,\n");
  write("iterations-1.csv", head +
                                "1,0,0,1000000000,1000000.0,0.0,0,,,\n"
                                "1,1,1000000000,2000000000,1000000.0,0.0,0,,,\n"
                                "1,2,2000000000,3000000000,1000000.0,0.0,0,,,\n");
  const auto host_timeouts = load_step(read_step_info(dir.string()), options);
  EXPECT_NEAR(host_timeouts.tcp_retransmits_per_iter, 4 / 2.0, 1e-9);
  EXPECT_NEAR(host_timeouts.tcp_timeouts_per_iter, 2, 1e-9);            // 4 in the 2 s window [1 s, 3 s]
  EXPECT_TRUE(std::isnan(host_timeouts.tcp_rwnd_limited_ms_per_iter));  // no host counter for it
  std::filesystem::remove_all(dir);
}

}  // namespace xtk::analysis

namespace xtk::analysis {

// With offloads on, a testbed interface counts a GSO super-packet of 40
// segments as one frame with one set of headers, while the link (the shaper)
// carries 40: the load is taken in the link's units, every segment with its
// headers. Taking the bytes as counted left 4 % of the load as available.
TEST(AnalysisLoad, LoadCountsEverySegmentsHeadersAsTheLinkDoes) {
  constexpr double kShare = 1448.0 / 1514;
  EXPECT_DOUBLE_EQ(link_bytes(40 * 1448 + 66, 1, kShare), 40 * 1514);  // one super-packet
  EXPECT_DOUBLE_EQ(link_bytes(7 * 1514, 7, kShare), 7 * 1514);         // full-size frames as they are
  EXPECT_DOUBLE_EQ(link_bytes(5 * 66, 5, kShare), 5 * 66);             // pure ACKs: one segment each
  EXPECT_DOUBLE_EQ(link_bytes(40 * 1448 + 66, 1, 1), 40 * 1448 + 66);  // no share: as counted
  EXPECT_DOUBLE_EQ(link_bytes(1000, 0, kShare), 1000);

  const auto dir = std::filesystem::temp_directory_path() / ("xtk_link_bytes_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; };
  // One iteration, realtime [1e9, 2e9].
  write("iterations.csv",
        "# xtk-iterations\n# format_version=1\nrank,iter,start_ns,end_ns,iter_us,comm_us,bytes\n"
        "0,0,1000000000,2000000000,1000000.0,0.0,0\n");
  // Every 100 ms: 100 super-packets of 40 x 1448 payload bytes and 66 bytes of headers.
  constexpr double kFrames = 100, kFrame = 40 * 1448 + 66;
  std::string counters = kCounters;
  std::string bins =
      "# xtk-trace-bins\n# format_version=1\n# bin_ns=100000000\nbin_start_ns,flow,src,dst,bytes,packets\n";
  for (int i = 0; i <= 30; ++i) {
    const long long t = i * 100'000'000LL;
    counters += fmt::format("{0},{0},net:eth0,tx_bytes,{1:.0f},0\n{0},{0},net:eth0,tx_packets,{2:.0f},0\n", t,
                            i * kFrames * kFrame, i * kFrames);
    bins += fmt::format("{},tcp 10.77.0.4:1>10.77.0.1:7000,10.77.0.4,10.77.0.1,{:.0f},{:.0f}\n", t, kFrames * kFrame,
                        kFrames);
  }
  write("counters.csv", counters);
  write("bins.csv", bins);
  const auto run_json = [&](const std::string& files) {
    write("run.json", fmt::format(R"({{"format_version": 1, "step": 1, "model": "m", "ranks": 1,
      "cross_traffic": {{"profile": "consistent", "load_bps": 5e8}}, "link_bps": 1e9,
      "bottleneck": {{"host": "10.77.0.1", "source": "net:eth0", "counter": "tx_bytes", "payload_share": {}}},
      "training_nic": {{"host": "h3", "source": "net:eth0", "counter": "tx_bytes"}},
      "files": {{"iterations": "iterations.csv", {}}}}})",
                                  kShare, files));
  };
  const double counted_bps = kFrames * kFrame * 8 / 0.1, link_bps = kFrames * 40 * 1514 * 8 / 0.1;
  // The training NIC's counters (here the same file) and trace bins are read in the same units.
  for (const auto& files : {R"("counters": "counters.csv", "training_counters": "counters.csv")",
                            R"("trace_bins": {"cross": "bins.csv", "training": "bins.csv"})"}) {
    run_json(files);
    const auto step = load_step(read_step_info(dir.string()), {});
    if (step.load_source == LoadSource::counters) {
      EXPECT_NEAR(step.wire_tx_bytes_per_iter, link_bps / 8, 1);  // one iteration of one second
    } else {
      ASSERT_EQ(step.nodes.size(), 2U);
      EXPECT_NEAR(step.nodes[0].train_rx_bps, link_bps, 1);  // 10.77.0.1 received it
    }
    EXPECT_NEAR(step.measured_load_bps, link_bps, 1) << files;
    EXPECT_NEAR(step.available_payload_bps(), kShare * (1e9 - link_bps), 1) << files;
    EXPECT_GT(step.measured_load_bps, counted_bps * 1.04) << files;
  }
  // A counters file without the frame count: the bytes as counted.
  std::string bytes_only = kCounters;
  for (int i = 0; i <= 30; ++i) {
    bytes_only += fmt::format("{0},{0},net:eth0,tx_bytes,{1:.0f},0\n", i * 100'000'000LL, i * kFrames * kFrame);
  }
  write("counters.csv", bytes_only);
  run_json(R"("counters": "counters.csv")");
  EXPECT_NEAR(load_step(read_step_info(dir.string()), {}).measured_load_bps, counted_bps, 1);
  std::filesystem::remove_all(dir);
}

}  // namespace xtk::analysis
