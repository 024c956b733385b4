#include "core/open_files.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

namespace xtk {

std::uint64_t raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    const rlim_t before = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) limit.rlim_cur = before;
  }
  return limit.rlim_cur;
}

std::uint64_t reserve_descriptor_table(std::uint64_t descriptors) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  const std::uint64_t n = std::min<std::uint64_t>({descriptors, limit.rlim_cur, INT_MAX});
  if (n == 0) return 0;
  // A descriptor numbered n - 1 makes the kernel size the table for n.
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const int top = fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(n - 1));
  close(fd);
  if (top < 0) return 0;
  close(top);
  return n;
}

std::uint64_t prepare_open_files(std::uint64_t descriptors) {
  const std::uint64_t limit = raise_open_file_limit();
  reserve_descriptor_table(descriptors);
  return limit;
}

}  // namespace xtk
