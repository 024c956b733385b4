// Table 8 from crafted collectives files: figures checked by hand, and the
// reader's errors name the file and line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "analysis/stragglers.hpp"
#include "common/error_of.hpp"
#include "core/error.hpp"
#include "formats/collectives.hpp"

namespace xtk::analysis {
namespace {

constexpr const char* kHead =
    "# xtk-collectives\n# format_version=1\n# clock_offset_ns=0\nrank,iter,index,collective,bytes,arrive_ns,end_ns\n";

constexpr const char* kGroupedHead =
    "# xtk-collectives\n# format_version=1\n# clock_offset_ns=0\n"
    "rank,iter,index,collective,bytes,arrive_ns,end_ns,group\n";

using xtk::testing::error_of;

class StragglerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("xtk_stragglers_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Files without the group column (every call the whole job's), as before replays had sub-groups.
  std::string write(const std::string& name, const std::string& body) const {
    const auto path = (dir_ / name).string();
    std::ofstream(path) << kHead << body;
    return path;
  }
  std::string write_grouped(const std::string& name, const std::string& body) const {
    const auto path = (dir_ / name).string();
    std::ofstream(path) << kGroupedHead << body;
    return path;
  }
  std::filesystem::path dir_;
};

}  // namespace

// Two ranks, two iterations of two calls (times in µs, as ns below):
//   iter 0: call 0  rank 0 arrives 0, rank 1 at 100; both end at 150
//           call 1  rank 0 at 200, rank 1 at 500; ends 600
//   iter 1: call 0  rank 0 at 1000, rank 1 at 1040; ends 1100
//           call 1  rank 1 at 1200, rank 0 at 1230; ends 1300 (rank 0 last)
// Rank 1 last at 3 of 4 calls, by 100, 300, 40 -> mean 146.67 µs; rank 0 last
// once, by 30. Waits: rank 0 (100 + 300 + 40 + 0) / 4 = 110, rank 1 30 / 4 = 7.5.
// Spreads 100, 300, 40, 30: p50 70. Transfers 50, 100, 60, 70: p50 65. Lost:
// iteration 1 only (it follows iteration 0): spread 30 over 1300 - 600 = 700.
TEST_F(StragglerFiles, FiguresByHand) {
  const auto r0 = write("c0.csv",
                        "0,0,0,all_reduce,8,0,150000\n0,0,1,all_reduce,8,200000,600000\n"
                        "0,1,0,all_reduce,8,1000000,1100000\n0,1,1,all_reduce,8,1230000,1300000\n");
  const auto r1 = write("c1.csv",
                        "1,0,0,all_reduce,8,100000,150000\n1,0,1,all_reduce,8,500000,600000\n"
                        "1,1,0,all_reduce,8,1040000,1100000\n1,1,1,all_reduce,8,1200000,1290000\n");
  const auto s = read_stragglers({r0, r1}, 2, 0);
  EXPECT_EQ(s.calls, 4u);
  EXPECT_EQ(s.iterations, 2u);
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[0].last, 1u);
  EXPECT_DOUBLE_EQ(s.ranks[0].last_by_us, 30);
  EXPECT_DOUBLE_EQ(s.ranks[0].wait_us, 110);
  EXPECT_EQ(s.ranks[1].last, 3u);
  EXPECT_NEAR(s.ranks[1].last_by_us, 440.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(s.ranks[1].wait_us, 7.5);
  EXPECT_DOUBLE_EQ(s.spread_p50_us, 70);
  EXPECT_DOUBLE_EQ(s.transfer_p50_us, 65);
  EXPECT_NEAR(s.lost_share, 30.0 / 700, 1e-12);

  // Warm-up leaves iteration 0 out: no iteration follows another.
  const auto late = read_stragglers({r0, r1}, 2, 1);
  EXPECT_EQ(late.calls, 2u);
  EXPECT_TRUE(std::isnan(late.lost_share));
}

TEST_F(StragglerFiles, CallsThatNotEveryRankRecordedAreLeftOut) {
  const auto r0 = write("c0.csv", "0,0,0,all_reduce,8,0,10\n0,0,1,all_reduce,8,20,30\n");
  const auto r1 = write("c1.csv", "1,0,0,all_reduce,8,5,10\n");
  EXPECT_EQ(read_stragglers({r0, r1}, 2, 0).calls, 1u);
  EXPECT_EQ(read_stragglers({r0, r1}, 3, 0).calls, 0u);
}

// A replay of 2 pipeline stages of 2 tensor-parallel ranks (times in µs):
//   group 0.1 all-reduce: rank 0 at 0, rank 1 at 50       -> rank 1 last by 50
//   pair 0.2, rank 0 sends to 2: rank 2 at 0, rank 0 at 100 -> rank 0 last by 100
//   pair 1.3, rank 1 sends to 3: rank 3 at 0, rank 1 at 100 -> rank 1 last by 100
//   group 2.3 all-reduce: rank 2 at 300, rank 3 at 400     -> rank 3 last by 100
// Each rank is in 2 calls; waits: rank 0 (50 + 0) / 2, rank 1 0, rank 2 (100 +
// 100) / 2, rank 3 (100 + 0) / 2. Joined by index alone, the 4 ranks' first
// calls would have made one call.
TEST_F(StragglerFiles, SubGroupsAndPairsMeetOnlyTheirRanks) {
  const auto r0 = write_grouped("g0.csv", "0,0,0,all_reduce,8,0,100000,0.1\n0,0,1,send,8,100000,300000,0.2\n");
  const auto r1 = write_grouped("g1.csv", "1,0,0,all_reduce,8,50000,100000,0.1\n1,0,1,send,8,100000,400000,1.3\n");
  const auto r2 = write_grouped("g2.csv", "2,0,0,recv,8,0,300000,0.2\n2,0,1,all_reduce,8,300000,500000,2.3\n");
  const auto r3 = write_grouped("g3.csv", "3,0,0,recv,8,0,400000,1.3\n3,0,1,all_reduce,8,400000,500000,2.3\n");
  const auto s = read_stragglers({r0, r1, r2, r3}, 4, 0);
  EXPECT_EQ(s.calls, 4u);
  ASSERT_EQ(s.ranks.size(), 4u);
  const std::vector<std::uint64_t> last{1, 2, 0, 1};
  const std::vector<double> wait{25, 0, 100, 50};
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(s.ranks[r].calls, 2u) << r;
    EXPECT_EQ(s.ranks[r].last, last[r]) << r;
    EXPECT_DOUBLE_EQ(s.ranks[r].wait_us, wait[r]) << r;
  }
  EXPECT_DOUBLE_EQ(s.ranks[1].last_by_us, 75);
  // A rank missing from its pair leaves that call out, not the others.
  EXPECT_EQ(read_stragglers({r0, r1, r2}, 4, 0).calls, 2u);
}

TEST_F(StragglerFiles, ErrorsNameTheFileAndLine) {
  const auto backwards = write("b.csv", "0,0,0,all_reduce,8,50,10\n");
  EXPECT_NE(error_of([&] { read_stragglers({backwards}, 0, 0); }).find("b.csv:5: end_ns 10 is before arrive_ns 50"),
            std::string::npos)
      << error_of([&] { read_stragglers({backwards}, 0, 0); });
  const auto order = write("o.csv", "0,1,0,all_reduce,8,0,10\n0,0,3,all_reduce,8,0,10\n");
  EXPECT_NE(error_of([&] { read_stragglers({order}, 0, 0); }).find("o.csv:6: iter 0 index 3 of rank 0 comes after"),
            std::string::npos);
  const auto a = write("a.csv", "0,0,0,all_reduce,8,0,10\n");
  const auto twice = write("t.csv", "0,1,0,all_reduce,8,0,10\n");
  EXPECT_NE(error_of([&] { read_stragglers({a, twice}, 0, 0); }).find("rank 0 is also in"), std::string::npos);
  const auto one = write("one.csv", "0,0,0,all_reduce,8,0,10\n");
  EXPECT_NE(error_of([&] { read_stragglers({one}, 0, 0); }).find("at least 2 ranks"), std::string::npos);
  const auto outside = write_grouped("g.csv", "3,0,0,all_reduce,8,0,10,0.1\n");
  EXPECT_NE(error_of([&] { read_stragglers({outside}, 4, 0); }).find("g.csv:5: rank 3 is not in its call's group 0.1"),
            std::string::npos)
      << error_of([&] { read_stragglers({outside}, 4, 0); });
  const auto order_in_group = write_grouped("d.csv", "1,0,0,all_reduce,8,0,10,2.1\n");
  EXPECT_NE(error_of([&] { read_stragglers({order_in_group}, 4, 0); }).find("group '2.1': its ranks must increase"),
            std::string::npos);
  const auto junk = write_grouped("j.csv", "1,0,0,all_reduce,8,0,10,one\n");
  EXPECT_NE(error_of([&] { read_stragglers({junk}, 4, 0); }).find("group 'one' is not \"all\" or ranks joined by dots"),
            std::string::npos);
  const auto big = write("r.csv", "4,0,0,all_reduce,8,0,10\n");
  EXPECT_NE(error_of([&] { read_stragglers({big}, 2, 0); }).find("r.csv:5: rank 4 is not below the job's 2 ranks"),
            std::string::npos);
}

}  // namespace xtk::analysis
