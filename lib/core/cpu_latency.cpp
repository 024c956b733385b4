#include "core/cpu_latency.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/error.hpp"

namespace xtk {

CpuLatencyRequest::CpuLatencyRequest(std::int64_t max_wake_ns, const std::string& flag) {
  if (max_wake_ns < 0) return;
  const std::int64_t max_wake_us = max_wake_ns / 1000;
  if (max_wake_us > INT32_MAX) throw UsageError(fmt::format("{}: at most {} s", flag, INT32_MAX / 1'000'000));
  fd_ = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) {
    throw Error(fmt::format("{}: cannot open /dev/cpu_dma_latency: {} (needs root)", flag, std::strerror(errno)));
  }
  // The kernel takes the value as a binary 32-bit integer.
  const auto value = static_cast<std::int32_t>(max_wake_us);
  if (write(fd_, &value, sizeof value) != static_cast<ssize_t>(sizeof value)) {
    const int error = errno;
    close(fd_);
    throw Error(fmt::format("{}: /dev/cpu_dma_latency refused {} us: {}", flag, max_wake_us, std::strerror(error)));
  }
}

CpuLatencyRequest::~CpuLatencyRequest() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace xtk
