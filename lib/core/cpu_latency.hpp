// A PM QoS request on /dev/cpu_dma_latency: while it is held, no CPU enters
// an idle state that takes longer than the given time to wake from (0: idle
// CPUs poll). A thread that sleeps between precise deadlines otherwise pays
// the exit from a deep idle state (on a VM, the host's halt and reschedule)
// on every wake-up. The request ends when the object goes (the kernel drops
// it when the file closes), so a crash cannot leave the machine polling.
#pragma once

#include <string>

namespace xtk {

class CpuLatencyRequest {
 public:
  // Throws Error naming `flag` when the request cannot be made (needs root).
  CpuLatencyRequest(int max_wake_us, const std::string& flag);
  ~CpuLatencyRequest();
  CpuLatencyRequest(const CpuLatencyRequest&) = delete;
  CpuLatencyRequest& operator=(const CpuLatencyRequest&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace xtk
