// The counter sampler: every period, on absolute CLOCK_MONOTONIC deadlines
// (timer slack 1 ns), reads every source, stamps the sample in the middle of the reads
// (monotonic and realtime ns) and flags it slow when the reads took longer
// than a limit, so analysis never turns a stretched read into an impossible
// rate. Deadlines missed entirely are skipped, not caught up in a burst.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "capture/counter_source.hpp"
#include "core/stats.hpp"

namespace xtk::capture {

struct SamplerOptions {
  std::int64_t period_ns = 1'000'000;
  std::int64_t duration_ns = 0;           // 0: until stopped
  std::int64_t slow_ns = 0;               // 0: max(50 us, period / 10)
  int cpu = -1;                           // pin the sampling thread to this CPU
  int fifo_priority = 0;                  // SCHED_FIFO at this priority (1-99); 0: normal scheduling
  std::int64_t spin_ns = 0;               // wake this long before each deadline and busy-wait to it (CPU for precision)
  std::int64_t cpu_wake_latency_ns = -1;  // PM QoS limit on idle-state exit while sampling; -1: leave as is
  std::string out = "counters.csv";
  std::vector<std::pair<std::string, std::string>> header;  // extra `# key=value` lines
};

std::int64_t default_slow_ns(std::int64_t period_ns);

struct SamplerReport {
  SamplerOptions options;    // as run, so the report says how it was taken
  std::int64_t slow_ns = 0;  // the slow limit applied (options.slow_ns or its default)
  std::uint64_t samples = 0, rows = 0, counters = 0;
  std::uint64_t slow = 0;    // samples flagged slow
  std::uint64_t missed = 0;  // deadlines skipped because a sample ran past them
  LogHistogram interval_ns;  // between consecutive sample stamps
  LogHistogram error_ns;     // |interval - period|
  LogHistogram late_ns;      // wake-up after the deadline
  LogHistogram read_ns;      // time to read every source
  std::int64_t wall_ns = 0;
  double cpu_percent = 0;             // of one CPU, the whole process (sampler and writer) but its idle polling
  double polling_cpu_percent = 0;     // of one CPU, the idle pollers keeping --cpu-wake-latency (none: 0)
  std::string wake_latency;           // how --cpu-wake-latency was kept (CpuLatencyRequest::describe)
  std::vector<std::string> vanished;  // "net:eth0: ... at +1.2 s"
  bool all_vanished = false;          // sampling ended because no source was left
};

// Throws UsageError, naming the flag, for a period or spin the sampler cannot keep.
void check_options(const SamplerOptions& options);

// Samples until `stop`, the duration, or every source has gone away.
// Throws Error when scheduling cannot be set or the output fails.
SamplerReport run_sampler(std::vector<std::unique_ptr<CounterSource>>& sources, const SamplerOptions& options,
                          const std::atomic<bool>& stop);

}  // namespace xtk::capture
