#include "analysis/fit.hpp"

#include <fmt/format.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>

namespace xtk::analysis {
namespace {

// The model in the fitted parameters x = (ln A, B) of the variable
// u = (C - BW)^-n: t = exp(ln A + B u). ln A keeps A positive and puts both
// parameters on comparable scales.
struct Points {
  std::vector<double> u, t;
};

int relative_residuals(const gsl_vector* x, void* data, gsl_vector* f) {
  const auto& p = *static_cast<const Points*>(data);
  const double ln_a = gsl_vector_get(x, 0), b = gsl_vector_get(x, 1);
  for (std::size_t i = 0; i < p.u.size(); ++i) gsl_vector_set(f, i, std::exp(ln_a + b * p.u[i]) / p.t[i] - 1);
  return GSL_SUCCESS;
}

int relative_jacobian(const gsl_vector* x, void* data, gsl_matrix* jacobian) {
  const auto& p = *static_cast<const Points*>(data);
  const double ln_a = gsl_vector_get(x, 0), b = gsl_vector_get(x, 1);
  for (std::size_t i = 0; i < p.u.size(); ++i) {
    const double model = std::exp(ln_a + b * p.u[i]) / p.t[i];
    gsl_matrix_set(jacobian, i, 0, model);
    gsl_matrix_set(jacobian, i, 1, p.u[i] * model);
  }
  return GSL_SUCCESS;
}

// GSL's default handler aborts the process on an error; xtk checks statuses.
void quiet_gsl() {
  static std::once_flag once;
  std::call_once(once, [] { gsl_set_error_handler_off(); });
}

using Workspace = std::unique_ptr<gsl_multifit_nlinear_workspace, decltype(&gsl_multifit_nlinear_free)>;
using Matrix = std::unique_ptr<gsl_matrix, decltype(&gsl_matrix_free)>;

}  // namespace

double ExpFit::at(double load_gbps) const { return a_us * std::exp(b / std::pow(capacity_gbps - load_gbps, n)); }

double rescaled_load(double load, double capacity) { return capacity / (capacity - load); }

ExpFit fit_iteration_time(const std::vector<double>& load_gbps, const std::vector<double>& time_us,
                          double capacity_gbps, double n) {
  quiet_gsl();
  ExpFit fit;
  fit.n = n;
  fit.capacity_gbps = capacity_gbps;
  Points p;
  for (std::size_t i = 0; i < load_gbps.size(); ++i) {
    if (load_gbps[i] >= capacity_gbps || !(time_us[i] > 0)) continue;
    p.u.push_back(std::pow(capacity_gbps - load_gbps[i], -n));
    p.t.push_back(time_us[i]);
  }
  fit.points = p.u.size();
  const double nan = std::nan("");
  fit.a_us = fit.a_stderr_us = fit.b = fit.b_stderr = fit.r2 = nan;
  if (fit.points < 3) {
    fit.status = fmt::format("too few points below capacity ({}; a fit needs 3)", fit.points);
    return fit;
  }

  // Start from the exact linearisation ln t = ln A + B u (least squares).
  double mu = 0, ml = 0;
  for (std::size_t i = 0; i < fit.points; ++i) {
    mu += p.u[i];
    ml += std::log(p.t[i]);
  }
  mu /= static_cast<double>(fit.points);
  ml /= static_cast<double>(fit.points);
  double suu = 0, sul = 0;
  for (std::size_t i = 0; i < fit.points; ++i) {
    suu += (p.u[i] - mu) * (p.u[i] - mu);
    sul += (p.u[i] - mu) * (std::log(p.t[i]) - ml);
  }
  if (std::all_of(p.u.begin(), p.u.end(), [&](double u) { return u == p.u.front(); })) {
    fit.status = "all points at one load: nothing to fit";
    return fit;
  }
  double start[2] = {ml - sul / suu * mu, sul / suu};

  gsl_multifit_nlinear_fdf fdf{};
  fdf.f = relative_residuals;
  fdf.df = relative_jacobian;
  fdf.fvv = nullptr;
  fdf.n = fit.points;
  fdf.p = 2;
  fdf.params = &p;
  auto parameters = gsl_multifit_nlinear_default_parameters();
  Workspace w(gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &parameters, fit.points, 2),
              &gsl_multifit_nlinear_free);
  gsl_vector_view x0 = gsl_vector_view_array(start, 2);
  int info = 0;
  int status = gsl_multifit_nlinear_init(&x0.vector, &fdf, w.get());
  if (status == GSL_SUCCESS) {
    status = gsl_multifit_nlinear_driver(500, 1e-12, 1e-12, 1e-12, nullptr, nullptr, &info, w.get());
  }
  const gsl_vector* x = gsl_multifit_nlinear_position(w.get());
  const double ln_a = gsl_vector_get(x, 0), b = gsl_vector_get(x, 1);
  if (status != GSL_SUCCESS || !std::isfinite(ln_a) || !std::isfinite(b)) {
    fit.status = fmt::format("did not converge ({})", gsl_strerror(status));
    return fit;
  }
  fit.a_us = std::exp(ln_a);
  fit.b = b;

  // Standard errors from the covariance at the optimum, scaled by the
  // residual variance (chi^2 / degrees of freedom).
  Matrix covariance(gsl_matrix_alloc(2, 2), &gsl_matrix_free);
  gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w.get()), 0.0, covariance.get());
  double chi2 = 0;
  gsl_blas_ddot(gsl_multifit_nlinear_residual(w.get()), gsl_multifit_nlinear_residual(w.get()), &chi2);
  const double scale = chi2 / static_cast<double>(fit.points - 2);
  fit.a_stderr_us = fit.a_us * std::sqrt(gsl_matrix_get(covariance.get(), 0, 0) * scale);
  fit.b_stderr = std::sqrt(gsl_matrix_get(covariance.get(), 1, 1) * scale);

  double mean = 0;
  for (double t : p.t) mean += t;
  mean /= static_cast<double>(fit.points);
  double ss_res = 0, ss_tot = 0;
  for (std::size_t i = 0; i < fit.points; ++i) {
    const double model = fit.a_us * std::exp(fit.b * p.u[i]);
    ss_res += (model - p.t[i]) * (model - p.t[i]);
    ss_tot += (p.t[i] - mean) * (p.t[i] - mean);
  }
  fit.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : nan;
  fit.status = "ok";
  return fit;
}

std::vector<ExpFit> fit_candidates(const std::vector<double>& load_gbps, const std::vector<double>& time_us,
                                   double capacity_gbps, std::optional<double> n) {
  std::vector<ExpFit> fits;
  if (n) {
    fits.push_back(fit_iteration_time(load_gbps, time_us, capacity_gbps, *n));
  } else {
    for (double candidate : kFitExponents)
      fits.push_back(fit_iteration_time(load_gbps, time_us, capacity_gbps, candidate));
  }
  return fits;
}

}  // namespace xtk::analysis
