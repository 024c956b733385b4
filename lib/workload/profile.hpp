// Load profiles: when flows start and how big they are, for one source.
//
// consistent  a Poisson process: exponential gaps with mean = mean size / rate.
// burst       the seed's Algorithm 2, generalised: every period starts with a
//             burst window of `width` at `height` x the mean rate; the rest of the
//             period carries the remaining bytes as a consistent phase. A phase
//             too short for its minimum flow count draws sizes from the CDF scaled
//             down to fit; starts inside a phase are Poisson given the count.
// long-lived  N flows that each run for the whole duration at load / N.
#pragma once

#include <cstdint>
#include <memory>

#include "core/random.hpp"
#include "workload/cdf.hpp"

namespace xtk {

struct BurstShape {
  std::int64_t width_ns = 1'000'000;
  std::int64_t period_ns = 0;  // 0 = 10 x width
  double height = 3.0;         // burst rate / mean rate
  std::uint32_t min_burst_flows = 2;
  std::uint32_t min_rest_flows = 8;

  std::int64_t period() const { return period_ns > 0 ? period_ns : 10 * width_ns; }
  // Share of each period's bytes that the burst window carries (3/10 by default).
  double burst_share() const;
  // Rate outside the burst windows / mean rate (0.78 by default).
  double rest_factor() const;
  void validate() const;  // throws UsageError naming the flag at fault
  // The grid's own rule (a width, and a period longer than it), for readers of a schedule too.
  static void check_grid(std::int64_t width_ns, std::int64_t period_ns);
};

struct Arrival {
  std::int64_t start_ns = 0;
  std::uint64_t size_bytes = 0;
  std::uint64_t rate_bps = 0;  // a pacing cap the profile itself sets (long-lived), else 0
};

class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;
  // Next flow in start order; false once the duration is over.
  virtual bool next(Arrival& arrival) = 0;
};

std::unique_ptr<ArrivalProcess> make_consistent(const FlowSizeCdf& cdf, double rate_bps, std::int64_t duration_ns,
                                                Rng arrivals, Rng sizes);
std::unique_ptr<ArrivalProcess> make_burst(const FlowSizeCdf& cdf, double rate_bps, std::int64_t duration_ns,
                                           const BurstShape& shape, Rng arrivals, Rng sizes);
// Each flow's size is what its cap moves in the duration; `stagger_ns` spaces the starts.
std::unique_ptr<ArrivalProcess> make_long_lived(std::uint32_t flows, double rate_bps, std::int64_t duration_ns,
                                                std::int64_t stagger_ns);

}  // namespace xtk
