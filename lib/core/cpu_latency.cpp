#include "core/cpu_latency.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/error.hpp"

namespace xtk {

CpuLatencyRequest::CpuLatencyRequest(int max_wake_us, const std::string& flag) {
  if (max_wake_us < 0) throw UsageError(fmt::format("{}: a time in microseconds, 0 or more", flag));
  fd_ = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) {
    throw Error(fmt::format("{}: cannot open /dev/cpu_dma_latency: {} (needs root)", flag, std::strerror(errno)));
  }
  // The kernel takes the value as a binary 32-bit integer.
  const std::int32_t value = max_wake_us;
  if (write(fd_, &value, sizeof value) != static_cast<ssize_t>(sizeof value)) {
    const int error = errno;
    close(fd_);
    throw Error(fmt::format("{}: /dev/cpu_dma_latency refused {} us: {}", flag, max_wake_us, std::strerror(error)));
  }
}

CpuLatencyRequest::~CpuLatencyRequest() { close(fd_); }

}  // namespace xtk
