// Every run-directory format through its one module: what the writer writes,
// the reader reads back unchanged (flow records as CSV and as JSON Lines,
// iterations), including the awkward values - quotes and commas in an error,
// flows that never started or ended, microsecond decimals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/report.hpp"
#include "formats/collectives.hpp"
#include "formats/counters.hpp"
#include "formats/csv_file.hpp"
#include "formats/flow_records.hpp"
#include "formats/iterations.hpp"
#include "formats/trace_bins.hpp"

namespace xtk {
namespace {

namespace fs = std::filesystem;

class Formats : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xtk_formats_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::vector<FlowRecord> sample_flows() {
  std::vector<FlowRecord> flows(4);
  flows[0] = {0, "h1", 1000, 10, 15, 1015, FlowStatus::ok, ""};
  flows[1] = {1, "sink-2", 2000, 20, 25, -1, FlowStatus::failed, "connect: refused, \"3\" tries"};
  flows[2] = {2, "h1", 3000, 30, -1, -1, FlowStatus::cancelled, "interrupted before start"};
  flows[3] = {7, "h3", 1'250'000, 1'000'000'000, 1'000'004'321, 1'012'000'000, FlowStatus::ok, ""};
  return flows;
}

void expect_same(const std::vector<FlowRecord>& a, const std::vector<FlowRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].flow_id, b[i].flow_id) << i;
    EXPECT_EQ(a[i].dst, b[i].dst) << i;
    EXPECT_EQ(a[i].size_bytes, b[i].size_bytes) << i;
    EXPECT_EQ(a[i].sched_start_ns, b[i].sched_start_ns) << i;
    EXPECT_EQ(a[i].start_ns, b[i].start_ns) << i;
    EXPECT_EQ(a[i].end_ns, b[i].end_ns) << i;
    EXPECT_EQ(a[i].status, b[i].status) << i;
    EXPECT_EQ(a[i].error, b[i].error) << i;
  }
}

// The tables' CSV (Table::write_csv): one field quoting, read back field for field.
TEST(TableCsv, FieldsRoundTripThroughQuoting) {
  const std::vector<std::string> fields{"toy", "", "the line meets it at 0.3, inside", "say \"ok\"", "nan", ","};
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    append_csv_field(line, fields[i]);
  }
  EXPECT_EQ(split_csv_fields(line), fields) << line;
  EXPECT_EQ(split_csv_fields(""), std::vector<std::string>{""});
  EXPECT_EQ(split_csv_fields("a,"), (std::vector<std::string>{"a", ""}));
  EXPECT_FALSE(split_csv_fields("a,\"b"));     // no closing quote
  EXPECT_FALSE(split_csv_fields("\"b\"c,d"));  // text after the closing quote
}

TEST_F(Formats, FlowRecordsRoundTripAsCsvAndJsonLines) {
  for (const char* name : {"flows.csv", "flows.jsonl"}) {
    {
      RecordWriter writer(path(name));
      for (const auto& f : sample_flows()) writer.write(f);
    }
    std::vector<FlowRecord> read;
    read_flow_records(read_text_file(path(name), "flow records"), name,
                      [&](const FlowRecord& r) { read.push_back(r); });
    expect_same(sample_flows(), read);
    EXPECT_DOUBLE_EQ(read[3].fct_us(), 11995.679);
    EXPECT_DOUBLE_EQ(read[3].lateness_us(), 4.321);
  }
}

TEST_F(Formats, IterationsRoundTrip) {
  const std::vector<IterationRecord> written{
      {0, 0, 1'764'000'000'000'000'000, 1'764'000'000'180'512'000, 180512.0, 63179.25, 8424160, 27, 1, 1500000},
      {1, 0, 1'764'000'000'000'000'100, 1'764'000'000'180'251'000, 180150.875, 0.0, 0, std::nullopt, std::nullopt,
       std::nullopt},
      {0, 3, 1'764'000'000'500'000'000, 1'764'000'000'680'000'000, 0.001, 0.0, 1, 0, std::nullopt, 0}};
  {
    IterationWriter writer(path("it.csv"), {{"model", "tiny-mlp"}, {"ranks", "2"}});
    for (const auto& r : written) writer.write(r);
  }
  std::vector<IterationRecord> read;
  read_iterations(read_text_file(path("it.csv"), "iterations"), "it.csv", 2,
                  [&](const IterationRecord& r) { read.push_back(r); });
  ASSERT_EQ(read.size(), written.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].rank, written[i].rank);
    EXPECT_EQ(read[i].iter, written[i].iter);
    EXPECT_EQ(read[i].start_ns, written[i].start_ns);
    EXPECT_EQ(read[i].end_ns, written[i].end_ns);
    EXPECT_DOUBLE_EQ(read[i].iter_us, written[i].iter_us);
    EXPECT_DOUBLE_EQ(read[i].comm_us, written[i].comm_us);
    EXPECT_EQ(read[i].bytes, written[i].bytes);
    EXPECT_EQ(read[i].tcp_retransmits, written[i].tcp_retransmits);
    EXPECT_EQ(read[i].tcp_timeouts, written[i].tcp_timeouts);
    EXPECT_EQ(read[i].tcp_rwnd_limited_us, written[i].tcp_rwnd_limited_us);
  }
}

// The group column round trips ("all" for the whole job), and a file written
// before it existed reads as the whole job's calls.
TEST_F(Formats, CollectivesRoundTripWithTheirGroups) {
  const std::vector<CollectiveRecord> written{
      {2, 0, 0, "all_reduce", 8388608, 1'764'000'000'000'000'000, 1'764'000'000'000'500'000, {2, 3}},
      {2, 0, 1, "send", 4096, 1'764'000'000'000'600'000, 1'764'000'000'000'700'000, {0, 2}},
      {2, 0, 2, "all_reduce", 4, 1'764'000'000'000'800'000, 1'764'000'000'000'900'000, {}}};
  {
    CollectiveWriter writer(path("c.csv"), {{"model", "et-rank2.json"}, {"ranks", "4"}});
    for (const auto& r : written) writer.write(r);
  }
  std::vector<CollectiveRecord> read;
  read_collectives(read_text_file(path("c.csv"), "collectives"), "c.csv", 4,
                   [&](const CollectiveRecord& r) { read.push_back(r); });
  ASSERT_EQ(read.size(), written.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].rank, written[i].rank);
    EXPECT_EQ(read[i].index, written[i].index);
    EXPECT_EQ(read[i].collective, written[i].collective);
    EXPECT_EQ(read[i].bytes, written[i].bytes);
    EXPECT_EQ(read[i].arrive_ns, written[i].arrive_ns);
    EXPECT_EQ(read[i].end_ns, written[i].end_ns);
    EXPECT_EQ(read[i].group, written[i].group);
  }
  EXPECT_NE(read_text_file(path("c.csv"), "collectives").find(",2.3\n"), std::string::npos);
  std::vector<CollectiveRecord> older;
  read_collectives(
      "# xtk-collectives\n# "
      "format_version=1\nrank,iter,index,collective,bytes,arrive_ns,end_ns\n1,0,0,all_reduce,8,0,10\n",
      "old.csv", 2, [&](const CollectiveRecord& r) { older.push_back(r); });
  ASSERT_EQ(older.size(), 1u);
  EXPECT_TRUE(older[0].group.empty());
}

// Enough samples that the streamed file crosses the reader's buffer many times.
TEST_F(Formats, CountersRoundTripStreamedAndFromText) {
  constexpr int kSamples = 5000;
  {
    CountersWriter writer(path("c.csv"), {{"period_ns", "1000000"}, {"host", "h0"}});
    const auto tx = writer.add_counter("net:eth0", "tx_bytes");
    const auto rx = writer.add_counter("ethtool:eth0", "rx_prio3_bytes");
    for (int i = 0; i < kSamples; ++i) {
      writer.begin_sample(1'000'000LL * i, 1'764'000'000'000'000'000 + 1'000'000LL * i, i == 7);
      writer.row(tx, 1500ULL * static_cast<std::uint64_t>(i));
      writer.row(rx, (1ULL << 32) - 3000 + 1000ULL * static_cast<std::uint64_t>(i));  // wraps 32 bits at i = 3
      writer.end_sample();
    }
    writer.close();
  }
  CountersReader streamed(path("c.csv"));
  EXPECT_EQ(streamed.header("host"), "h0");
  std::vector<std::uint64_t> tx;
  int slow = 0;
  for (CounterSample s; streamed.next(s);) {
    if (s.name == "tx_bytes") tx.push_back(s.value);
    slow += s.slow ? 1 : 0;
    EXPECT_EQ(s.realtime_ns - s.t_ns, 1'764'000'000'000'000'000);
  }
  ASSERT_EQ(tx.size(), static_cast<std::size_t>(kSamples));
  EXPECT_EQ(tx.back(), 1500ULL * (kSamples - 1));
  EXPECT_EQ(slow, 2);  // both rows of sample 7
  std::size_t rows = 0;
  read_counters(read_text_file(path("c.csv"), "counters"), "c.csv", [&](const CounterSample&) { ++rows; });
  EXPECT_EQ(rows, 2u * kSamples);
}

TEST_F(Formats, TraceBinsRoundTrip) {
  {
    TraceBinsWriter writer(path("bins.csv"), 1'000'000, {{"generator", "test"}});
    writer.row(5'000'000, "tcp 10.77.0.4:40000>10.77.0.1:7000,10.77.0.4,10.77.0.1", 1514, 1);
    writer.row(5'000'000, "tcp 10.77.0.2:50000>10.77.0.1:41000,10.77.0.2,10.77.0.1", 9000, 6);
    writer.row(7'000'000, "tcp 10.77.0.4:40000>10.77.0.1:7000,10.77.0.4,10.77.0.1", 0, 0);
    writer.close();
  }
  struct Row {
    std::int64_t bin_start_ns;
    std::string flow, src, dst;
    std::uint64_t bytes, packets;
  };
  std::vector<Row> rows;
  std::int64_t bin_ns = 0;
  read_trace_bins(
      read_text_file(path("bins.csv"), "trace bins"), "bins.csv", [&](const TraceHeader& h, const TraceBin& b) {
        bin_ns = h.bin_ns;
        rows.push_back(
            {b.bin_start_ns, std::string(b.flow), std::string(b.src), std::string(b.dst), b.bytes, b.packets});
      });
  EXPECT_EQ(bin_ns, 1'000'000);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].flow, "tcp 10.77.0.2:50000>10.77.0.1:41000");
  EXPECT_EQ(rows[1].src, "10.77.0.2");
  EXPECT_EQ(rows[1].bytes, 9000u);
  EXPECT_EQ(rows[1].packets, 6u);
  EXPECT_EQ(rows[2].bin_start_ns, 7'000'000);
}

TEST(CounterRules, IncreaseAcrossWrapsAndResets) {
  EXPECT_EQ(counter_increase(10, 25), 15u);
  EXPECT_EQ(counter_increase((1ULL << 32) - 3000, 1000), 4000u);               // a 32-bit counter wrapped
  EXPECT_EQ(counter_increase(UINT64_MAX - 9, 5), 15u);                         // a 64-bit one
  EXPECT_EQ(counter_increase(5'000'000'000ULL, 100), std::nullopt);            // a reset
  EXPECT_EQ(counter_increase((1ULL << 32) - 10, (1ULL << 31)), std::nullopt);  // too far for a wrap
  EXPECT_EQ(counter_bytes_per_unit("port_rcv_data"), 4);
  EXPECT_EQ(counter_bytes_per_unit("ifHCInOctets"), 1);
  EXPECT_EQ(counter_bytes_per_unit("rx_packets"), 0);
}

}  // namespace
}  // namespace xtk
