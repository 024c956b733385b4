// The timer floor of this machine: the lateness a minimal loop reaches when
// it fires Poisson events at absolute deadlines the best way known here
// (timer slack 1 ns, sleep to a guard before the deadline, then spin; SCHED_FIFO
// on a pinned core when permitted). bench/flow/run.py holds xtk-client's
// lateness against it, measured in the same run.
//
//   xtk-bench-timer-floor MEAN_GAP_US SECONDS GUARD_US CPU [WAKE_LATENCY_US]
// prints: events p50_us p99_us max_us fifo(0|1)
// WAKE_LATENCY_US holds a PM QoS request as xtk-client --cpu-wake-latency does
// (on a kernel without a cpuidle driver, CPU polled at SCHED_IDLE as there).
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <vector>

#include "core/cpu_latency.hpp"

namespace {

long long now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: %s MEAN_GAP_US SECONDS GUARD_US CPU [WAKE_LATENCY_US]\n", argv[0]);
    return 2;
  }
  const double mean_gap_ns = std::atof(argv[1]) * 1e3;
  const long long duration_ns = static_cast<long long>(std::atof(argv[2]) * 1e9);
  const long long guard_ns = static_cast<long long>(std::atof(argv[3]) * 1e3);
  const int cpu = std::atoi(argv[4]);
  std::optional<xtk::CpuLatencyRequest> wake_latency;
  if (argc == 6) wake_latency.emplace(std::atoll(argv[5]) * 1000, "WAKE_LATENCY_US", std::vector<int>{cpu});
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  sched_param param{};
  param.sched_priority = 50;
  const bool fifo = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;

  std::mt19937_64 rng(1);
  std::exponential_distribution<double> gap(1.0 / mean_gap_ns);
  std::vector<double> lateness;
  const long long start = now_ns() + 10'000'000;
  double t = 0;
  while (true) {
    t += gap(rng);
    if (t >= static_cast<double>(duration_ns)) break;
    const long long deadline = start + static_cast<long long>(t);
    if (deadline - now_ns() > guard_ns) {
      const long long wake = deadline - guard_ns;
      const timespec ts{static_cast<time_t>(wake / 1000000000LL), static_cast<long>(wake % 1000000000LL)};
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    }
    long long now = now_ns();
    while (now < deadline) now = now_ns();
    lateness.push_back(static_cast<double>(now - deadline) / 1e3);
  }
  std::sort(lateness.begin(), lateness.end());
  const auto at = [&](double q) {
    return lateness.empty() ? 0.0 : lateness[static_cast<std::size_t>(q * static_cast<double>(lateness.size() - 1))];
  };
  std::printf("%zu %.2f %.2f %.2f %d\n", lateness.size(), at(0.5), at(0.99), at(1.0), fifo ? 1 : 0);
  return 0;
}
