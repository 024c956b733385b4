// Summary statistics for streams too long to keep: running moments and a
// log-bucketed histogram for percentiles (relative error below 1/128).
#pragma once

#include <cstdint>
#include <vector>

namespace xtk {

// Welford's running mean and variance.
class RunningStats {
 public:
  void add(double x);
  std::uint64_t count() const { return n_; }
  double mean() const { return mean_; }
  double variance() const;  // sample variance, 0 with fewer than 2 values
  double stdev() const;
  double cv() const;  // stdev / mean, 0 when the mean is 0
  double min() const { return min_; }
  double max() const { return max_; }
  double sum() const { return sum_; }

 private:
  std::uint64_t n_ = 0;
  double mean_ = 0, m2_ = 0, sum_ = 0, min_ = 0, max_ = 0;
};

// Histogram of non-negative values with buckets whose width is a fixed share
// of their value: exact below 128, then 128 sub-buckets per power of two.
// Memory is bounded (about 7k counters for the whole uint64 range).
class LogHistogram {
 public:
  void add(std::uint64_t value, std::uint64_t count = 1);
  std::uint64_t count() const { return total_; }
  // Value at quantile q in [0, 1] (the midpoint of the bucket holding it),
  // exact at q = 0 and q = 1 (the smallest and largest value added).
  double quantile(double q) const;

 private:
  static std::size_t bucket_of(std::uint64_t value);
  static double bucket_mid(std::size_t bucket);
  std::vector<std::uint64_t> counts_;
  std::uint64_t total_ = 0, min_ = UINT64_MAX, max_ = 0;
};

// Percentile of a sorted vector by linear interpolation between ranks.
double percentile_sorted(const std::vector<double>& sorted, double q);

}  // namespace xtk
