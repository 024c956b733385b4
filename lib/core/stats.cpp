#include "core/stats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace xtk {

void RunningStats::add(double x) {
  if (n_ == 0) {
    min_ = max_ = x;
  } else {
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
  }
  ++n_;
  sum_ += x;
  const double delta = x - mean_;
  mean_ += delta / static_cast<double>(n_);
  m2_ += delta * (x - mean_);
}

double RunningStats::variance() const { return n_ > 1 ? m2_ / static_cast<double>(n_ - 1) : 0.0; }
double RunningStats::stdev() const { return std::sqrt(variance()); }
double RunningStats::cv() const { return mean_ != 0 ? stdev() / mean_ : 0.0; }

namespace {
constexpr int kSubBits = 7;  // 128 sub-buckets per power of two
constexpr std::uint64_t kSub = 1ULL << kSubBits;
}  // namespace

std::size_t LogHistogram::bucket_of(std::uint64_t value) {
  if (value < kSub) return static_cast<std::size_t>(value);
  const int top = 63 - std::countl_zero(value);  // >= kSubBits
  const int shift = top - kSubBits;
  const std::uint64_t mantissa = (value >> shift) - kSub;  // in [0, kSub)
  return static_cast<std::size_t>(kSub + static_cast<std::uint64_t>(shift) * kSub + mantissa);
}

double LogHistogram::bucket_mid(std::size_t bucket) {
  if (bucket < kSub) return static_cast<double>(bucket);
  const std::size_t shift = (bucket - kSub) / kSub;
  const std::size_t mantissa = (bucket - kSub) % kSub;
  const double low = std::ldexp(static_cast<double>(kSub + mantissa), static_cast<int>(shift));
  const double width = std::ldexp(1.0, static_cast<int>(shift));
  return low + (width - 1) / 2;
}

void LogHistogram::add(std::uint64_t value, std::uint64_t count) {
  if (count == 0) return;
  const std::size_t b = bucket_of(value);
  if (b >= counts_.size()) counts_.resize(b + 1, 0);
  counts_[b] += count;
  total_ += count;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

double LogHistogram::quantile(double q) const {
  if (total_ == 0) return 0.0;
  if (q <= 0) return static_cast<double>(min_);
  if (q >= 1) return static_cast<double>(max_);
  // Nearest-rank: the smallest value with at least q of the mass at or below it.
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total_)));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < counts_.size(); ++b) {
    seen += counts_[b];
    if (seen >= rank && counts_[b] > 0) {
      return std::clamp(bucket_mid(b), static_cast<double>(min_), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace xtk
