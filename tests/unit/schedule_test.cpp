#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/slurp.hpp"
#include "core/error.hpp"
#include "workload/schedule.hpp"

namespace xtk {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("xtk_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

using xtk::testing::slurp;

std::string read_error(const std::string& text) {
  try {
    std::istringstream in(text);
    ScheduleReader reader(in, "s.csv");
    Flow flow;
    while (reader.next(flow)) {
    }
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

constexpr const char* kHead = "# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes\n";

}  // namespace

TEST(Schedule, RoundTripWithClassColumns) {
  const auto path = temp_path("roundtrip.csv");
  ScheduleHeader header;
  header.set("profile", "burst");
  header.set("seed", "3");
  header.has_dscp = true;
  header.has_rate = true;
  header.has_cc = true;
  std::vector<Flow> flows{{0, 10, "h0", "h1", 1500, 0, 0, ""},
                          {1, 10, "h0", "10.0.0.2", 64000, 26, 100000000, "bbr"},
                          {2, 999999999999, "h0", "fd00::1", 30000000, 63, 0, "cubic"}};
  {
    ScheduleWriter writer(path, header);
    for (const auto& f : flows) writer.write(f);
    writer.close();
    EXPECT_EQ(writer.flows_written(), 3u);
  }
  EXPECT_EQ(slurp(path),
            "# xtk-schedule\n# format_version=1\n# profile=burst\n# seed=3\n"
            "flow_id,start_ns,src,dst,size_bytes,dscp,rate_bps,cc\n"
            "0,10,h0,h1,1500,0,0,\n1,10,h0,10.0.0.2,64000,26,100000000,bbr\n"
            "2,999999999999,h0,fd00::1,30000000,63,0,cubic\n");
  auto reader = ScheduleReader::open(path);
  EXPECT_EQ(reader->header().get("profile"), "burst");
  EXPECT_EQ(reader->header().get("seed"), "3");
  EXPECT_FALSE(reader->header().get("nothing"));
  EXPECT_TRUE(reader->header().has_dscp);
  EXPECT_TRUE(reader->header().has_rate);
  EXPECT_TRUE(reader->header().has_cc);
  Flow f;
  for (const auto& expected : flows) {
    ASSERT_TRUE(reader->next(f));
    EXPECT_EQ(f.id, expected.id);
    EXPECT_EQ(f.start_ns, expected.start_ns);
    EXPECT_EQ(f.src, expected.src);
    EXPECT_EQ(f.dst, expected.dst);
    EXPECT_EQ(f.size_bytes, expected.size_bytes);
    EXPECT_EQ(f.dscp, expected.dscp);
    EXPECT_EQ(f.rate_bps, expected.rate_bps);
    EXPECT_EQ(f.cc, expected.cc);
  }
  EXPECT_FALSE(reader->next(f));
  std::filesystem::remove(path);
}

TEST(Schedule, ManyFlowsStreamThroughTheBuffer) {
  const auto path = temp_path("many.csv");
  constexpr std::uint64_t kFlows = 200000;  // several 1 MiB buffer flushes
  {
    ScheduleWriter writer(path, ScheduleHeader{});
    for (std::uint64_t i = 0; i < kFlows; ++i) {
      writer.write({i, static_cast<std::int64_t>(i * 1000), "source-host", "destination-host", i + 1, 0, 0, ""});
    }
    writer.close();
  }
  auto reader = ScheduleReader::open(path);
  Flow f;
  std::uint64_t n = 0;
  while (reader->next(f)) {
    ASSERT_EQ(f.id, n);
    ASSERT_EQ(f.size_bytes, n + 1);
    ++n;
  }
  EXPECT_EQ(n, kFlows);
  std::filesystem::remove(path);
}

TEST(Schedule, WriterReportsAnUncreatableFile) {
  try {
    ScheduleWriter writer("/nonexistent-dir/s.csv", ScheduleHeader{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/s.csv: cannot create schedule"), std::string::npos);
  }
}

TEST(Schedule, WriterReportsAFullDisk) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  ScheduleWriter writer("/dev/full", ScheduleHeader{});
  for (std::uint64_t i = 0; i < 10; ++i) writer.write({i, 0, "a", "b", 1, 0, 0, ""});
  EXPECT_THROW(writer.close(), Error);
}

TEST(Schedule, ReaderErrorsNameTheLine) {
  EXPECT_EQ(read_error(""), "s.csv: empty file: not an xtk schedule");
  EXPECT_EQ(read_error("flow_id,start_ns\n"), "s.csv:1: not an xtk schedule: the first line must be '# xtk-schedule'");
  // A UTF-8 byte-order mark (a spreadsheet's save) is not part of the first line: the error is the next one's.
  EXPECT_EQ(read_error("\xEF\xBB\xBF# xtk-schedule\n# format_version=2\n"),
            "s.csv:2: format_version 2 is not supported (this xtk reads version 1)");
  EXPECT_EQ(read_error("# xtk-schedule\n# format_version=2\n"),
            "s.csv:2: format_version 2 is not supported (this xtk reads version 1)");
  EXPECT_EQ(read_error("# xtk-schedule\n# format_version=1\n# duration_ns=-5\n"),
            "s.csv:3: header duration_ns '-5' is not a positive integer");
  EXPECT_EQ(read_error("# xtk-schedule\n# format_version=1\n# load_bps_per_src=nan\n"),
            "s.csv:3: header load_bps_per_src 'nan' is not a non-negative integer");
  EXPECT_EQ(read_error("# xtk-schedule\n# format_version=1\n"),
            "s.csv:2: no column line: the header must end with 'flow_id,start_ns,src,dst,size_bytes'");
  EXPECT_EQ(read_error("# xtk-schedule\n# format_version=1\nid,start\n"),
            "s.csv:3: expected the column line 'flow_id,start_ns,src,dst,size_bytes[,dscp][,rate_bps][,cc]'");
  EXPECT_EQ(read_error("# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes,color\n"),
            "s.csv:3: unknown or repeated column 'color' (optional columns: dscp, rate_bps, cc)");
  EXPECT_EQ(read_error("# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes,dscp,dscp\n"),
            "s.csv:3: unknown or repeated column 'dscp' (optional columns: dscp, rate_bps, cc)");
  EXPECT_EQ(read_error("# xtk-schedule\nflow_id,start_ns,src,dst,size_bytes\n"),
            "s.csv:2: no '# format_version=N' line before the column line");
  const std::string head = kHead;
  EXPECT_EQ(read_error(head + "0,10,a,b\n"), "s.csv:4: 4 fields, expected 5");
  EXPECT_EQ(read_error(head + "0,10,a,b,1,2\n"), "s.csv:4: more than 5 fields");
  EXPECT_EQ(read_error(head + "x,10,a,b,1\n"), "s.csv:4: flow_id 'x' is not a non-negative integer");
  EXPECT_EQ(read_error(head + "0,-5,a,b,1\n"), "s.csv:4: start_ns '-5' is not a non-negative integer");
  EXPECT_EQ(read_error(head + "0,10,a,b,1\n1,20,a,b,1\n1,30,a,b,1\n"),
            "s.csv:6: flow_id 1 is not above the previous flow's 1: flow ids are unique and increase down the file");
  EXPECT_EQ(read_error(head + "5,10,a,b,1\n3,20,c,b,1\n"),
            "s.csv:5: flow_id 3 is not above the previous flow's 5: flow ids are unique and increase down the file");
  EXPECT_EQ(read_error("# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes,cc\n0,1,a,b,1,BBR\n"),
            "s.csv:4: cc 'BBR' is not a congestion control name (lower-case letters, digits, '_'; at most 15)");
  EXPECT_EQ(read_error(head + "0,20,a,b,1\n1,10,a,b,1\n"),
            "s.csv:5: start_ns 10 is before the previous flow's 20: schedules are sorted by start");
  EXPECT_EQ(read_error(head + "0,10,,b,1\n"), "s.csv:4: src '' is empty or has spaces");
  EXPECT_EQ(read_error(head + "0,10,a,b c,1\n"), "s.csv:4: dst 'b c' is empty or has spaces");
  EXPECT_EQ(read_error(head + "0,10,a,b,0\n"), "s.csv:4: size_bytes '0' is not a positive integer");
  EXPECT_EQ(read_error(head + "0,10,a,b,1.5\n"), "s.csv:4: size_bytes '1.5' is not a positive integer");
  EXPECT_EQ(read_error("# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes,dscp\n0,1,a,b,1,64\n"),
            "s.csv:4: dscp '64' is not an integer in 0-63");
  EXPECT_EQ(
      read_error("# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes,rate_bps\n0,1,a,b,1,-1\n"),
      "s.csv:4: rate_bps '-1' is not a non-negative integer");
  EXPECT_EQ(read_error(head + "0,10,a,b,1\r\n# comment\n\n1,11,a,b,2\r\n"), "(no error)");
  EXPECT_EQ(read_error(head + "0,10,a,b,1\n7,10,c,b,1\n"), "(no error)");  // ids may skip
}

// The reader takes the stream a block (64 KiB) at a time: lines that straddle
// blocks, a line longer than a block, CRLF endings and a last line without
// its newline all read as they would line by line, and an error still names
// its line.
TEST(Schedule, LinesReadAcrossBlocks) {
  std::string text = kHead;
  text += "# " + std::string(200'000, 'x') + "\r\n";  // longer than a block: the block grows
  constexpr std::uint64_t kFlows = 30'000;            // rows straddle many block ends
  for (std::uint64_t i = 0; i < kFlows; ++i) {
    const char* dst = i % 3 == 0 ? "host-a" : "host-bb";  // hosts alternate: each is checked again
    text += std::to_string(i) + "," + std::to_string(i * 10) + ",src," + dst + "," + std::to_string(i + 1) + "\r\n";
  }
  text += std::to_string(kFlows) + ",999999999,src,last,7";  // no newline
  std::istringstream in(text);
  ScheduleReader reader(in, "s.csv");
  Flow f;
  std::uint64_t n = 0;
  while (reader.next(f)) {
    ASSERT_EQ(f.id, n);
    ASSERT_EQ(f.dst, n == kFlows ? "last" : (n % 3 == 0 ? "host-a" : "host-bb"));
    ASSERT_EQ(f.size_bytes, n == kFlows ? 7u : n + 1);
    ++n;
  }
  EXPECT_EQ(n, kFlows + 1);
  EXPECT_EQ(reader.line(), 4 + kFlows + 1);
  // A bad host after thousands of good ones names its own line.
  EXPECT_EQ(read_error(std::string(kHead) + "0,10,a,b,1\n1,20,a,b,1\n2,30,a,b c,1\n"),
            "s.csv:6: dst 'b c' is empty or has spaces");
}

TEST(Schedule, FlowsBeforeAnErrorAreDelivered) {
  std::istringstream in(std::string(kHead) + "0,10,a,b,1\n1,20,a,b,2\nbroken\n");
  ScheduleReader reader(in, "s.csv");
  Flow f;
  EXPECT_TRUE(reader.next(f));
  EXPECT_TRUE(reader.next(f));
  EXPECT_EQ(f.size_bytes, 2u);
  EXPECT_THROW(reader.next(f), InputError);
}

}  // namespace xtk
