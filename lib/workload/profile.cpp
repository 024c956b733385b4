#include "workload/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace xtk {

double BurstShape::burst_share() const {
  return height * static_cast<double>(width_ns) / static_cast<double>(period());
}

double BurstShape::rest_factor() const {
  const double rest_time = 1.0 - static_cast<double>(width_ns) / static_cast<double>(period());
  return rest_time > 0 ? (1.0 - burst_share()) / rest_time : 0.0;
}

void BurstShape::check_grid(std::int64_t width_ns, std::int64_t period_ns) {
  if (width_ns <= 0) throw UsageError("--burst-width must be above 0");
  if (period_ns <= width_ns) throw UsageError("--burst-period must be longer than --burst-width");
}

void BurstShape::validate() const {
  check_grid(width_ns, period());
  if (!(height >= 1.0)) throw UsageError("--burst-height must be at least 1 (a multiple of the mean rate)");
  if (burst_share() > 1.0 + 1e-12) {
    throw UsageError(
        fmt::format("--burst-height {} x --burst-width exceeds the period: the burst would carry {:.0f}% of the bytes",
                    height, burst_share() * 100));
  }
  if (min_burst_flows < 1 || min_rest_flows < 1)
    throw UsageError("--min-burst-flows and --min-rest-flows must be >= 1");
}

namespace {

class Consistent final : public ArrivalProcess {
 public:
  Consistent(const FlowSizeCdf& cdf, double rate_bps, std::int64_t duration_ns, Rng arrivals, Rng sizes)
      : cdf_(cdf),
        mean_gap_ns_(rate_bps > 0 ? cdf.mean_bytes() * 8.0 / rate_bps * 1e9 : 0),
        duration_ns_(duration_ns),
        arrivals_(arrivals),
        sizes_(sizes) {}

  bool next(Arrival& arrival) override {
    if (mean_gap_ns_ <= 0) return false;
    t_ns_ += arrivals_.exponential(mean_gap_ns_);
    if (t_ns_ >= static_cast<double>(duration_ns_)) return false;
    arrival.start_ns = static_cast<std::int64_t>(t_ns_);
    arrival.size_bytes = cdf_.sample(sizes_);
    arrival.rate_bps = 0;
    return true;
  }

 private:
  const FlowSizeCdf& cdf_;
  double mean_gap_ns_;
  std::int64_t duration_ns_;
  double t_ns_ = 0;
  Rng arrivals_, sizes_;
};

class Burst final : public ArrivalProcess {
 public:
  Burst(const FlowSizeCdf& cdf, double rate_bps, std::int64_t duration_ns, const BurstShape& shape, Rng arrivals,
        Rng sizes)
      : cdf_(cdf), rate_bps_(rate_bps), duration_ns_(duration_ns), shape_(shape), arrivals_(arrivals), sizes_(sizes) {}

  bool next(Arrival& arrival) override {
    if (rate_bps_ <= 0) return false;
    while (left_ == 0) {
      if (!open_next_phase()) return false;
    }
    // Sequential uniform order statistics: the next of `left_` sorted points in
    // [position_, 1), so starts are Poisson given the phase's flow count.
    position_ += (1.0 - position_) * (1.0 - std::pow(arrivals_.uniform_open0(), 1.0 / static_cast<double>(left_)));
    --left_;
    arrival.start_ns = phase_start_ns_ + static_cast<std::int64_t>(position_ * static_cast<double>(phase_len_ns_));
    arrival.size_bytes = cdf_.sample(sizes_, scale_);
    arrival.rate_bps = 0;
    return true;
  }

 private:
  // Moves to the next phase (burst window, then the rest of the period) and
  // decides its flow count and size scale; false past the duration.
  bool open_next_phase() {
    const std::int64_t period = shape_.period();
    const bool burst = !in_burst_;
    const std::int64_t start = burst ? period_index_ * period : period_index_ * period + shape_.width_ns;
    const std::int64_t nominal = burst ? shape_.width_ns : period - shape_.width_ns;
    if (!burst) ++period_index_;
    in_burst_ = burst;
    if (start >= duration_ns_) return false;
    phase_start_ns_ = start;
    phase_len_ns_ = std::min(nominal, duration_ns_ - start);
    const double phase_rate = rate_bps_ * (burst ? shape_.height : shape_.rest_factor());
    const double budget = phase_rate * static_cast<double>(phase_len_ns_) / 8e9;
    const double min_flows = burst ? shape_.min_burst_flows : shape_.min_rest_flows;
    if (budget <= 0) {
      left_ = 0;
      return true;
    }
    const double mean = cdf_.mean_bytes();
    scale_ = std::min(1.0, budget / (min_flows * mean));
    // Expected bytes = flows x scale x mean = budget; the fraction of a flow
    // carries over so the long-run load is exact.
    double& carry = burst ? burst_carry_ : rest_carry_;
    carry += budget / (scale_ * mean);
    left_ = static_cast<std::uint64_t>(carry);
    carry -= static_cast<double>(left_);
    position_ = 0;
    return true;
  }

  const FlowSizeCdf& cdf_;
  double rate_bps_;
  std::int64_t duration_ns_;
  BurstShape shape_;
  Rng arrivals_, sizes_;
  std::int64_t period_index_ = 0;
  bool in_burst_ = false;
  std::int64_t phase_start_ns_ = 0, phase_len_ns_ = 0;
  std::uint64_t left_ = 0;
  double position_ = 0, scale_ = 1, burst_carry_ = 0, rest_carry_ = 0;
};

class LongLived final : public ArrivalProcess {
 public:
  LongLived(std::uint32_t flows, double rate_bps, std::int64_t duration_ns, std::int64_t stagger_ns)
      : flows_(flows), duration_ns_(duration_ns), stagger_ns_(stagger_ns) {
    per_flow_bps_ = flows > 0 ? rate_bps / flows : 0;
  }

  bool next(Arrival& arrival) override {
    if (index_ >= flows_ || per_flow_bps_ <= 0) return false;
    arrival.start_ns = static_cast<std::int64_t>(index_) * stagger_ns_;
    if (arrival.start_ns >= duration_ns_) return false;
    const double seconds = static_cast<double>(duration_ns_ - arrival.start_ns) / 1e9;
    arrival.size_bytes = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(per_flow_bps_ * seconds / 8)));
    arrival.rate_bps = static_cast<std::uint64_t>(std::llround(per_flow_bps_));
    ++index_;
    return true;
  }

 private:
  std::uint32_t flows_;
  std::int64_t duration_ns_, stagger_ns_;
  double per_flow_bps_;
  std::uint32_t index_ = 0;
};

}  // namespace

std::unique_ptr<ArrivalProcess> make_consistent(const FlowSizeCdf& cdf, double rate_bps, std::int64_t duration_ns,
                                                Rng arrivals, Rng sizes) {
  return std::make_unique<Consistent>(cdf, rate_bps, duration_ns, arrivals, sizes);
}

std::unique_ptr<ArrivalProcess> make_burst(const FlowSizeCdf& cdf, double rate_bps, std::int64_t duration_ns,
                                           const BurstShape& shape, Rng arrivals, Rng sizes) {
  shape.validate();
  return std::make_unique<Burst>(cdf, rate_bps, duration_ns, shape, arrivals, sizes);
}

std::unique_ptr<ArrivalProcess> make_long_lived(std::uint32_t flows, double rate_bps, std::int64_t duration_ns,
                                                std::int64_t stagger_ns) {
  return std::make_unique<LongLived>(flows, rate_bps, duration_ns, stagger_ns);
}

}  // namespace xtk
