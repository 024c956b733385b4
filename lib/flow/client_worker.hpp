// Internals of the client shared by the feeder (client.cpp) and the workers
// (client_worker.cpp). Not part of the library's interface.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "flow/client.hpp"
#include "flow/spsc_ring.hpp"
#include "formats/flow_records.hpp"
#include "transport/socket.hpp"

namespace xtk::client_detail {

struct Destination {
  std::string name;
  SocketAddress address;
};

// Destinations are appended by the feeder only before a flow naming them is
// handed to a worker; capacity is reserved up front so workers may read
// existing entries while the feeder appends.
inline constexpr std::size_t kMaxDestinations = 1 << 16;
// Congestion controls named by a schedule's cc column, the same way.
inline constexpr std::size_t kMaxCongestionControls = 64;
// Flows handed to one worker and not yet started: what its ring holds (a
// power of two of slots, one kept free).
inline constexpr std::size_t kWorkerRingFlows = (1 << 17) - 1;
// The feeder hands flows to their worker this long before their start, or
// this much before the workers' pool look-ahead when that is longer.
inline constexpr std::int64_t kFeederLookaheadNs = 50'000'000;
inline constexpr std::int64_t kFeederMarginNs = 10'000'000;
// At a congested port a handshake queues behind the data for as long as the
// queue holds (over 100 ms at 1 Gbit/s): the pool then looks ahead twice what
// recent handshakes took, when that is more than --pool-ahead, up to this.
inline constexpr std::int64_t kMaxPoolAheadNs = 500'000'000;
// Due flows a worker takes off its ring to wait for a connection, at most:
// behind that, a client slower than its schedule leaves them on the ring,
// whose bound then holds the feeder back, and memory stays constant however
// long the schedule.
inline constexpr std::size_t kMaxPendingFlows = 4096;

// A flow that can only wait for a connection is not spun to: its worker wakes
// for it at most this often, and serves events this long before starting it.
inline constexpr std::int64_t kBatchNs = 50'000;

// A worker's next wait: until `deadline`, spun to at the end when it is a
// flow's start (`spin`).
struct NextWait {
  std::int64_t deadline = 0;
  bool spin = false;
};

// The wait before the ring's front flow, due at `due`. `until`: when the
// worker wakes anyway (its sweep, or the end of an idle wait); `startable`: a
// connection can take the flow now; `backlog_full`: kMaxPendingFlows flows
// already wait for one. `spin_ns`: --spin.
NextWait next_wait(std::int64_t now, std::int64_t until, std::int64_t due, bool startable, bool backlog_full,
                   std::int64_t spin_ns);

struct PlannedFlow {
  std::uint64_t id = 0;
  std::int64_t sched_ns = 0;  // schedule time
  std::uint32_t dst = 0;
  std::uint64_t size_bytes = 0;
  int dscp = 0;
  std::uint64_t rate_bps = 0;
  std::uint8_t congestion_control = 0;  // 1 + its index in Shared::congestion_controls; 0: none named
  bool stream = false;                  // bulk: send until stop_ns
  std::int64_t stop_ns = 0;
  // For the causes of a late start (flow/late_starts.hpp), absolute: when the
  // feeder first offered it and the worker took it, and how long of the time
  // in between the worker slept past it.
  std::int64_t handed_abs = 0, taken_abs = 0, asleep_ns = 0;
};

// A flow's end as its worker reports it: no strings, since a worker ends one
// flow every few microseconds with small flows flat out, and it is the
// client's busiest thread. The feeder makes the record, and counts the start's
// lateness, on its own time.
struct FinishedFlow {
  PlannedFlow plan;
  std::int64_t start_abs = 0, end_abs = 0;  // 0: not started, not ended
  std::uint64_t size_bytes = 0;             // a stream's: the bytes it sent
  FlowStatus status = FlowStatus::ok;
  std::uint32_t error = 0;  // 1 + its index in FinishedFlows::errors; 0: none
};

struct FinishedFlows {
  std::vector<FinishedFlow> flows;
  std::vector<std::string> errors;  // what failed flows said
  void add(const PlannedFlow& plan, std::int64_t start_abs, std::int64_t end_abs, FlowStatus status, std::string error,
           std::uint64_t size_bytes);
  // Moves `other`'s flows to the end of these (error indices follow), and clears it.
  void take(FinishedFlows& other);
  void clear() {
    flows.clear();
    errors.clear();
  }
};

struct Shared {
  const ClientOptions& options;
  const Timing* timing = nullptr;  // set before the workers start
  std::vector<Destination> destinations;
  std::vector<std::string> congestion_controls;
  std::int64_t start_mono_ns = 0;  // the schedule's time zero on CLOCK_MONOTONIC
  std::atomic<bool> feeding_done{false};
  std::atomic<bool> stopping{false};                           // interrupted: start nothing new
  std::atomic<std::int64_t> stop_deadline_ns{0};               // then cancel what is still in flight
  std::atomic<std::uint64_t> connection_waits{0};              // pool: flows that found no idle connection
  std::atomic<std::int64_t> lookahead_ns{kFeederLookaheadNs};  // raised by a worker's pool look-ahead
  std::mutex records_mutex;
  FinishedFlows finished;                 // not yet written
  std::int64_t widest_pool_ahead_ns = 0;  // the widest any worker's pool looked ahead (under records_mutex)
  explicit Shared(const ClientOptions& o)
      : options(o), lookahead_ns(std::max(kFeederLookaheadNs, o.pool_ahead_ns + kFeederMarginNs)) {
    destinations.reserve(kMaxDestinations);
    congestion_controls.reserve(kMaxCongestionControls);
  }
  // Moves `batch` to `finished`; without `wait`, only if the lock is free (false if not).
  bool publish(FinishedFlows& batch, bool wait);
};

struct Connection;

class Worker {
 public:
  Worker(Shared& shared, unsigned index);
  ~Worker();
  SpscRing<PlannedFlow>& ring() { return ring_; }
  // Called by the feeder after pushing a flow due at `due_abs`: wakes the
  // worker when it sleeps past that flow's start (its ring was empty when it
  // went to sleep, and a feeder held up on its CPU handed the flow late).
  void handed(std::int64_t due_abs);
  void start(const std::vector<std::uint32_t>& warm_destinations);
  void join();
  bool finished() const { return finished_.load(); }
  bool ready() const { return ready_.load(); }
  std::vector<std::string> warnings();

 private:
  struct Impl;
  friend struct Connection;  // a pooled connection passes its channel's events to Impl
  Shared& shared_;
  unsigned index_;
  SpscRing<PlannedFlow> ring_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  std::atomic<bool> finished_{false}, ready_{false};
  // While the worker sleeps: when it next looks at its ring (absolute); 0 while it is awake.
  std::atomic<std::int64_t> sleeps_until_{0};
};

}  // namespace xtk::client_detail
