#include "analysis/congestion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace xtk::analysis {

Line fit_line(const std::vector<double>& x, const std::vector<double>& y, std::size_t begin, std::size_t end) {
  const auto n = static_cast<double>(end - begin);
  double mx = 0, my = 0;
  for (std::size_t i = begin; i < end; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = begin; i < end; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  Line line;
  line.slope = sxx > 0 ? sxy / sxx : 0.0;
  line.intercept = my - line.slope * mx;
  return line;
}

CongestionPoint find_congestion_point(const std::vector<double>& x, const std::vector<double>& y,
                                      const CongestionOptions& options) {
  CongestionPoint cp;
  const std::size_t n = x.size();
  if (n < 3) {
    cp.status = fmt::format("too few steps ({}; the method needs 3 or more)", n);
    return cp;
  }
  // A line through a few noisy flat points can tilt down steeply; their mean
  // cannot. A step must clear both to count as congested, so neither a tilted
  // extrapolation nor a gently rising flat region ends the region early.
  std::size_t flat = 1;
  double sum = y[0];
  for (; flat < n; ++flat) {
    cp.flat = fit_line(x, y, 0, flat);
    const double reference = std::max(cp.flat.at(x[flat]), sum / static_cast<double>(flat));
    if (y[flat] > reference * (1 + options.flat_tolerance)) {
      cp.first_congested_reference = reference;
      break;
    }
    sum += y[flat];
  }
  cp.flat = fit_line(x, y, 0, flat);
  cp.flat_points = flat;
  if (flat == 1) {
    cp.status = fmt::format("no flat region: the second step is more than {:g} % above the first",
                            options.flat_tolerance * 100);
    return cp;
  }
  if (flat == n) {
    cp.status = fmt::format("not reached: every step is within {:g} % of the flat line", options.flat_tolerance * 100);
    return cp;
  }
  cp.tangent_points = std::min(options.tangent_points, n - flat);
  // Measured loads scatter around the requested ones: two congested steps at
  // nearly one load give no slope. The tangent takes the next steps too until
  // it spans half the series' median step.
  std::vector<double> gaps;
  for (std::size_t i = 1; i < n; ++i) gaps.push_back(x[i] - x[i - 1]);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  const double min_span = gaps[gaps.size() / 2] / 2;
  while (flat + cp.tangent_points < n && x[flat + cp.tangent_points - 1] - x[flat] < min_span) ++cp.tangent_points;
  if (cp.tangent_points < 2) {
    cp.status = "only the last step is congested: a tangent needs 2 points";
    return cp;
  }
  // The first congested step lies above the flat line by more than the
  // tolerance, so the knee is past the flat region. A tangent that falls, or
  // meets the flat line far back inside that region (two noisy congested
  // steps at about one time), takes the next congested step too, while there
  // is one.
  const double earliest = x[flat - 1] - 2 * min_span;
  bool rises = false;
  while (true) {
    cp.tangent = fit_line(x, y, flat, flat + cp.tangent_points);
    rises = cp.tangent.slope > cp.flat.slope;
    if (rises) cp.intersection_x = (cp.flat.intercept - cp.tangent.intercept) / (cp.tangent.slope - cp.flat.slope);
    if ((rises && cp.intersection_x >= earliest) || flat + cp.tangent_points == n) break;
    ++cp.tangent_points;
  }
  if (!rises) {
    cp.status = "the congested steps do not rise faster than the flat line";
    return cp;
  }
  // Even through every congested step the line is barely steeper than the
  // flat one: a curve that only bends, with no knee to report.
  if (cp.intersection_x < earliest) {
    cp.status = fmt::format(
        "the congested steps rise too gently: their line meets the flat line at {:.3g}; inside the flat region "
        "(up to {:.3g})",
        cp.intersection_x, x[flat - 1]);
    return cp;
  }
  for (std::size_t i = 1; i < n; ++i) {
    if (std::fabs(x[i] - cp.intersection_x) < std::fabs(x[cp.nearest] - cp.intersection_x)) cp.nearest = i;
  }
  cp.status = "ok";
  return cp;
}

}  // namespace xtk::analysis
