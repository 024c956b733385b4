// Trace analysis on capture files the test writes byte by byte: a mix of
// VLAN-tagged IPv4 TCP, IPv6 UDP and RoCEv2; both pcap stamp precisions and
// byte orders, pcapng, several files merged, damaged files, windows and
// filters, the bins and series files.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "capture/live_capture.hpp"
#include "capture/pcap_reader.hpp"
#include "capture/trace.hpp"
#include "capture/trace_report.hpp"
#include "capture_frames.hpp"
#include "core/error.hpp"

namespace xtk::capture {
namespace {

using namespace testing;

constexpr std::int64_t kT0 = 1'764'126'000'000'000'000;  // 2025-11-26, a whole second
constexpr std::int64_t kMs = 1'000'000;

Bytes tcp_frame(std::uint16_t sport, std::size_t wire) {
  Bytes f = ethernet(0x0800, {100});
  append(f, ipv4("10.77.0.1", "10.77.0.2", 6, static_cast<std::uint16_t>(wire - 18 - 20)));
  append(f, tcp(sport, 7000));
  return padded(f, wire);
}

Bytes udp6_frame(std::size_t wire) {
  Bytes f = ethernet(0x86dd);
  append(f, ipv6("fd77::2", "fd77::1", 0, static_cast<std::uint16_t>(wire - 14 - 40)));
  append(f, ipv6_options(17));
  append(f, udp(5353, 53, static_cast<std::uint16_t>(wire - 14 - 40 - 8 - 8)));
  return padded(f, wire);
}

Bytes roce_frame(std::uint32_t qp, std::uint32_t psn, std::size_t wire) {
  Bytes f = ethernet(0x0800);
  append(f, ipv4("10.0.0.1", "10.0.0.2", 17, static_cast<std::uint16_t>(wire - 14 - 20), 0x02));
  append(f, udp(static_cast<std::uint16_t>(49152 + psn), kRoceV2Port, static_cast<std::uint16_t>(wire - 14 - 20 - 8)));
  append(f, bth(0x0a, qp, psn));
  return padded(f, wire);
}

// 3 ms of a known mix: per ms, 2 TCP frames of 1518 B (flow A), 1 IPv6 UDP frame of 200 B,
// and 4 RoCE frames of 1082 B on QP 0x12; QP 0x34 only in the last ms.
std::vector<CapturedPacket> mix() {
  std::vector<CapturedPacket> out;
  for (std::int64_t ms = 0; ms < 3; ++ms) {
    const std::int64_t base = kT0 + ms * kMs;
    out.push_back({base + 10'000, tcp_frame(40000, 1518), 0});
    out.push_back({base + 20'000, udp6_frame(200), 0});
    for (std::uint32_t i = 0; i < 4; ++i) out.push_back({base + 100'000 + i * 1000, roce_frame(0x12, i, 1082), 0});
    out.push_back({base + 500'000, tcp_frame(40000, 1518), 0});
    if (ms == 2) out.push_back({base + 900'000, roce_frame(0x34, 7, 1082), 0});
  }
  return out;
}

class CaptureTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("xtk_trace_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    const auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static const FlowRow* flow(const TraceResult& r, const std::string& text) {
    for (const auto& f : r.flows) {
      if (f.flow == text) return &f;
    }
    return nullptr;
  }

  static std::vector<std::string> lines(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

  std::filesystem::path dir_;
};

TEST_F(CaptureTrace, MixedVlanIpv6RoceFileDissectsIntoTheRightFlows) {
  TraceOptions o;
  o.files = {write("mix.pcap", pcap_file(1, mix(), 128))};
  o.bins_path = path("bins.csv");
  const auto r = analyze_trace(o);
  EXPECT_FALSE(r.damage);
  EXPECT_EQ(r.packets_read, 22u);
  EXPECT_EQ(r.flows.size(), 4u);
  const auto* a = flow(r, "tcp 10.77.0.1:40000>10.77.0.2:7000");
  const auto* u = flow(r, "udp [fd77::2]:5353>[fd77::1]:53");
  const auto* q12 = flow(r, "roce qp=0x12 10.0.0.1>10.0.0.2");
  const auto* q34 = flow(r, "roce qp=0x34 10.0.0.1>10.0.0.2");
  ASSERT_TRUE(a && u && q12 && q34);
  // Wire lengths, not the 128 captured bytes.
  EXPECT_EQ(a->stats.bytes, 6u * 1518);
  EXPECT_EQ(a->stats.packets, 6u);
  EXPECT_EQ(u->stats.bytes, 3u * 200);
  EXPECT_EQ(q12->stats.packets, 12u);
  EXPECT_EQ(q12->stats.bytes, 12u * 1082);
  EXPECT_EQ(q12->stats.ce_packets, 0u);
  EXPECT_EQ(q34->stats.packets, 1u);
  EXPECT_EQ(a->stats.first_ns, kT0 + 10'000);
  EXPECT_EQ(a->stats.last_ns, kT0 + 2 * kMs + 500'000);
  EXPECT_EQ(r.flows.front().flow, q12->flow);  // largest first
  EXPECT_EQ(r.bytes, 6u * 1518 + 3 * 200 + 13 * 1082);

  // The bins file: one row per flow per ms, the grid on whole ms, sorted by time.
  const auto l = lines(path("bins.csv"));
  ASSERT_GE(l.size(), 6u);
  EXPECT_EQ(l[0], "# xtk-trace-bins");
  EXPECT_EQ(l[1], "# format_version=1");
  EXPECT_EQ(l[2], "# bin_ns=1000000");
  std::size_t column_line = 0;
  while (column_line < l.size() && l[column_line][0] == '#') ++column_line;
  EXPECT_EQ(l[column_line], "bin_start_ns,flow,src,dst,bytes,packets");
  EXPECT_EQ(l[column_line + 1], fmt::format("{},tcp 10.77.0.1:40000>10.77.0.2:7000,10.77.0.1,10.77.0.2,3036,2", kT0));
  std::uint64_t total = 0;
  std::int64_t previous = 0;
  std::map<std::string, std::uint64_t> rows_per_flow;
  for (std::size_t i = column_line + 1; i < l.size(); ++i) {
    std::stringstream row(l[i]);
    std::string start, flow_text, src, dst, bytes, packets;
    std::getline(row, start, ',');
    std::getline(row, flow_text, ',');
    std::getline(row, src, ',');
    std::getline(row, dst, ',');
    std::getline(row, bytes, ',');
    std::getline(row, packets, ',');
    EXPECT_EQ(std::stoll(start) % kMs, 0);
    EXPECT_GE(std::stoll(start), previous);
    previous = std::stoll(start);
    total += std::stoull(bytes);
    ++rows_per_flow[flow_text];
  }
  EXPECT_EQ(total, r.bytes);
  EXPECT_EQ(rows_per_flow["roce qp=0x12 10.0.0.1>10.0.0.2"], 3u);
  EXPECT_EQ(rows_per_flow["roce qp=0x34 10.0.0.1>10.0.0.2"], 1u);
}

TEST_F(CaptureTrace, MicrosecondAndSwappedFilesReadTheSame) {
  const auto packets = mix();
  const auto reference = PcapReader::from_bytes(pcap_file(1, packets, 65535, true, false));
  for (const bool nano : {true, false}) {
    for (const bool swapped : {true, false}) {
      const auto reader = PcapReader::from_bytes(pcap_file(1, packets, 96, nano, swapped));
      EXPECT_EQ(reader->linktype(), 1u);
      EXPECT_EQ(reader->snaplen(), 96u);
      Record rec;
      std::size_t i = 0;
      while (reader->next(rec)) {
        ASSERT_LT(i, packets.size());
        EXPECT_EQ(rec.ts_ns, nano ? packets[i].ts_ns : packets[i].ts_ns / 1000 * 1000);
        EXPECT_EQ(rec.wirelen, packets[i].frame.size());
        EXPECT_EQ(rec.caplen, std::min<std::size_t>(96, packets[i].frame.size()));
        EXPECT_EQ(0, std::memcmp(rec.data, packets[i].frame.data(), rec.caplen));
        ++i;
      }
      EXPECT_EQ(i, packets.size());
      EXPECT_FALSE(reader->damage());
    }
  }
}

// A file read in several chunks, records across their edges: read in
// batches, it gives every record as the same bytes read from memory do, each
// batch's records valid together, and batches hold many records (not one per
// call once the first chunk is read).
TEST_F(CaptureTrace, LargeFileReadsAsFromMemory) {
  std::vector<CapturedPacket> packets;
  const auto one = mix();
  for (std::int64_t round = 0; round < 300; ++round) {
    for (auto p : one) {
      p.ts_ns += round * 3 * kMs;
      packets.push_back(std::move(p));
    }
  }
  const std::string bytes = pcap_file(1, packets, 1518);
  ASSERT_GT(bytes.size(), std::size_t{6} << 20);  // six chunks of 1 MiB
  const auto file = PcapReader::open(write("large.pcap", bytes));
  const auto memory = PcapReader::from_bytes(bytes);
  std::array<Record, 64> from_file, from_memory;
  std::uint64_t total = 0, batches = 0;
  while (true) {
    const std::size_t n = file->next_batch(from_file.data(), from_file.size());
    ++batches;
    std::size_t m = 0;
    while (m < n && memory->next(from_memory[m])) ++m;
    ASSERT_EQ(n, m);
    if (n == 0) break;
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(from_file[i].ts_ns, from_memory[i].ts_ns);
      ASSERT_EQ(from_file[i].caplen, from_memory[i].caplen);
      ASSERT_EQ(0, std::memcmp(from_file[i].data, from_memory[i].data, from_file[i].caplen));
    }
    total += n;
  }
  EXPECT_EQ(total, packets.size());
  EXPECT_LT(batches, total / 32);
  EXPECT_FALSE(file->damage());
}

TEST_F(CaptureTrace, PcapngIsReadThroughLibpcap) {
  TraceOptions o;
  o.files = {write("mix.pcapng", pcapng_file(1, mix()))};
  const auto r = analyze_trace(o);
  EXPECT_FALSE(r.damage);
  EXPECT_EQ(r.packets_read, 22u);
  ASSERT_NE(flow(r, "roce qp=0x12 10.0.0.1>10.0.0.2"), nullptr);
  EXPECT_EQ(flow(r, "roce qp=0x12 10.0.0.1>10.0.0.2")->stats.first_ns, kT0 + 100'000);
}

TEST_F(CaptureTrace, CutShortFileKeepsTheResultsBeforeTheDamage) {
  std::string bytes = pcap_file(1, mix(), 128);
  bytes.resize(bytes.size() - 50);  // the last record loses its tail
  TraceOptions o;
  o.files = {write("cut.pcap", bytes)};
  const auto r = analyze_trace(o);
  ASSERT_TRUE(r.damage);
  EXPECT_NE(r.damage->find("cut.pcap: packet 22 at byte"), std::string::npos) << *r.damage;
  EXPECT_NE(r.damage->find("cut short"), std::string::npos) << *r.damage;
  EXPECT_EQ(r.packets_read, 21u);
  EXPECT_EQ(flow(r, "roce qp=0x34 10.0.0.1>10.0.0.2"), nullptr);  // the lost packet was its only one
  EXPECT_EQ(flow(r, "tcp 10.77.0.1:40000>10.77.0.2:7000")->stats.packets, 6u);
}

TEST_F(CaptureTrace, CorruptRecordStopsTheAnalysisThere) {
  std::string bytes = pcap_file(1, mix(), 128);
  // Record 3's captured length, after the file header and two records.
  const auto packets = mix();
  std::size_t offset = 24;
  for (int i = 0; i < 2; ++i) offset += 16 + std::min<std::size_t>(128, packets[i].frame.size());
  const std::uint32_t huge = 70'000'000;
  std::memcpy(&bytes[offset + 8], &huge, 4);
  const auto reader = PcapReader::from_bytes(bytes, "corrupt.pcap");
  Record rec;
  int n = 0;
  while (reader->next(rec)) ++n;
  EXPECT_EQ(n, 2);
  ASSERT_TRUE(reader->damage());
  EXPECT_EQ(*reader->damage(), fmt::format("corrupt.pcap: packet 3 at byte {}: captured length 70000000 is above the "
                                           "file's limit 262144: the file is corrupt",
                                           offset));
  // A fraction of a second that is not one.
  std::string bad_time = pcap_file(1, mix(), 128, false);
  const std::uint32_t million = 1'000'000;
  std::memcpy(&bad_time[24 + 4], &million, 4);
  const auto r2 = PcapReader::from_bytes(bad_time, "t.pcap");
  EXPECT_FALSE(r2->next(rec));
  ASSERT_TRUE(r2->damage());
  EXPECT_NE(r2->damage()->find("timestamp fraction 1000000 is out of range"), std::string::npos);
}

TEST_F(CaptureTrace, NotACaptureIsAnInputErrorAndAnEmptyFileIsDamage) {
  TraceOptions o;
  o.files = {write("text.pcap", "flow_id,start_ns\n0,1\n")};
  try {
    analyze_trace(o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a pcap or pcapng file"), std::string::npos) << e.what();
  }
  o.files = {write("empty.pcap", "")};
  const auto r = analyze_trace(o);
  ASSERT_TRUE(r.damage);
  EXPECT_NE(r.damage->find("empty file"), std::string::npos);
  o.files = {path("missing.pcap")};
  EXPECT_THROW(analyze_trace(o), InputError);
  o.files = {write("wifi.pcap", pcap_file(105, mix()))};
  EXPECT_THROW(analyze_trace(o), InputError);
}

TEST_F(CaptureTrace, SeveralFilesMergeInTimeOrder) {
  const auto packets = mix();
  // Two interleaved captures (even and odd packets), and the same split as a rotation (first half, second half).
  std::vector<CapturedPacket> even, odd, first, second;
  for (std::size_t i = 0; i < packets.size(); ++i) {
    (i % 2 == 0 ? even : odd).push_back(packets[i]);
    (i < packets.size() / 2 ? first : second).push_back(packets[i]);
  }
  TraceOptions whole;
  whole.files = {write("all.pcap", pcap_file(1, packets))};
  whole.bins_path = path("all.csv");
  analyze_trace(whole);
  for (const auto& files :
       {std::vector<std::string>{write("odd.pcap", pcap_file(1, odd)), write("even.pcap", pcap_file(1, even))},
        std::vector<std::string>{write("b.pcap", pcap_file(1, second)), write("a.pcap", pcap_file(1, first))}}) {
    TraceOptions o;
    o.files = files;
    o.bins_path = path("merged.csv");
    const auto r = analyze_trace(o);
    EXPECT_EQ(r.packets_read, packets.size());
    EXPECT_EQ(r.late, 0u);
    EXPECT_EQ(r.trace_first_ns, packets.front().ts_ns);
    auto a = lines(path("all.csv"));
    auto b = lines(path("merged.csv"));
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 4; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]);  // after the header
  }
}

TEST_F(CaptureTrace, WindowsHostsAndBpfFilterSelectPackets) {
  TraceOptions o;
  o.files = {write("mix.pcap", pcap_file(1, mix()))};
  o.from = parse_time_bound("1ms", "--from");
  o.to = parse_time_bound("2ms", "--to");
  auto r = analyze_trace(o);
  EXPECT_EQ(r.packets, 7u);  // the second ms
  EXPECT_EQ(r.window_from_ns, kT0 + 10'000 + kMs);

  o.from = parse_time_bound(fmt::format("@{}", kT0 + 2 * kMs), "--from");
  o.to.reset();
  r = analyze_trace(o);
  EXPECT_EQ(r.packets, 8u);

  o.from.reset();
  o.hosts = {parse_address("fd77::1")};
  r = analyze_trace(o);
  EXPECT_EQ(r.packets, 3u);
  o.hosts.clear();
  o.srcs = {parse_address("10.0.0.1")};
  o.dsts = {parse_address("10.0.0.2")};
  r = analyze_trace(o);
  EXPECT_EQ(r.packets, 13u);
  o.srcs.clear();
  o.dsts = {parse_address("10.0.0.1")};
  EXPECT_EQ(analyze_trace(o).packets, 0u);
  o.dsts.clear();
  o.filter = "vlan and tcp port 7000";
  r = analyze_trace(o);
  EXPECT_EQ(r.packets, 6u);
  o.filter = "tcp port";
  EXPECT_THROW(analyze_trace(o), UsageError);
  EXPECT_THROW(parse_time_bound("soon", "--from"), UsageError);
}

TEST_F(CaptureTrace, DirectionBinsAddUpFlowsOfAHostPair) {
  std::vector<CapturedPacket> packets;
  for (std::uint16_t port = 1; port <= 3; ++port) packets.push_back({kT0 + port * 1000, tcp_frame(port, 100), 0});
  packets.push_back({kT0 + 5000, udp6_frame(300), 0});
  TraceOptions o;
  o.files = {write("d.pcap", pcap_file(1, packets))};
  o.per = BinKey::direction;
  o.bins_path = path("dir.csv");
  const auto r = analyze_trace(o);
  EXPECT_EQ(r.flows.size(), 4u);  // the flow table stays per flow
  const auto l = lines(path("dir.csv"));
  ASSERT_EQ(l.size(), 8u);
  EXPECT_EQ(l[4], "# per=direction");
  EXPECT_EQ(l[6], fmt::format("{},ip 10.77.0.1>10.77.0.2,10.77.0.1,10.77.0.2,300,3", kT0));
  EXPECT_EQ(l[7], fmt::format("{},ip fd77::2>fd77::1,fd77::2,fd77::1,300,1", kT0));
}

// Many flows over many bins: several batches of the counting stage, and a
// bins file of a few MiB.
std::vector<CapturedPacket> many_flows(std::size_t count) {
  std::vector<CapturedPacket> out;
  for (std::size_t i = 0; i < count; ++i) {
    const auto port = static_cast<std::uint16_t>(1 + i % 3000);
    out.push_back({kT0 + static_cast<std::int64_t>(i) * 7'000, tcp_frame(port, 100 + i % 1400), 0});
  }
  return out;
}

// Runs the analysis with the calling thread held to one CPU (the flow table
// and the bins then count inline) and restores its CPUs.
TraceResult on_one_cpu(const TraceOptions& o) {
  cpu_set_t all, one;
  EXPECT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  EXPECT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  struct Restore {
    cpu_set_t* set;
    ~Restore() { sched_setaffinity(0, sizeof *set, set); }
  } restore{&all};
  return analyze_trace(o);
}

TEST_F(CaptureTrace, OneCpuAndTwoGiveTheSameBinsSeriesAndFlows) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one CPU: the flow table and the bins count inline in every run";
  const std::string file = write("many.pcap", pcap_file(1, many_flows(40'000)));
  for (const BinKey per : {BinKey::flow, BinKey::direction}) {
    TraceOptions o;
    o.files = {file};
    o.per = per;
    o.bins_path = path("two.csv");
    o.series_path = path("two-series.csv");
    const auto two = analyze_trace(o);
    o.bins_path = path("one.csv");
    o.series_path = path("one-series.csv");
    const auto one = on_one_cpu(o);
    const auto two_rows = lines(path("two.csv"));
    EXPECT_GT(two_rows.size(), per == BinKey::flow ? 30'000u : 280u);  // a row per flow or per host pair per bin
    EXPECT_EQ(two_rows, lines(path("one.csv")));
    EXPECT_EQ(lines(path("two-series.csv")), lines(path("one-series.csv")));
    ASSERT_EQ(two.flows.size(), 3000u);
    ASSERT_EQ(one.flows.size(), two.flows.size());
    for (std::size_t i = 0; i < one.flows.size(); ++i) {
      EXPECT_EQ(one.flows[i].flow, two.flows[i].flow);
      EXPECT_EQ(one.flows[i].stats.bytes, two.flows[i].stats.bytes);
      EXPECT_EQ(one.flows[i].stats.packets, two.flows[i].stats.packets);
      EXPECT_EQ(one.flows[i].stats.first_ns, two.flows[i].stats.first_ns);
      EXPECT_EQ(one.flows[i].stats.last_ns, two.flows[i].stats.last_ns);
    }
    EXPECT_EQ(one.packets, 40'000u);
    EXPECT_EQ(two.packets, 40'000u);
  }
}

TEST_F(CaptureTrace, ABinsFileThatCannotBeWrittenStopsTheAnalysisWithItsName) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  TraceOptions o;
  o.files = {write("many.pcap", pcap_file(1, many_flows(40'000)))};
  o.bins_path = "/dev/full";  // every write fails, as on a full disk
  for (const bool one_cpu : {false, true}) {
    try {
      one_cpu ? on_one_cpu(o) : analyze_trace(o);
      ADD_FAILURE() << "no error, one CPU " << one_cpu;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("/dev/full: write failed"), std::string::npos) << e.what();
    }
  }
}

TEST_F(CaptureTrace, SeriesSmoothsAndHistogramsTheSelectedRate) {
  // 10 bins of 1 ms: 125000 B (1 Gbit/s) in even ms, nothing in odd ones.
  std::vector<CapturedPacket> packets;
  for (std::int64_t ms = 0; ms < 10; ms += 2) {
    for (int i = 0; i < 100; ++i) packets.push_back({kT0 + ms * kMs + i * 1000, tcp_frame(1, 1250), 0});
  }
  TraceOptions o;
  o.files = {write("s.pcap", pcap_file(1, packets))};
  o.series_path = path("series.csv");
  o.smooth_bins = 2;
  o.histogram_step_bps = 250e6;
  const auto r = analyze_trace(o);
  EXPECT_EQ(r.rate_bins, 9u);  // first to last packet's bin, empty ones included
  const auto l = lines(path("series.csv"));
  ASSERT_EQ(l.size(), 6u + 9u);
  EXPECT_EQ(l[3], "# smooth_bins=2");
  EXPECT_EQ(l[5], "bin_start_ns,bytes,packets,rate_bps,smoothed_rate_bps");
  EXPECT_EQ(l[6], fmt::format("{},125000,100,1000000000,", kT0));  // the window is not full yet
  EXPECT_EQ(l[7], fmt::format("{},0,0,0,500000000", kT0 + kMs));
  EXPECT_EQ(l[8], fmt::format("{},125000,100,1000000000,500000000", kT0 + 2 * kMs));
  // Every smoothed bin is 0.5 Gbit/s: one histogram bucket [500M, 750M) holds all 8.
  ASSERT_EQ(r.histogram.size(), 3u);
  EXPECT_EQ(r.histogram[2].from_bps, 500e6);
  EXPECT_EQ(r.histogram[2].count, 8u);
  EXPECT_DOUBLE_EQ(r.rate_max_bps, 500e6);
  const auto table = trace_histogram_table(r);
  EXPECT_EQ(table.rows(), 3u);
  const auto j = trace_json(r, 0);
  EXPECT_EQ(j["summary"]["rate_bins"], 9);
  EXPECT_EQ(j["flows"].size(), 1u);
  EXPECT_EQ(j["flows"][0]["bytes"], 500u * 1250);
}

TEST(CaptureFiles, InterfaceAndRotationNames) {
  EXPECT_EQ(capture_path("capture.pcap", "eth0", false, std::nullopt), "capture.pcap");
  EXPECT_EQ(capture_path("capture.pcap", "eth0", true, std::nullopt), "capture-eth0.pcap");
  EXPECT_EQ(capture_path("run.d/capture.pcap", "eth1", true, 3), "run.d/capture-eth1.0003.pcap");
  EXPECT_EQ(capture_path("cap-{if}-{n}.pcap", "ib0", true, 12), "cap-ib0-0012.pcap");
  EXPECT_EQ(capture_path("dir.v2/capture", "eth0", false, 0), "dir.v2/capture.0000");
  EXPECT_EQ(capture_path("{if}.pcap", "eth0", false, std::nullopt), "eth0.pcap");
}

}  // namespace
}  // namespace xtk::capture
