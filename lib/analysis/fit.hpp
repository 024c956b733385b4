// Curve fits of iteration time against cross-traffic load, the seed's form
//
//   t(BW) = A * exp(B / (C - BW)^n)
//
// with C the bottleneck capacity and BW the measured cross-traffic load, both
// in Gbit/s (so B is in (Gbit/s)^n), by nonlinear least squares (GSL's
// trust-region Levenberg-Marquardt). n is fixed per fit: the candidates are
// 1, 1/2 and 2, the best by R^2 unless the user gives n.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace xtk::analysis {

inline constexpr double kFitExponents[] = {1.0, 0.5, 2.0};

struct ExpFit {
  double n = 0;
  double a_us = 0, a_stderr_us = 0;
  double b = 0, b_stderr = 0;  // (Gbit/s)^n
  double capacity_gbps = 0;
  double r2 = 0;  // 1 - SS_res / SS_tot of the times themselves
  std::size_t points = 0;
  std::string status;  // "ok" or why the fit failed
  bool ok() const { return status == "ok"; }
  double at(double load_gbps) const;
};

// Points with load >= capacity are left out (the model diverges there). The
// residuals are relative, (model - t) / t: iteration times spread in
// proportion to their size, so an absolute fit would only see the slowest steps.
ExpFit fit_iteration_time(const std::vector<double>& load_gbps, const std::vector<double>& time_us,
                          double capacity_gbps, double n);

// One fit per candidate n (or only `n` when given).
std::vector<ExpFit> fit_candidates(const std::vector<double>& load_gbps, const std::vector<double>& time_us,
                                   double capacity_gbps, std::optional<double> n);

// The hyperbolic rescale that linearises the plots: C / (C - BW).
double rescaled_load(double load, double capacity);

}  // namespace xtk::analysis
