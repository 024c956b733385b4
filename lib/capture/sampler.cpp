#include "capture/sampler.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/clock.hpp"
#include "core/cpu_latency.hpp"
#include "core/cpus.hpp"
#include "core/error.hpp"
#include "formats/counters.hpp"

namespace xtk::capture {
namespace {

std::int64_t cpu_ns() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto ns = [](const timeval& t) { return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_usec * 1000; };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

void set_scheduling(const SamplerOptions& o) {
  // The default 50 us of slack would be added to every wake-up.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  if (o.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(o.cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      throw UsageError(fmt::format("--cpu {}: cannot pin to it: {}", o.cpu, std::strerror(errno)));
    }
  }
  if (o.fifo_priority > 0) {
    sched_param param{};
    param.sched_priority = o.fifo_priority;
    if (sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
      throw Error(fmt::format("--fifo {}: SCHED_FIFO refused: {} (needs root or CAP_SYS_NICE)", o.fifo_priority,
                              std::strerror(errno)));
    }
  }
}

struct Active {
  CounterSource* source;
  std::size_t first_id;  // writer id of its first counter
  std::vector<std::uint64_t> values;
};

}  // namespace

std::int64_t default_slow_ns(std::int64_t period_ns) { return std::max<std::int64_t>(50'000, period_ns / 10); }

void check_options(const SamplerOptions& o) {
  if (o.period_ns < 10'000) throw UsageError("--period: at least 10us");
  if (o.spin_ns < 0 || o.spin_ns >= o.period_ns) throw UsageError("--spin: from 0 to less than the period");
}

SamplerReport run_sampler(std::vector<std::unique_ptr<CounterSource>>& sources, const SamplerOptions& o,
                          const std::atomic<bool>& stop) {
  check_options(o);
  SamplerReport report;
  report.options = o;
  report.slow_ns = o.slow_ns > 0 ? o.slow_ns : default_slow_ns(o.period_ns);

  auto header = o.header;
  header.emplace_back("period_ns", std::to_string(o.period_ns));
  header.emplace_back("slow_limit_ns", std::to_string(report.slow_ns));
  // Before the file is made: a time the kernel cannot take leaves nothing behind.
  const CpuLatencyRequest wake_latency(o.cpu_wake_latency_ns, "--cpu-wake-latency",
                                       o.cpu >= 0 ? std::vector<int>{o.cpu} : allowed_cpus());
  report.wake_latency = wake_latency.describe();
  // The writer thread starts before the scheduling changes, so it keeps normal priority and any CPU.
  CountersWriter writer(o.out, header);
  std::vector<Active> active;
  for (auto& s : sources) {
    Active a{s.get(), 0, std::vector<std::uint64_t>(s->counters().size())};
    for (std::size_t i = 0; i < s->counters().size(); ++i) {
      const std::size_t id = writer.add_counter(s->name(), s->counters()[i]);
      if (i == 0) a.first_id = id;
    }
    report.counters += s->counters().size();
    active.push_back(std::move(a));
  }
  set_scheduling(o);

  const std::int64_t start = monotonic_ns();
  const std::int64_t cpu_start = cpu_ns();
  const std::int64_t polling_start = wake_latency.polling_cpu_ns();
  const std::int64_t end = o.duration_ns > 0 ? start + o.duration_ns : INT64_MAX;
  std::int64_t deadline = start;
  std::int64_t previous = 0;
  while (!stop.load(std::memory_order_relaxed) && !active.empty() && deadline < end) {
    const timespec when = to_timespec(deadline - o.spin_ns);
    if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &when, nullptr) == EINTR) continue;
    std::int64_t woke = monotonic_ns();
    // A sleeping thread wakes tens of microseconds late under load; one that
    // spins the last stretch is on time, at the cost of that CPU.
    while (woke < deadline && o.spin_ns > 0) woke = monotonic_ns();
    for (std::size_t i = 0; i < active.size();) {
      if (active[i].source->read(active[i].values.data())) {
        ++i;
        continue;
      }
      const std::string note = fmt::format("{}: {} at +{:.3f} s; its counters stop there", active[i].source->name(),
                                           active[i].source->why(), static_cast<double>(woke - start) * 1e-9);
      std::fprintf(stderr, "xtk-log counters: %s\n", note.c_str());
      report.vanished.push_back(note);
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
    }
    const std::int64_t read_end = monotonic_ns();
    const std::int64_t read_end_realtime = realtime_ns();
    // Stamped in the middle of its reads: every counter was read within half
    // their time of it, and the stamps' spread is the wake-up's plus half the
    // reads', not the whole of both.
    const std::int64_t t = std::max(woke + (read_end - woke) / 2, previous + 1);
    const std::int64_t realtime = read_end_realtime - (read_end - t);
    const bool slow = read_end - woke > report.slow_ns;
    if (!active.empty()) {
      writer.begin_sample(t, realtime, slow);
      for (const auto& a : active) {
        for (std::size_t i = 0; i < a.values.size(); ++i) writer.row(a.first_id + i, a.values[i]);
      }
      writer.end_sample();
      ++report.samples;
      report.slow += slow ? 1 : 0;
      report.late_ns.add(static_cast<std::uint64_t>(std::max<std::int64_t>(0, woke - deadline)));
      report.read_ns.add(static_cast<std::uint64_t>(read_end - woke));
      if (previous > 0) {
        report.interval_ns.add(static_cast<std::uint64_t>(t - previous));
        report.error_ns.add(static_cast<std::uint64_t>(std::abs(t - previous - o.period_ns)));
      }
      previous = t;
    }
    if (writer.failed()) break;
    deadline += o.period_ns;
    const std::int64_t now = monotonic_ns();
    if (deadline <= now) {
      const std::int64_t skipped = (now - deadline) / o.period_ns + 1;
      // Deadlines past the end of the run were never due.
      const std::int64_t due = deadline < end ? std::min(skipped, (end - deadline + o.period_ns - 1) / o.period_ns) : 0;
      report.missed += static_cast<std::uint64_t>(due);
      deadline += skipped * o.period_ns;
    }
  }
  report.wall_ns = monotonic_ns() - start;
  // The sampler's own CPU apart from the polling that keeps the PM QoS request on a kernel without a cpuidle driver.
  const std::int64_t polling = wake_latency.polling_cpu_ns() - polling_start;
  const std::int64_t own = cpu_ns() - cpu_start - polling;
  const auto share = [&](std::int64_t ns) {
    return report.wall_ns > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(report.wall_ns) : 0.0;
  };
  report.cpu_percent = share(own);
  report.polling_cpu_percent = share(polling);
  writer.close();
  report.rows = writer.rows();
  report.all_vanished = active.empty() && !sources.empty();
  return report;
}

}  // namespace xtk::capture
