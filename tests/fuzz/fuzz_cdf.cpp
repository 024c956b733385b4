// libFuzzer target: FlowSizeCdf::parse on arbitrary bytes.
//
// Bad input must end in xtk::Error (InputError); anything else that escapes,
// a sanitizer report, or an accepted table that breaks the invariants below
// is a bug. Run through scripts/fuzz.sh.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "core/random.hpp"
#include "workload/cdf.hpp"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// Room for rounding: interpolation and the mean's sum may land a few ulps
// outside the exact bounds; anything beyond this is a real violation.
bool within(double value, double lo, double hi) {
  const double slack = 1e-9 * std::fmax(1.0, std::fmax(std::fabs(lo), std::fabs(hi)));
  return value >= lo - slack && value <= hi + slack;
}

void check_invariants(const xtk::FlowSizeCdf& cdf) {
  const auto& points = cdf.points();
  check(!points.empty());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    check(std::isfinite(p.size_bytes) && p.size_bytes >= 0);
    check(std::isfinite(p.probability) && p.probability >= 0 && p.probability <= 1);
    if (i > 0) {
      check(p.size_bytes >= points[i - 1].size_bytes);
      check(p.probability >= points[i - 1].probability);
    }
  }
  check(points.back().probability == 1.0);

  const double min = cdf.min_bytes();
  const double max = cdf.max_bytes();
  check(std::isfinite(min) && std::isfinite(max) && min >= 0 && min <= max && max > 0);
  const double mean = cdf.mean_bytes();
  check(std::isfinite(mean));
  check(within(mean, min, max));

  double previous = 0;
  for (double u : {0.0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999, 1.0}) {
    const double q = cdf.quantile(u);
    check(std::isfinite(q));
    check(within(q, 0.0, max));
    check(q >= previous - 1e-9 * std::fmax(1.0, previous));  // monotone in u
    previous = std::fmax(previous, q);
    const double c = cdf.cdf_at(q);
    check(std::isfinite(c) && c >= 0 && c <= 1);
  }

  xtk::Rng rng(1);
  for (int i = 0; i < 16; ++i) {
    const std::uint64_t size = cdf.sample(rng);
    check(size >= 1);
    check(static_cast<double>(size) <= std::fmax(1.0, std::round(max) * (1 + 1e-9)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const auto cdf = xtk::FlowSizeCdf::parse(in, "fuzz", "fuzz");
    check_invariants(cdf);
  } catch (const xtk::Error&) {
    // Rejected input: the expected outcome for most bytes.
  }
  return 0;
}
