// The iterations file as the training emulator writes it, read back by the
// analysis library's reader (docs/run-directory.md): the two must agree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "formats/iterations.hpp"

namespace xtk::collective {
namespace {

TEST(CollectiveIterations, WrittenFileReadsBackInTheAnalysisReader) {
  const auto path =
      (std::filesystem::temp_directory_path() / ("xtk_iters_" + std::to_string(::getpid()) + ".csv")).string();
  {
    IterationWriter writer(path, {{"model", "tiny-mlp"}, {"ranks", "2"}});
    writer.write({0, 0, 1764000000000000000, 1764000000180512000, 180512.0, 63179.25, 8424160, 3, 1, 250});
    writer.write({1, 0, 1764000000000000100, 1764000000180151000, 180150.9, 63052.9, 8424160, std::nullopt,
                  std::nullopt, std::nullopt});
    writer.write({0, 1, 1764000000180512000, 1764000000361024000, 180512.0, 0.0, 8424160, 0, std::nullopt, 0});
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  EXPECT_EQ(
      content.rfind("# xtk-iterations\n# format_version=1\n# model=tiny-mlp\n# ranks=2\n"
                    "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes,tcp_retransmits,tcp_timeouts,tcp_rwnd_limited_us\n"
                    "0,0,1764000000000000000,1764000000180512000,180512.000,63179.250,8424160,3,1,250\n"
                    "1,0,1764000000000000100,1764000000180151000,180150.900,63052.900,8424160,,,\n"
                    "0,1,1764000000180512000,1764000000361024000,180512.000,0.000,8424160,0,,0\n",
                    0),
      0u)
      << content;
  std::vector<IterationRecord> rows;
  read_iterations(content, path, 2, [&](const IterationRecord& r) { rows.push_back(r); });
  ASSERT_EQ(rows.size(), 3u);
  // Saved again by a spreadsheet, with a UTF-8 byte-order mark first: the same rows.
  std::size_t marked_rows = 0;
  read_iterations("\xEF\xBB\xBF" + content, path, 2, [&](const IterationRecord&) { ++marked_rows; });
  EXPECT_EQ(marked_rows, 3u);
  EXPECT_EQ(rows[0].tcp_retransmits, 3u);
  EXPECT_EQ(rows[0].tcp_timeouts, 1u);
  EXPECT_EQ(rows[0].tcp_rwnd_limited_us, 250u);
  EXPECT_EQ(rows[1].rank, 1u);
  EXPECT_DOUBLE_EQ(rows[1].iter_us, 180150.9);
  EXPECT_FALSE(rows[1].tcp_retransmits.has_value());
  EXPECT_EQ(rows[2].iter, 1u);
  EXPECT_EQ(rows[2].bytes, 8424160u);
  EXPECT_EQ(rows[2].tcp_retransmits, 0u);
  EXPECT_FALSE(rows[2].tcp_timeouts.has_value());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace xtk::collective
