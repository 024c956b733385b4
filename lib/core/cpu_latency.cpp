#include "core/cpu_latency.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <system_error>

#include "core/cpus.hpp"
#include "core/error.hpp"
#include "core/idle_poller.hpp"
#include "core/kernel_files.hpp"

namespace xtk {

CpuLatencyRequest::CpuLatencyRequest(std::int64_t max_wake_ns, const std::string& flag, const std::vector<int>& cpus) {
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
  max_wake_ns_ = max_wake_ns;
  cpuidle_driver_ = read_first_line("/sys/devices/system/cpu/cpuidle/current_driver");
  if (cpuidle_driver_ != "none") return;
  not_polled_ = cgroup_cpu_quota();
  if (!not_polled_.empty()) return;
  try {
    pollers_ = std::make_unique<IdlePollers>(cpus);
    not_polled_ = pollers_->refused();
  } catch (const std::system_error& e) {  // no thread to be had: the request stands, unpolled
    not_polled_ = fmt::format("cannot start a poller thread: {}", e.what());
  }
}

CpuLatencyRequest::~CpuLatencyRequest() {
  pollers_.reset();
  if (fd_ >= 0) close(fd_);
}

std::string CpuLatencyRequest::describe() const {
  return wake_latency_text(max_wake_ns_, cpuidle_driver_, polled_cpus(), not_polled_);
}

std::vector<int> CpuLatencyRequest::polled_cpus() const { return pollers_ ? pollers_->cpus() : std::vector<int>{}; }

std::int64_t CpuLatencyRequest::polling_cpu_ns() const { return pollers_ ? pollers_->cpu_ns() : 0; }

std::string wake_latency_text(std::int64_t max_wake_ns, const std::string& cpuidle_driver,
                              const std::vector<int>& polled, const std::string& not_polled) {
  if (max_wake_ns < 0) return "no PM QoS request";
  std::string request = fmt::format("PM QoS {} us", max_wake_ns / 1000);
  if (cpuidle_driver != "none") return request;  // the kernel keeps it (or nothing is known: no sysfs file)
  if (!polled.empty()) {
    return fmt::format("{}, kept by polling CPU {} at SCHED_IDLE (no cpuidle driver){}", request, cpu_list_text(polled),
                       not_polled.empty() ? "" : fmt::format("; {}", not_polled));
  }
  return fmt::format("{} (no effect here: no cpuidle driver, idle CPUs halt{})", request,
                     not_polled.empty() ? "" : fmt::format("; not polled: {}", not_polled));
}

}  // namespace xtk
