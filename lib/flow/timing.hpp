// How precisely the client's workers keep flow start times, decided once
// before they start. By default the client takes the best the process is
// allowed: SCHED_FIFO for the workers, the workers on CPUs that take none of
// the flows' network interrupts, and a PM QoS request that keeps idle CPUs
// polling (root). Each choice can be turned off; what could not be had is
// said in one line, with what it costs (docs/flow-engine.md#timing).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "transport/socket.hpp"

namespace xtk {

class CpuLatencyRequest;

enum class CpuPinning {
  automatic,  // away from the CPUs that take the flows' network interrupts, where they can be found
  none,       // wherever the kernel puts them
  list,       // worker i on cpus[i % size]
};

// The PM QoS choice: auto is 0 (idle CPUs poll) where permitted (root).
inline constexpr std::int64_t kWakeLatencyAuto = -2;
inline constexpr std::int64_t kWakeLatencyNone = -1;

struct TimingRequest {
  bool realtime = true;  // SCHED_FIFO for the workers where permitted
  CpuPinning pinning = CpuPinning::automatic;
  std::vector<int> cpus;                                // with CpuPinning::list
  std::int64_t cpu_wake_latency_ns = kWakeLatencyAuto;  // or a limit in ns, or kWakeLatencyNone

  // For bulk streams: they have no start times to keep, and a SCHED_FIFO
  // stream that never sleeps takes its CPU from the kernel's processing of its
  // own packets (over a veth pair it halved xtk's bulk throughput, bench/flow
  // part 1). Normal priority, and no PM QoS request unless one was given.
  TimingRequest without_start_times() const {
    TimingRequest r = *this;
    r.realtime = false;
    if (r.cpu_wake_latency_ns == kWakeLatencyAuto) r.cpu_wake_latency_ns = kWakeLatencyNone;
    return r;
  }
};

// The worker CPUs kept away from the flows' network interrupts. `allowed`:
// the CPUs this process may use; `interrupt_cpus`: per interface the flows
// use, the CPUs its interrupts go to (empty: it has none, like lo or a veth).
// Empty `cpus`: no pinning, and `why` says why not.
struct CpuChoice {
  std::vector<int> cpus;
  std::string why;
};
CpuChoice choose_worker_cpus(const std::vector<int>& allowed,
                             const std::map<std::string, std::vector<int>>& interrupt_cpus);

// The network interface the kernel routes `to` through (getifaddrs name of
// the source address it picks); empty when it cannot tell.
std::string route_interface(const SocketAddress& to);
// The CPUs the interrupts of `interface`'s device are routed to now
// (/proc/irq/N/effective_affinity_list of its MSI or legacy interrupts);
// empty for a device without interrupts.
std::vector<int> interface_interrupt_cpus(const std::string& interface);

class Timing {
 public:
  // Decides and takes every choice that applies to the whole process (the
  // PM QoS request is held as long as this object). `destinations`: where the
  // flows go, for their interfaces.
  Timing(const TimingRequest& request, const std::vector<SocketAddress>& destinations);
  ~Timing();
  Timing(const Timing&) = delete;
  Timing& operator=(const Timing&) = delete;

  // Called by worker `index` on its own thread: pins and raises it as
  // decided. Returns a warning when the kernel refused (empty if not).
  std::string apply_to_worker(unsigned index) const;
  // Worker threads only: SCHED_FIFO (when realtime()) or normal priority,
  // for a worker that gives SCHED_FIFO up while it is busy (client_worker.cpp).
  void set_worker_fifo(bool on) const;

  bool realtime() const { return realtime_; }
  // The CPUs the workers run on (empty: not pinned).
  const std::vector<int>& worker_cpus() const { return cpus_; }
  // The one line of what could not be had and its cost; empty when nothing was lacking.
  const std::string& lacking() const { return lacking_; }
  std::string describe() const;  // "SCHED_FIFO; workers on CPU 1 (eth0's interrupts go to 0); PM QoS 0 us"
  nlohmann::json to_json() const;

 private:
  bool realtime_ = false;
  bool each_own_ = false;  // a list: worker i on cpus_[i % size]; else every worker may use all of cpus_
  std::vector<int> cpus_;
  std::string cpus_why_;
  std::string lacking_;
  std::unique_ptr<CpuLatencyRequest> wake_latency_;
};

}  // namespace xtk
