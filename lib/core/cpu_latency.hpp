// A PM QoS request on /dev/cpu_dma_latency: while it is held, no CPU enters
// an idle state that takes longer than the given time to wake from (0: idle
// CPUs poll; the kernel counts whole microseconds, so the time is rounded
// down). A thread that sleeps between precise deadlines otherwise pays the
// exit from a deep idle state (on a VM, the host's halt and reschedule) on
// every wake-up. The request ends when the object goes (the kernel drops it
// when the file closes), so a crash cannot leave the machine polling.
#pragma once

#include <cstdint>
#include <string>

namespace xtk {

class CpuLatencyRequest {
 public:
  // No request when `max_wake_ns` is negative (the options' "leave as is").
  // Throws UsageError for a time the kernel cannot take, Error when the
  // request cannot be made (needs root); both name `flag`.
  CpuLatencyRequest(std::int64_t max_wake_ns, const std::string& flag);
  ~CpuLatencyRequest();
  CpuLatencyRequest(const CpuLatencyRequest&) = delete;
  CpuLatencyRequest& operator=(const CpuLatencyRequest&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace xtk
