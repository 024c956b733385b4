// Keeps CPUs from idling: one thread per CPU, pinned there at SCHED_IDLE,
// spinning until the object goes. It is what a PM QoS request of 0 does
// through the kernel's cpuidle driver (idle CPUs poll instead of halting),
// for kernels without one: there an idle CPU always halts, and on a VM the
// halted vCPU waits for its host to run it again, hundreds of microseconds
// to milliseconds at the tail. A SCHED_IDLE thread runs only when nothing
// else on its CPU wants to: any other thread of its cgroup preempts it at
// once; threads of other cgroups share the CPU with the poller's cgroup by
// the groups' weights.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace xtk {

class IdlePollers {
 public:
  // Starts a poller on each of `cpus`; one that cannot be pinned there or
  // run at SCHED_IDLE ends at once instead of spinning.
  explicit IdlePollers(const std::vector<int>& cpus);
  ~IdlePollers();  // stops and joins every poller
  IdlePollers(const IdlePollers&) = delete;
  IdlePollers& operator=(const IdlePollers&) = delete;

  const std::vector<int>& cpus() const { return polling_; }  // where a poller runs
  const std::string& refused() const { return refused_; }    // why others do not ("" if none)
  // The CPU time the pollers have used so far, so that a process can tell its
  // own work from its polling.
  std::int64_t cpu_ns() const;

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::vector<pthread_t> handles_;  // of the pollers that spin, for their CPU clocks
  std::vector<int> polling_;
  std::string refused_;
};

// The CPU quota of this process's cgroup or an ancestor (cgroup v2 cpu.max,
// v1 cpu.cfs_quota_us), as "cgroup /a/b: cpu.max 50000 100000"; empty when
// none is found. A poller would spend such a quota, and the kernel would then
// stop every normal thread of the group until the next period. `self_cgroup`
// and `mounts` are where the kernel lists the process's groups and mounts
// their hierarchies.
std::string cgroup_cpu_quota(const std::string& self_cgroup = "/proc/self/cgroup",
                             const std::string& mounts = "/sys/fs/cgroup");

}  // namespace xtk
