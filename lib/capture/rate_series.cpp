#include "capture/rate_series.hpp"

#include <cmath>

#include "core/error.hpp"

namespace xtk::capture {
namespace {

constexpr std::size_t kMaxAutoBuckets = 4000;
constexpr std::size_t kMaxFixedBuckets = 1'000'000;

}  // namespace

RateHistogram::RateHistogram(double fixed_step_bps)
    : step_(fixed_step_bps > 0 ? fixed_step_bps : 1e3), fixed_(fixed_step_bps > 0) {}

void RateHistogram::add(double bps) {
  auto bucket = static_cast<std::size_t>(std::max(0.0, bps) / step_);
  if (fixed_ && bucket >= kMaxFixedBuckets) {
    throw UsageError("--hist-step: the rates need more than a million buckets of this width; give a wider step");
  }
  while (!fixed_ && bucket >= kMaxAutoBuckets) {
    const std::size_t factor = decade_phase_ == 0 ? 5 : 2;
    decade_phase_ ^= 1;
    std::vector<std::uint64_t> merged((counts_.size() + factor - 1) / factor, 0);
    for (std::size_t i = 0; i < counts_.size(); ++i) merged[i / factor] += counts_[i];
    counts_ = std::move(merged);
    step_ *= static_cast<double>(factor);
    bucket = static_cast<std::size_t>(std::max(0.0, bps) / step_);
  }
  if (bucket >= counts_.size()) counts_.resize(bucket + 1, 0);
  ++counts_[bucket];
  ++total_;
}

std::vector<RateHistogram::Bucket> RateHistogram::buckets(std::size_t max_buckets) const {
  // Merge factors that keep widths at 1, 2, 5 (or 5, 10, 25) x 10^k.
  std::size_t factor = 1;
  if (!fixed_) {
    static constexpr std::size_t kFactors[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000};
    for (std::size_t f : kFactors) {
      factor = f;
      if ((counts_.size() + f - 1) / f <= max_buckets) break;
    }
  }
  std::vector<Bucket> out;
  const double width = step_ * static_cast<double>(factor);
  for (std::size_t i = 0; i < counts_.size(); i += factor) {
    const std::size_t bucket = i / factor;
    const auto k = static_cast<double>(bucket);
    Bucket b{k * width, (k + 1) * width, 0};
    for (std::size_t j = i; j < std::min(counts_.size(), i + factor); ++j) b.count += counts_[j];
    out.push_back(b);
  }
  return out;
}

RateSeries::RateSeries(std::int64_t bin_ns, std::size_t smooth_bins, double histogram_step_bps,
                       std::function<void(const SeriesPoint&)> sink)
    : bin_ns_(bin_ns),
      smooth_(std::max<std::size_t>(1, smooth_bins)),
      sink_(std::move(sink)),
      window_(smooth_, 0),
      histogram_(histogram_step_bps) {}

void RateSeries::emit() {
  const double seconds = static_cast<double>(bin_ns_) * 1e-9;
  current_.rate_bps = static_cast<double>(current_.bytes) * 8 / seconds;
  const std::size_t slot = bins_ % smooth_;
  window_sum_ = window_sum_ - window_[slot] + current_.bytes;
  window_[slot] = current_.bytes;
  ++bins_;
  current_.smoothed_bps.reset();
  if (bins_ >= smooth_) {
    const double smoothed = static_cast<double>(window_sum_) * 8 / (seconds * static_cast<double>(smooth_));
    current_.smoothed_bps = smoothed;
    histogram_.add(smoothed);
    smoothed_stats_.add(smoothed);
    smoothed_quantiles_.add(static_cast<std::uint64_t>(std::llround(smoothed)));
  }
  if (sink_) sink_(current_);
  const std::int64_t next = current_.bin_start_ns + bin_ns_;
  current_ = SeriesPoint{};
  current_.bin_start_ns = next;
}

void RateSeries::begin(std::int64_t first_bin_start_ns) {
  if (started_) return;
  started_ = true;
  current_ = SeriesPoint{};
  current_.bin_start_ns = first_bin_start_ns;
}

void RateSeries::add(std::int64_t bin_start_ns, std::uint64_t bytes, std::uint64_t packets) {
  begin(bin_start_ns);
  while (current_.bin_start_ns < bin_start_ns) emit();
  current_.bytes += bytes;
  current_.packets += packets;
}

void RateSeries::finish(std::int64_t last_bin_start_ns) {
  if (!started_) return;
  do {
    emit();
  } while (current_.bin_start_ns <= last_bin_start_ns);
  started_ = false;
}

}  // namespace xtk::capture
