// The injection rate of the selected traffic, bin by bin (the seed's
// Figure 3-8): every bin of the trace's span, empty ones included, its rate,
// a trailing moving average over N bins, and the histogram of that average.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/stats.hpp"

namespace xtk::capture {

struct SeriesPoint {
  std::int64_t bin_start_ns = 0;
  std::uint64_t bytes = 0, packets = 0;
  double rate_bps = 0;
  std::optional<double> smoothed_bps;  // absent for the first N-1 bins (the window is not full)
};

// Counts of values in equal-width buckets [k * step, (k + 1) * step). Without
// a fixed step it starts at 1 kbit/s and widens (x5, x2, x5, ...) whenever a
// value would need more than 4000 buckets, so the widths stay 1, 2, 5 x 10^k.
class RateHistogram {
 public:
  explicit RateHistogram(double fixed_step_bps = 0);
  void add(double bps);
  struct Bucket {
    double from_bps, to_bps;
    std::uint64_t count;
  };
  // The buckets from 0 to the largest value, merged (when the step is not
  // fixed) to at most `max_buckets`.
  std::vector<Bucket> buckets(std::size_t max_buckets = 25) const;
  std::uint64_t count() const { return total_; }

 private:
  double step_;
  bool fixed_;
  int decade_phase_ = 0;  // 0: step is 1 x 10^k, 1: 5 x 10^k
  std::vector<std::uint64_t> counts_;
  std::uint64_t total_ = 0;
};

class RateSeries {
 public:
  RateSeries(std::int64_t bin_ns, std::size_t smooth_bins, double histogram_step_bps,
             std::function<void(const SeriesPoint&)> sink);

  // The series starts at this bin even if its first traffic comes later (a --from window).
  void begin(std::int64_t first_bin_start_ns);
  // Traffic in a bin; bins arrive in order, a bin may come in several parts.
  void add(std::int64_t bin_start_ns, std::uint64_t bytes, std::uint64_t packets);
  // Emits the open bin and empty ones through `last_bin_start_ns` (a --to window).
  void finish(std::int64_t last_bin_start_ns);

  std::uint64_t bins() const { return bins_; }
  const RateHistogram& histogram() const { return histogram_; }
  const RunningStats& smoothed_stats() const { return smoothed_stats_; }
  const LogHistogram& smoothed_quantiles() const { return smoothed_quantiles_; }

 private:
  void emit();  // the open bin, then the next one opens empty

  std::int64_t bin_ns_;
  std::size_t smooth_;
  std::function<void(const SeriesPoint&)> sink_;
  bool started_ = false;
  SeriesPoint current_;
  std::vector<std::uint64_t> window_;  // the last `smooth_` bins' bytes, a ring
  std::uint64_t window_sum_ = 0;
  std::uint64_t bins_ = 0;
  RateHistogram histogram_;
  RunningStats smoothed_stats_;
  LogHistogram smoothed_quantiles_;
};

}  // namespace xtk::capture
