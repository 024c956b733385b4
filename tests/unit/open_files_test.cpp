#include "core/open_files.hpp"

#include <sys/resource.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace xtk {
namespace {

// The descriptor slots the kernel has allocated for this process.
std::uint64_t fd_table_size() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("FDSize:", 0) == 0) return std::stoull(line.substr(7));
  }
  return 0;
}

std::ptrdiff_t open_descriptors() {
  return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator());
}

TEST(OpenFiles, ReservingGrowsTheDescriptorTableAndLeavesNothingOpen) {
  const std::uint64_t limit = raise_open_file_limit();
  const std::uint64_t before = fd_table_size();
  ASSERT_GT(before, 0U);
  const std::uint64_t want = before * 4;
  if (limit < want) GTEST_SKIP() << "needs an open-file limit of " << want << " (ulimit -Hn)";
  const std::ptrdiff_t open_before = open_descriptors();
  EXPECT_EQ(reserve_descriptor_table(want), want);
  EXPECT_GE(fd_table_size(), want);
  EXPECT_EQ(open_descriptors(), open_before);
}

TEST(OpenFiles, ReservesNoMoreThanTheOpenFileLimit) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  const std::uint64_t size = fd_table_size();
  if (saved.rlim_max < size + 1) GTEST_SKIP() << "the hard open-file limit is below the table's size";
  rlimit lower = saved;
  lower.rlim_cur = size + 1;  // room for the call's own descriptor
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lower), 0);
  const std::uint64_t reserved = reserve_descriptor_table(size * 64);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_EQ(reserved, size + 1);
  EXPECT_LE(fd_table_size(), size * 2) << "grown past the limit";
}

TEST(OpenFiles, PreparingRaisesTheLimitThenSizesTheTableWithinIt) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  const std::uint64_t want = fd_table_size() * 4;
  if (limit.rlim_max < want) GTEST_SKIP() << "needs a hard open-file limit of " << want << " (ulimit -Hn)";
  rlimit low = limit;
  low.rlim_cur = std::min<rlim_t>(limit.rlim_cur, fd_table_size() + 1);  // as a 1024 default would be
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  EXPECT_EQ(prepare_open_files(want), limit.rlim_max);
  EXPECT_GE(fd_table_size(), want) << "sized before the limit was raised";
}

}  // namespace
}  // namespace xtk
