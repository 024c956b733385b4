// Clocks. Intervals and deadlines use CLOCK_MONOTONIC; CLOCK_REALTIME is
// recorded beside it only to line up hosts after a run.
#pragma once

#include <time.h>

#include <cstdint>

namespace xtk {

inline std::int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
inline std::int64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
inline std::int64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }

inline timespec to_timespec(std::int64_t ns) {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

}  // namespace xtk
