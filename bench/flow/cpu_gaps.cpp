// The lateness no program can beat on this machine: a thread that never
// sleeps, pinned to CPU at SCHED_FIFO when permitted, reads the clock in a
// loop and keeps every gap between two reads (the time the CPU was taken from
// it: interrupts, the hypervisor, its tick). An event due at a random instant
// inside a gap of length g is late by the rest of the gap, so the share of
// instants later than x is sum(max(0, g - x)) / time spun, and the quantiles
// below come from that share. bench/flow/run.py prints them beside part 2's
// lateness: a goal under this machine's gaps p99 cannot be met here by any
// timing strategy.
//
// It spins in 100 ms stretches with a 10 ms rest between them, so that a
// SCHED_FIFO thread stays under the kernel's RT throttling (950 ms a second by
// default), which would otherwise take the CPU for 50 ms each second.
//
//   xtk-bench-cpu-gaps SECONDS CPU
// prints: gaps_per_s lost_percent p99_us p999_us max_us fifo(0|1)
// (gaps: clock reads more than 1 us apart)
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

long long now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

constexpr long long kGapNs = 1'000;
constexpr long long kStretchNs = 100'000'000;
constexpr long long kRestNs = 10'000'000;

// The lateness x at which the share of random instants later than x falls to
// 1 - q, found by bisection (the share falls as x grows).
double quantile_us(const std::vector<long long>& gaps, double spun_ns, double q) {
  const auto share_later = [&](double x) {
    double sum = 0;
    for (long long g : gaps) sum += std::max(0.0, static_cast<double>(g) - x);
    return sum / spun_ns;
  };
  double lo = 0;
  double hi = gaps.empty() ? 0 : static_cast<double>(*std::max_element(gaps.begin(), gaps.end()));
  for (int i = 0; i < 60 && hi - lo > 1; ++i) {
    const double mid = (lo + hi) / 2;
    (share_later(mid) > 1 - q ? lo : hi) = mid;
  }
  return hi / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  char* seconds_end = nullptr;
  char* cpu_end = nullptr;
  const double seconds = argc == 3 ? std::strtod(argv[1], &seconds_end) : 0;
  const long cpu = argc == 3 ? std::strtol(argv[2], &cpu_end, 10) : -1;
  if (argc != 3 || *seconds_end != '\0' || seconds <= 0 || *cpu_end != '\0' || cpu < 0 || cpu >= CPU_SETSIZE) {
    std::fprintf(stderr, "usage: %s SECONDS CPU (SECONDS above 0, CPU a CPU number)\n", argv[0]);
    return 2;
  }
  const auto duration_ns = static_cast<long long>(seconds * 1e9);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    std::fprintf(stderr, "%s: cannot run on CPU %ld\n", argv[0], cpu);
    return 2;
  }
  sched_param param{};
  param.sched_priority = 50;
  const bool fifo = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;

  std::vector<long long> gaps;
  gaps.reserve(1 << 20);
  double spun_ns = 0;
  const long long end = now_ns() + duration_ns;
  while (true) {
    const long long from = now_ns();
    if (from >= end) break;
    const long long stop = std::min(end, from + kStretchNs);
    long long prev = from;
    while (prev < stop) {
      const long long t = now_ns();
      if (t - prev > kGapNs) gaps.push_back(t - prev);
      prev = t;
    }
    spun_ns += static_cast<double>(prev - from);
    const timespec rest{0, kRestNs};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &rest, nullptr);
  }
  double lost_ns = 0;
  for (long long g : gaps) lost_ns += static_cast<double>(g);
  const long long max_ns = gaps.empty() ? 0 : *std::max_element(gaps.begin(), gaps.end());
  std::printf("%.0f %.3f %.2f %.2f %.2f %d\n", static_cast<double>(gaps.size()) / (spun_ns / 1e9),
              100 * lost_ns / spun_ns, quantile_us(gaps, spun_ns, 0.99), quantile_us(gaps, spun_ns, 0.999),
              static_cast<double>(max_ns) / 1e3, fifo ? 1 : 0);
  return 0;
}
