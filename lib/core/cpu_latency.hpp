// A PM QoS request on /dev/cpu_dma_latency: while it is held, no CPU enters
// an idle state that takes longer than the given time to wake from (0: idle
// CPUs poll; the kernel counts whole microseconds, so the time is rounded
// down). A thread that sleeps between precise deadlines otherwise pays the
// exit from a deep idle state (on a VM, the host's halt and reschedule) on
// every wake-up. The request ends when the object goes (the kernel drops it
// when the file closes), so a crash cannot leave the machine polling.
//
// The kernel keeps the request through its cpuidle driver. Where it has none
// (as on VMs whose idle vCPUs halt), an idle CPU halts whatever the request,
// so the request keeps the CPUs its caller's threads wake on busy instead,
// with a SCHED_IDLE poller on each (core/idle_poller.hpp) — unless a cgroup
// CPU quota would pay for the spinning.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xtk {

class IdlePollers;

class CpuLatencyRequest {
 public:
  // No request when `max_wake_ns` is negative (the options' "leave as is").
  // `cpus`: where the caller's waking threads run, polled where the kernel
  // has no cpuidle driver. Throws UsageError for a time the kernel cannot
  // take, Error when the request cannot be made (needs root); both name `flag`.
  CpuLatencyRequest(std::int64_t max_wake_ns, const std::string& flag, const std::vector<int>& cpus);
  ~CpuLatencyRequest();
  CpuLatencyRequest(const CpuLatencyRequest&) = delete;
  CpuLatencyRequest& operator=(const CpuLatencyRequest&) = delete;

  // "PM QoS 0 us", or how it is kept without a cpuidle driver (wake_latency_text).
  std::string describe() const;
  std::int64_t max_wake_ns() const { return max_wake_ns_; }  // as asked; -1 without a request
  std::vector<int> polled_cpus() const;                      // empty unless kept by polling
  std::int64_t polling_cpu_ns() const;                       // the CPU time the polling has taken so far

 private:
  int fd_ = -1;
  std::int64_t max_wake_ns_ = -1;
  std::string cpuidle_driver_;
  std::string not_polled_;  // why not, where it would have been
  std::unique_ptr<IdlePollers> pollers_;
};

// The description of a request of `max_wake_ns` (negative: none): "no PM QoS
// request", "PM QoS 0 us", and where `cpuidle_driver` is "none" either the
// CPUs `polled` or, from `not_polled`, why the request has no effect.
std::string wake_latency_text(std::int64_t max_wake_ns, const std::string& cpuidle_driver,
                              const std::vector<int>& polled, const std::string& not_polled);

}  // namespace xtk
