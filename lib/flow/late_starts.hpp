// Why flows started late. A flow's lateness (start - scheduled start) is
// split into the parts that add up to it, in order:
//   feeder      the feeder offered it to its worker after its time (reading
//               the schedule, or off its CPU);
//   wake-up     the worker was asleep (a wait with a timeout) at that time
//               and woke after it: timer and scheduler latency, the kernel's;
//   worker      the worker was awake and had not taken it yet: moving other
//               flows' bytes, starting others, or off its CPU (the kernel's
//               work there included);
//   connection  it waited for a connection: queued for one (pool at
//               --pool-limit, a handshake; per-flow: the handshake's start),
//               or left on a full ring behind the flows queued so.
// A flow later than 100 us counts under its longest part.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace xtk {

enum class LateCause : std::uint8_t { feeder, wake_up, worker, connection };
inline constexpr std::array<const char*, 4> kLateCauseNames{"feeder", "wake-up", "worker", "connection"};
inline constexpr std::int64_t kLateStartNs = 100'000;

// The times a worker knows of one flow, all absolute on CLOCK_MONOTONIC.
struct StartTimes {
  std::int64_t due = 0;      // scheduled start
  std::int64_t handed = 0;   // first offered to the worker's ring
  std::int64_t taken = 0;    // taken off the ring by the worker
  std::int64_t asleep = 0;   // of the time from max(due, handed) to taken: the worker asleep (ns)
  std::int64_t started = 0;  // the flow's start
};

struct LatenessParts {
  std::array<std::int64_t, 4> ns{};  // by LateCause
  static LatenessParts of(const StartTimes& t);
  LateCause longest() const;
};

// Flows later than kLateStartNs by cause, and the latest one's.
class LateStarts {
 public:
  void add(const StartTimes& t);
  std::uint64_t flows(LateCause cause) const { return flows_[static_cast<std::size_t>(cause)]; }
  std::uint64_t total() const;
  std::int64_t max_ns() const { return max_ns_; }
  LateCause max_cause() const { return max_cause_; }
  // "feeder 0, wake-up 2, worker 5, connection 0; latest 2093.0 us: worker"
  std::string describe() const;
  nlohmann::json to_json() const;

 private:
  std::array<std::uint64_t, 4> flows_{};
  std::int64_t max_ns_ = 0;
  LateCause max_cause_ = LateCause::worker;
};

}  // namespace xtk
