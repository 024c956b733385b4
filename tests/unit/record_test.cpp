#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "common/error_of.hpp"
#include "common/slurp.hpp"
#include "core/error.hpp"
#include "flow/summary.hpp"
#include "formats/flow_records.hpp"
#include "formats/iterations.hpp"

namespace xtk {
namespace {

using xtk::testing::slurp;

FlowRecord ok_flow(std::uint64_t id, std::uint64_t size, std::int64_t sched, std::int64_t late, std::int64_t fct) {
  FlowRecord r;
  r.flow_id = id;
  r.dst = "h1";
  r.size_bytes = size;
  r.sched_start_ns = sched;
  r.start_ns = sched + late;
  r.end_ns = sched + late + fct;
  return r;
}

// A flow that never started: its connection failed with `error`.
FlowRecord failed_flow(std::uint64_t id, std::string dst, std::int64_t sched, std::string error) {
  FlowRecord r;
  r.flow_id = id;
  r.dst = std::move(dst);
  r.size_bytes = 10;
  r.sched_start_ns = sched;
  r.status = FlowStatus::failed;
  r.error = std::move(error);
  return r;
}

}  // namespace

TEST(Records, CsvWithQuotingAndNeverStartedFlows) {
  const auto path = (std::filesystem::temp_directory_path() / "xtk_records_test.csv").string();
  {
    RecordWriter w(path);
    w.write(ok_flow(1, 1000, 5000, 1500, 20000));
    w.write(failed_flow(2, "10.0.0.2", 7000, "connect to 10.0.0.2:7000: Connection refused, \"twice\""));
    w.write(ok_flow(3, 5, 10000, -1250, 1'000'000'007));
    w.close();
    EXPECT_EQ(w.written(), 3u);
  }
  EXPECT_EQ(slurp(path),
            "# xtk-flow-records\n# format_version=1\n"
            "flow_id,dst,size_bytes,sched_start_ns,start_ns,end_ns,fct_us,lateness_us,status,error\n"
            "1,h1,1000,5000,6500,26500,20.000,1.500,ok,\n"
            "2,10.0.0.2,10,7000,-1,-1,0.000,0.000,failed,"
            "\"connect to 10.0.0.2:7000: Connection refused, \"\"twice\"\"\"\n"
            "3,h1,5,10000,8750,1000008757,1000000.007,-1.250,ok,\n");
  std::filesystem::remove(path);
}

// Each number at its widest: the writer formats a row's numbers in a fixed buffer.
TEST(Records, CsvAtTheLimitsOfItsNumbers) {
  const auto path = (std::filesystem::temp_directory_path() / "xtk_records_limits_test.csv").string();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  {
    RecordWriter w(path);
    FlowRecord r =
        ok_flow(std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<std::uint64_t>::max(), -kMax, kMax, 0);
    r.end_ns = kMax;
    w.write(r);
    FlowRecord never;
    never.flow_id = 1;
    never.dst = "h1";
    never.size_bytes = 1;
    never.sched_start_ns = std::numeric_limits<std::int64_t>::min();
    never.status = FlowStatus::cancelled;
    w.write(never);
    FlowRecord early = ok_flow(2, 1, kMax, -kMax, 0);
    w.write(early);
    w.close();
  }
  EXPECT_EQ(slurp(path),
            "# xtk-flow-records\n# format_version=1\n"
            "flow_id,dst,size_bytes,sched_start_ns,start_ns,end_ns,fct_us,lateness_us,status,error\n"
            "18446744073709551615,h1,18446744073709551615,-9223372036854775807,0,9223372036854775807,"
            "9223372036854775.807,9223372036854775.807,ok,\n"
            "1,h1,1,-9223372036854775808,-1,-1,0.000,0.000,cancelled,\n"
            "2,h1,1,9223372036854775807,0,0,0.000,-9223372036854775.807,ok,\n");
  std::filesystem::remove(path);
}

// Rows are formatted in place in the output's buffer (1 MiB); one longer than
// that (an error text of 600,000 characters, each quote doubled) goes out
// whole, in its place among the others, and reads back as written.
TEST(Records, ARowLongerThanTheBufferGoesOutWhole) {
  const auto path = (std::filesystem::temp_directory_path() / "xtk_records_long_test.csv").string();
  const std::string error = std::string(300'000, '"') + "\n" + std::string(299'999, 'x');
  {
    RecordWriter w(path);
    w.write(ok_flow(1, 1000, 0, 10, 100));
    w.write(failed_flow(2, "h1", 0, error));
    w.write(ok_flow(3, 1000, 50, 10, 100));
    w.close();
  }
  std::vector<FlowRecord> read;
  read_flow_records(slurp(path), path, [&](const FlowRecord& r) { read.push_back(r); });
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read[0].flow_id, 1u);
  EXPECT_EQ(read[1].flow_id, 2u);
  EXPECT_EQ(read[1].error, std::string(300'000, '"') + " " + std::string(299'999, 'x'));  // line breaks as spaces
  EXPECT_EQ(read[2].flow_id, 3u);
  std::filesystem::remove(path);
}

TEST(Records, AFullDiskIsAnError) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  try {
    RecordWriter w("/dev/full");  // the header goes out at once
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full: write failed"), std::string::npos) << e.what();
  }
}

// Each run-directory writer names what it could not create.
TEST(Records, AnUncreatableFileIsNamedWithWhatItHolds) {
  using testing::error_of;
  EXPECT_NE(error_of([] {
              RecordWriter w("/nonexistent-dir/r.csv");
            }).find("/nonexistent-dir/r.csv: cannot create flow records: No such file"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              IterationWriter w("/nonexistent-dir/i.csv", {});
            }).find("/nonexistent-dir/i.csv: cannot create the iterations file: No such file"),
            std::string::npos);
}

// The iterations file's header and rows reach the file whole (RunCsvWriter on TextOutput).
TEST(Records, IterationsWrittenReadBack) {
  const auto path = (std::filesystem::temp_directory_path() / "xtk_iterations_test.csv").string();
  {
    IterationWriter w(path, {{"ranks", "2"}});
    for (std::uint64_t i = 0; i < 3; ++i) {
      IterationRecord r;
      r.rank = i % 2;
      r.iter = i / 2;
      r.start_ns = 1000 * i;
      r.end_ns = 1000 * i + 500;
      r.iter_us = 0.5;
      r.bytes = 4096;
      w.write(r);
    }
  }
  std::vector<IterationRecord> read;
  read_iterations(testing::slurp(path), path, 2, [&](const IterationRecord& r) { read.push_back(r); });
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read[2].rank, 0u);
  EXPECT_EQ(read[2].iter, 1u);
  EXPECT_EQ(read[2].end_ns, 2500);
  std::filesystem::remove(path);
}

TEST(Records, JsonLinesByExtension) {
  const auto path = (std::filesystem::temp_directory_path() / "xtk_records_test.jsonl").string();
  {
    RecordWriter w(path);
    EXPECT_EQ(w.format(), RecordWriter::Format::jsonl);
    w.write(ok_flow(3, 64, 0, 2000, 8000));
  }
  const auto j = nlohmann::json::parse(slurp(path));
  EXPECT_EQ(j["flow_id"], 3);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_DOUBLE_EQ(j["fct_us"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(j["lateness_us"].get<double>(), 2.0);
  std::filesystem::remove(path);
}

TEST(Summary, BinsStatusesLoadAndDrift) {
  SummaryInputs in;
  in.requested_bps = 1e9;
  in.link_bps = 8e9;  // 1 byte per ns: ideal FCT in ns = size
  in.duration_ns = 1'000'000'000;
  ClientSummary s(in);
  s.add(ok_flow(0, 50'000, 10'000'000, 1'000, 100'000));          // first 10 %, slowdown 2
  s.add(ok_flow(1, 500'000, 500'000'000, 3'000, 1'000'000));      // slowdown 2
  s.add(ok_flow(2, 20'000'000, 950'000'000, 9'000, 40'000'000));  // last 10 %, slowdown 2
  FlowRecord timeout = ok_flow(3, 1000, 960'000'000, 9'000, 0);
  timeout.status = FlowStatus::timeout;
  timeout.end_ns = -1;
  timeout.error = "no end within 60 s";
  s.add(timeout);
  s.set_elapsed_ns(1'000'000'000);
  EXPECT_EQ(s.flows(), 4u);
  EXPECT_EQ(s.flows_with(FlowStatus::ok), 3u);
  EXPECT_EQ(s.flows_with(FlowStatus::timeout), 1u);
  EXPECT_DOUBLE_EQ(s.offered_bps(), (50'000 + 500'000 + 20'000'000 + 1000) * 8.0);
  EXPECT_DOUBLE_EQ(s.goodput_bps(), (50'000 + 500'000 + 20'000'000) * 8.0);
  EXPECT_DOUBLE_EQ(s.early_lateness_p50_ns(), 1000);
  EXPECT_NEAR(s.late_lateness_p50_ns(), 9000, 9000 / 128.0);
  const auto j = s.to_json();
  EXPECT_EQ(j["size_bins"]["<=100KB"]["flows"], 1);
  EXPECT_EQ(j["size_bins"][">10MB"]["flows"], 1);
  EXPECT_NEAR(j["size_bins"]["100KB-1MB"]["slowdown"]["p50"].get<double>(), 2.0, 0.02);
  EXPECT_EQ(j["first_error"], "flow 3: no end within 60 s");
  std::ostringstream human;
  s.print(human);
  EXPECT_NE(human.str().find("ok 3, failed 0, timeout 1, cancelled 0"), std::string::npos);
}

// The tail beyond p99: exact counts over 100 us and 1 ms, and p99.9.
TEST(Summary, LatenessTailCountsAndP999) {
  ClientSummary s(SummaryInputs{});
  for (std::uint64_t i = 0; i < 1000; ++i) {
    // 996 flows 1 us late, 2 at 150 us, 2 at 5 ms (lateness = start - scheduled start).
    const std::int64_t late = i < 996 ? 1'000 : i < 998 ? 150'000 : 5'000'000;
    s.add(ok_flow(i, 1000, static_cast<std::int64_t>(i) * 10'000'000, late, 1'000));
  }
  FlowRecord never = ok_flow(1000, 1000, 0, 0, 0);
  never.status = FlowStatus::cancelled;
  never.start_ns = -1;  // never started: no lateness
  s.add(never);
  EXPECT_EQ(s.flows_late_over_100us(), 4u);
  EXPECT_EQ(s.flows_late_over_1ms(), 2u);
  const auto j = s.to_json();
  EXPECT_EQ(j["flows_late_over_100us"], 4);
  EXPECT_EQ(j["flows_late_over_1ms"], 2);
  EXPECT_NEAR(j["lateness_us"]["p999"].get<double>(), 5000.0, 5000.0 / 128);
  EXPECT_NEAR(j["lateness_us"]["p99"].get<double>(), 1.0, 1.0 / 128);
  std::ostringstream human;
  s.print(human);
  EXPECT_NE(human.str().find("later than 100 us/1 ms     4 (0.400 %) / 2 (0.200 %) flows"), std::string::npos)
      << human.str();
}

}  // namespace xtk
