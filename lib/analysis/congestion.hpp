// The congestion point of an iteration-time series by the seed's two-line
// method (Salamy 2022, App. A.2): a line fitted to the flat region, a line
// through the first points of the congested region (the tangent), their
// intersection, and the measured point nearest to it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace xtk::analysis {

struct Line {
  double intercept = 0, slope = 0;
  double at(double x) const { return intercept + slope * x; }
};

// Least squares through the points; one point (or all x equal) gives a
// horizontal line through their mean.
Line fit_line(const std::vector<double>& x, const std::vector<double>& y, std::size_t begin, std::size_t end);

struct CongestionOptions {
  // A step leaves the flat region when its time is above the flat line's
  // prediction by more than this share.
  double flat_tolerance = 0.05;
  std::size_t tangent_points = 2;  // first congested points the tangent goes through
};

struct CongestionPoint {
  std::string status;  // "ok", or why there is no congestion point
  std::size_t flat_points = 0, tangent_points = 0;
  Line flat, tangent;
  double intersection_x = 0;
  // The iteration time the first congested step (index flat_points) was held
  // to: the flat line at its load, or the flat steps' mean if higher. 0 when
  // every step is flat or none is.
  double first_congested_reference = 0;
  std::size_t nearest = 0;  // index of the measured point nearest the intersection (when ok)
  bool ok() const { return status == "ok"; }
};

// `x` (cross-traffic load) ascending, `y` the mean iteration time at each.
// The flat region grows from the first point while each next point is within
// the tolerance of the line fitted to the points before it, or of their mean.
CongestionPoint find_congestion_point(const std::vector<double>& x, const std::vector<double>& y,
                                      const CongestionOptions& options);

}  // namespace xtk::analysis
