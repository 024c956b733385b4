// Cumulative counters into rates per sampling interval (xtk-analyze counters).
//
// Each interval between two samples of a counter is one of:
//   ok     delta = value - previous value; rate = delta / interval
//   wrap   the value went down as a 32- or 64-bit counter wraps: delta across the wrap
//   reset  it went down otherwise (interface re-created, driver reloaded):
//          delta unknown, no rate; the next interval starts from the new value
//   slow   either sample's reads took too long: the delta is exact, but not
//          when it happened, so no rate (the delta still counts in totals)
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capture/trace.hpp"
#include "core/report.hpp"
#include "core/stats.hpp"

namespace xtk::capture {

struct CounterRateOptions {
  std::vector<std::string> sources = {"*"}, names = {"*"};  // globs
  std::optional<TimeBound> from, to;                        // from the first sample, or @realtime ns
  std::string rates_path;                                   // per-interval CSV ("# xtk-counter-rates"); empty: none
};

struct CounterRateSummary {
  std::string source, name;
  int bytes_per_unit = 0;  // 0: not a byte counter
  std::uint64_t samples = 0, intervals = 0, slow = 0, resets = 0, wraps = 0;
  std::uint64_t delta = 0;        // over every interval but resets
  std::uint64_t rated_delta = 0;  // over the intervals with a rate
  std::int64_t rated_ns = 0;
  LogHistogram per_s;  // per-interval rates
  double max_per_s = 0;
  double mean_per_s() const;  // rated_delta / rated time
};

struct CounterRateResult {
  std::string path;
  std::int64_t period_ns = 0;  // from the header, 0 when absent
  std::uint64_t rows = 0;
  std::int64_t first_t_ns = 0, last_t_ns = 0;
  std::vector<CounterRateSummary> counters;  // in first-seen order
};

CounterRateResult analyze_counters(const std::string& path, const CounterRateOptions& options);

// source,name,samples,intervals,slow,resets,wraps,delta,mean_per_s,p50_per_s,p99_per_s,max_per_s,mean_bps,p99_bps,max_bps
// (bps columns "-" for counters that do not count bytes).
Table counter_rate_table(const CounterRateResult& result);
nlohmann::json counter_rate_json(const CounterRateResult& result);  // bps fields null when not bytes

}  // namespace xtk::capture
