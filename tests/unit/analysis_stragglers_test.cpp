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

using xtk::testing::error_of;

class StragglerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("xtk_stragglers_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& body) const {
    const auto path = (dir_ / name).string();
    std::ofstream(path) << kHead << body;
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
  const auto big = write("r.csv", "4,0,0,all_reduce,8,0,10\n");
  EXPECT_NE(error_of([&] { read_stragglers({big}, 2, 0); }).find("r.csv:5: rank 4 is not below the job's 2 ranks"),
            std::string::npos);
}

}  // namespace xtk::analysis
