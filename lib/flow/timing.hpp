// How precisely the client's workers keep flow start times, decided once
// before they start. By default the client takes the best the process is
// allowed: SCHED_FIFO for the workers, the workers on CPUs that take none of
// the flows' network interrupts, and a PM QoS request that keeps idle CPUs
// polling (root). Each choice can be turned off; what could not be had is
// said in one line, with what it costs (docs/flow-engine.md#timing).
#pragma once

#include <pthread.h>

#include <atomic>
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

// The wake-up latency part of the timing description: "no PM QoS request" for
// a negative latency, else "PM QoS N us", which says it has no effect when
// `cpuidle_driver` (/sys/devices/system/cpu/cpuidle/current_driver) is "none":
// without a cpuidle driver an idle CPU always halts (as on VMs whose vCPUs
// halt), whatever the request.
std::string wake_latency_text(std::int64_t wake_latency_ns, const std::string& cpuidle_driver);

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
  // With realtime(), where a thread may come back from SCHED_IDLE (FeederPriority).
  bool feeder_steps_aside() const { return feeder_steps_aside_; }
  // The CPUs the workers run on (empty: not pinned).
  const std::vector<int>& worker_cpus() const { return cpus_; }
  // The one line of what could not be had and its cost; empty when nothing was lacking.
  const std::string& lacking() const { return lacking_; }
  // "SCHED_FIFO, feeder SCHED_IDLE while behind; workers on CPU 1 (eth0's interrupts go to 0); PM QoS 0 us"
  std::string describe() const;
  nlohmann::json to_json() const;

 private:
  bool realtime_ = false;
  bool feeder_steps_aside_ = false;
  bool each_own_ = false;  // a list: worker i on cpus_[i % size]; else every worker may use all of cpus_
  std::vector<int> cpus_;
  std::string cpus_why_;
  std::int64_t wake_latency_ns_ = kWakeLatencyNone;
  std::string cpuidle_driver_;  // read when a request is held
  std::string lacking_;
  std::unique_ptr<CpuLatencyRequest> wake_latency_;
};

// The feeder while the schedule runs ahead of the workers (a ring full): it
// has nothing due then, and steps aside to SCHED_IDLE, running on CPU time no
// other thread wants. On two CPUs shared with a server, its record writing
// otherwise took the CPU of a worker or of the server, and the flows in flight
// waited (bench/flow part 3). A worker whose ring runs low brings it back, so
// that on a busy machine an idle feeder cannot starve the workers. Only with
// SCHED_FIFO on, and where the process may bring a thread back from
// SCHED_IDLE: root, CAP_SYS_NICE, or an RLIMIT_NICE that allows the feeder's
// nice value (Timing::feeder_steps_aside()).
//
// No lock: the feeder, at SCHED_IDLE, may wait long for a CPU at any point,
// and a worker must never wait for it. `aside_` is set before the feeder's
// step to SCHED_IDLE and cleared only after its step back, so the feeder is
// never at SCHED_IDLE unseen; a worker's call that lands just before the step
// aside is lost, and the worker's next call brings it back.
class FeederPriority {
 public:
  // On the feeder's thread.
  explicit FeederPriority(bool permitted) : permitted_(permitted), feeder_(pthread_self()) {}
  ~FeederPriority() { step_back(); }
  FeederPriority(const FeederPriority&) = delete;
  FeederPriority& operator=(const FeederPriority&) = delete;

  // The feeder's own steps: aside when it finds a ring full, back when every ring has room.
  void step_aside();
  void step_back();
  // Any thread: whether the feeder may be at SCHED_IDLE, and a worker's call
  // to bring it back to normal priority (the feeder steps aside again only
  // after its own step back).
  bool aside() const { return aside_.load(std::memory_order_relaxed); }
  void bring_back() const;

 private:
  bool permitted_;
  pthread_t feeder_;
  bool idle_ = false;  // the feeder's own view: it stepped aside and not back
  std::atomic<bool> aside_{false};
};

}  // namespace xtk
