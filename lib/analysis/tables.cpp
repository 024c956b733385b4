#include "analysis/tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>

#include "analysis/fit.hpp"
#include "analysis/model_params.hpp"
#include "analysis/run_dir.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"

namespace xtk::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kGiga = 1e9;
// The knee is "near the middle" between two steps when the farther lies less
// than this many times as far from it as the nearer: the middle fifth.
constexpr double kMidwayRatio = 1.5;

// The quantiles of the iteration_cdf table: every percent, and the 99.9th.
std::vector<double> cdf_quantiles() {
  std::vector<double> q;
  for (int i = 0; i <= 99; ++i) q.push_back(i / 100.0);
  q.push_back(0.999);
  q.push_back(1.0);
  return q;
}

// Zero-load steps sort first within a model: they open every profile's series.
bool step_before(const Step& a, const Step& b) {
  const auto& x = a.info;
  const auto& y = b.info;
  if (x.model != y.model) return x.model < y.model;
  const bool x_idle = x.profile == kNoCrossTraffic, y_idle = y.profile == kNoCrossTraffic;
  if (x.profile != y.profile) return x_idle != y_idle ? x_idle : x.profile < y.profile;
  if (x.load_bps != y.load_bps) return x.load_bps < y.load_bps;
  return x.step < y.step;
}

std::vector<Step> load_steps(const std::vector<StepInfo>& infos, const TablesOptions& options) {
  const std::size_t n = infos.size();
  std::vector<Step> steps(n);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        steps[i] = load_step(infos[i], options.step);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  unsigned threads = options.threads > 0 ? options.threads : std::max(1U, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, n));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  // The first failure in directory order, whatever thread met it first.
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return steps;
}

std::map<std::string, ModelInfo> resolve_models(const std::vector<Step>& steps, const TablesOptions& options) {
  std::map<std::string, ModelInfo> models;
  std::map<std::string, const StepInfo*> first_of;
  std::optional<ModelTable> table;
  for (const auto& step : steps) {
    const auto& info = step.info;
    const auto [it, inserted] = first_of.try_emplace(info.model, &info);
    const StepInfo& first = *it->second;
    auto differs = [&](std::string_view what, const auto& mine, const auto& theirs) {
      throw InputError(info.run_json, 0,
                       fmt::format("{} {} of model {} differs from {} in {}: a model's steps share one job", what, mine,
                                   info.model, theirs, first.run_json));
    };
    if (!inserted) {
      if (info.ranks != first.ranks) differs("ranks", info.ranks, first.ranks);
      if (info.params != first.params) differs("params", info.params.value_or(0), first.params.value_or(0));
      if (info.bytes_per_param != first.bytes_per_param) {
        differs("bytes_per_param", info.bytes_per_param.value_or(0), first.bytes_per_param.value_or(0));
      }
      if (!(info.emulation == first.emulation)) {
        differs("emulation", fmt::format("{} {:g}", info.emulation.method, info.emulation.link_bps),
                fmt::format("{} {:g}", first.emulation.method, first.emulation.link_bps));
      }
      continue;
    }
    ModelInfo m;
    m.ranks = info.ranks;
    m.emulation = info.emulation;
    m.params_source = "run.json";
    if (!info.params || !info.bytes_per_param) {
      if (!table) table = ModelTable::load(resolve_model_table(options.models_file));
      const ModelParams* row = table->find(info.model);
      if (row == nullptr) {
        throw InputError(info.run_json, 0,
                         fmt::format("model '{}' is not in {} and run.json gives no \"params\" and "
                                     "\"bytes_per_param\" for it",
                                     info.model, table->path()));
      }
      m.params_source = options.models_file.empty() ? "configs/models/params.csv" : options.models_file;
      m.params = static_cast<double>(row->params);
      m.bytes_per_param = row->bytes_per_param;
    }
    if (info.params) m.params = *info.params;
    if (info.bytes_per_param) m.bytes_per_param = *info.bytes_per_param;
    models.emplace(info.model, m);
  }
  return models;
}

// One model's steps of one profile, with the model's zero-load steps in
// front, sorted by measured load: the x axis of tables 3 to 5.
struct Series {
  std::string model, profile;
  std::vector<const Step*> steps;
  double capacity_bps = 0;
  std::vector<double> load_gbps() const {
    std::vector<double> x;
    for (const auto* s : steps) x.push_back(s->measured_load_bps / kGiga);
    return x;
  }
  std::vector<double> mean_us() const {
    std::vector<double> y;
    for (const auto* s : steps) y.push_back(s->mean_us);
    return y;
  }
};

std::vector<Series> make_series(const Experiment& e) {
  std::vector<Series> all;
  for (const auto& step : e.steps) {
    const auto& info = step.info;
    if (info.profile == kNoCrossTraffic) continue;
    if (all.empty() || all.back().model != info.model || all.back().profile != info.profile) {
      Series s{info.model, info.profile, {}, info.bottleneck.link_bps};
      for (const auto& idle : e.steps) {
        if (idle.info.model == info.model && idle.info.profile == kNoCrossTraffic) s.steps.push_back(&idle);
      }
      all.push_back(std::move(s));
    }
    all.back().steps.push_back(&step);
  }
  for (auto& s : all) {
    for (const auto* step : s.steps) {
      if (step->capacity_bps() != s.capacity_bps) {
        throw InputError(
            step->info.run_json, 0,
            fmt::format("bottleneck link_bps {} differs from {} in {}: the steps of {} / {} need one "
                        "capacity",
                        step->capacity_bps(), s.capacity_bps, s.steps.front()->info.run_json, s.model, s.profile));
      }
    }
    std::stable_sort(s.steps.begin(), s.steps.end(),
                     [](const Step* a, const Step* b) { return a->measured_load_bps < b->measured_load_bps; });
  }
  return all;
}

// A series' mean iteration time at measured load `load_bps` (within its
// range), between the two steps around it by the law table 5 fits, t =
// A exp(B / (C - BW)^n): ln(mean) linear in 1 / (C - BW)^n, which passes
// through both steps. ln(mean) linear in the load itself would overstate the
// time between two congested steps, where ln t is convex (by a fifth at 0.92
// of the link between steps at 0.81 and 0.93 in the demo). Steps at or above
// C fall back to that.
struct AtLoad {
  const Step* below = nullptr;
  const Step* above = nullptr;
  double mean_us = 0;
};

AtLoad at_load(const Series& s, double load_bps, double n) {
  std::size_t i = 1;
  while (i + 1 < s.steps.size() && s.steps[i]->measured_load_bps < load_bps) ++i;
  AtLoad at{s.steps[i - 1], s.steps[i], s.steps[i]->mean_us};
  const double x0 = at.below->measured_load_bps, x1 = at.above->measured_load_bps;
  if (x1 > x0 && load_bps < x1) {
    const double c = s.capacity_bps;
    const auto u = [&](double x) { return x1 < c ? std::pow(c - x, -n) : x; };
    const double f = (u(load_bps) - u(x0)) / (u(x1) - u(x0));
    at.mean_us =
        std::exp(std::log(at.below->mean_us) + f * (std::log(at.above->mean_us) - std::log(at.below->mean_us)));
  }
  return at;
}

// A model's steps at its lowest requested load (normally 0), pooled.
struct Baseline {
  double requested_bps = 0;  // the lowest requested load
  double load_bps = 0;       // measured there (mean over the steps)
  double mean_us = 0, p99_us = 0;
};

Baseline baseline(const Experiment& e, const std::string& model) {
  double lowest = std::numeric_limits<double>::infinity();
  for (const auto& s : e.steps) {
    if (s.info.model == model) lowest = std::min(lowest, s.info.load_bps);
  }
  std::vector<double> times;
  double load = 0, count = 0;
  for (const auto& s : e.steps) {
    if (s.info.model != model || s.info.load_bps != lowest) continue;
    times.insert(times.end(), s.iter_us.begin(), s.iter_us.end());
    load += s.measured_load_bps;
    count += 1;
  }
  std::sort(times.begin(), times.end());
  RunningStats stats;
  for (double t : times) stats.add(t);
  return {lowest, load / count, stats.mean(), percentile_sorted(times, 0.99)};
}

std::string relative_dir(const Experiment& e, const Step& s) {
  const auto rel = std::filesystem::path(s.info.dir).lexically_relative(e.dir).string();
  return rel.empty() ? "." : rel;
}

double pct(double share) { return share * 100; }

NamedTable iteration_time_table(const Experiment& e) {
  Table t({{"model"},
           {"profile"},
           {"step"},
           {"requested_load_gbps", 3},
           {"requested_load_pct", 1},
           {"measured_load_gbps", 3},
           {"load_source"},
           {"available_gbps", 3},
           {"rescaled_load", 3},
           {"iterations"},
           {"mean_us", 1},
           {"p50_us", 1},
           {"p99_us", 1},
           {"stdev_us", 1},
           {"cv", 4},
           {"wire_tx_bytes_per_iter", 0},
           {"tcp_retransmits_per_iter", 2},
           {"tcp_timeouts_per_iter", 2},
           {"tcp_rwnd_limited_ms_per_iter", 1},
           {"emulated_load_gbps", 3},
           {"emulated_available_gbps", 3},
           {"emulated_mean_us", 1},
           {"dir"}});
  for (const auto& s : e.steps) {
    const auto& i = s.info;
    t.add_row({i.model,
               i.profile,
               i.step,
               i.load_bps / kGiga,
               pct(i.load_bps / s.capacity_bps()),
               s.measured_load_bps / kGiga,
               std::string(to_string(s.load_source)),
               s.available_bps() / kGiga,
               s.measured_load_bps < s.capacity_bps() ? rescaled_load(s.measured_load_bps, s.capacity_bps()) : kNaN,
               static_cast<std::uint64_t>(s.iter_us.size()),
               s.mean_us,
               s.percentile_us(0.5),
               s.percentile_us(0.99),
               s.stdev_us,
               s.cv,
               s.wire_tx_bytes_per_iter,
               s.tcp_retransmits_per_iter,
               s.tcp_timeouts_per_iter,
               s.tcp_rwnd_limited_ms_per_iter,
               s.emulated_bps(s.measured_load_bps) / kGiga,
               s.emulated_bps(s.available_bps()) / kGiga,
               s.emulated_us(s.mean_us),
               relative_dir(e, s)});
  }
  return {"iteration_time", "1. Iteration time per cross-traffic step", std::move(t)};
}

NamedTable theory_table(const Experiment& e) {
  Table t({{"model"},
           {"params"},
           {"bytes_per_param", 2},
           {"params_source"},
           {"ranks"},
           {"data_per_iter_bytes", 0},
           {"measured_bytes_per_iter", 0},
           {"base_load_gbps", 3},
           {"base_mean_us", 1},
           {"required_gbps", 3},
           {"emulated_data_per_iter_bytes", 0},
           {"emulated_required_gbps", 3}});
  for (const auto& [name, m] : e.models) {
    const Baseline base = baseline(e, name);
    // The harness's own count of the bytes a rank sent, at the baseline steps.
    double bytes = 0, rows = 0;
    for (const auto& s : e.steps) {
      if (s.info.model == name && s.info.load_bps == base.requested_bps && !std::isnan(s.bytes_per_rank_iter)) {
        bytes += s.bytes_per_rank_iter;
        rows += 1;
      }
    }
    const double d = m.testbed_data_per_iter_bytes();
    const double emulated_d = m.data_per_iter_bytes();
    const double emulated_mean_us = base.mean_us / m.emulation.time_scale;
    t.add_row({name, static_cast<std::uint64_t>(std::llround(m.params)), m.bytes_per_param, m.params_source, m.ranks, d,
               rows > 0 ? bytes / rows : kNaN, base.load_bps / kGiga, base.mean_us,
               d * 8 / (base.mean_us * 1e-6) / kGiga, emulated_d, emulated_d * 8 / (emulated_mean_us * 1e-6) / kGiga});
  }
  return {"theory", "2. Theory per model: ring all-reduce data per iteration and bandwidth required", std::move(t)};
}

}  // namespace

double ModelInfo::data_per_iter_bytes() const {
  const auto n = static_cast<double>(ranks);
  return 2 * (n - 1) / n * params * bytes_per_param;
}

Experiment load_experiment(const std::string& dir, const TablesOptions& options) {
  Experiment e;
  e.dir = dir;
  std::vector<StepInfo> infos;
  for (const auto& d : find_step_dirs(dir)) {
    auto info = read_step_info(d);
    if (info.failed) {
      e.skipped.push_back(fmt::format("{}: the step failed ({})", info.run_json, info.error));
      continue;
    }
    infos.push_back(std::move(info));
  }
  if (infos.empty()) throw Error(fmt::format("{}: every step failed; nothing to tabulate", dir));
  for (std::size_t i = 0; i < infos.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const auto &a = infos[i], &b = infos[j];
      if (a.model == b.model && a.profile == b.profile && a.step == b.step) {
        // xtk-run's repetitions repeat every series, each under its repK/.
        const bool repetitions = repetition_dirs(dir).size() > 1;
        throw InputError(
            a.run_json, 0,
            fmt::format("step {} of {} / {} is also {}: each step of a series has its own index{}", a.step, a.model,
                        a.profile, b.run_json,
                        repetitions ? fmt::format(" (each repetition is an experiment of its own: give {}/rep1, "
                                                  "then {}/rep2, ...; xtk-analyze spread {} reads them all)",
                                                  dir, dir, dir)
                                    : ""));
      }
    }
  }
  e.steps = load_steps(infos, options);
  std::sort(e.steps.begin(), e.steps.end(), step_before);
  e.models = resolve_models(e.steps, options);
  return e;
}

std::vector<std::string> table_names() {
  return {"iteration_time", "theory",      "congestion_point", "bandwidth",      "fits",
          "iteration_cdf",  "light_heavy", "equal_load",       "node_bandwidth", "stragglers"};
}

std::vector<NamedTable> make_tables(const Experiment& e, const TablesOptions& options) {
  std::vector<NamedTable> tables;
  tables.push_back(iteration_time_table(e));
  tables.push_back(theory_table(e));
  const auto series = make_series(e);

  Table congestion({{"model"},
                    {"profile"},
                    {"status"},
                    {"flat_points"},
                    {"tangent_points"},
                    {"first_congested_p50_pct", 1},
                    {"intersection_load_gbps", 3},
                    {"step", 0},
                    {"load_gbps", 3},
                    {"available_gbps", 3},
                    {"payload_share", 4},
                    {"available_payload_gbps", 3},
                    {"mean_us", 1},
                    {"data_per_iter_bytes", 0},
                    {"theory_bytes", 0},
                    {"diff_pct", 1},
                    {"intersection_data_per_iter_bytes", 0},
                    {"intersection_diff_pct", 1},
                    {"emulated_load_gbps", 3},
                    {"emulated_available_gbps", 3},
                    {"emulated_data_per_iter_bytes", 0},
                    {"emulated_theory_bytes", 0}});
  Table bandwidth({{"model"},
                   {"profile"},
                   {"step"},
                   {"load_gbps", 3},
                   {"available_gbps", 3},
                   {"available_payload_gbps", 3},
                   {"mean_us", 1},
                   {"ideal_gbps", 3},
                   {"spare_gbps", 3},
                   {"utilisation_pct", 1},
                   {"saturated_steps"},
                   {"mean_spare_gbps", 3},
                   {"emulated_available_gbps", 3},
                   {"emulated_ideal_gbps", 3}});
  Table fits({{"model"},
              {"profile"},
              {"n", 2},
              {"a_us", 1},
              {"a_stderr_us", 1},
              {"b_gbps_pow_n", 4},
              {"b_stderr", 4},
              {"c_gbps", 3},
              {"r2", 4},
              {"points"},
              {"best"},
              {"status"}});
  std::vector<std::string> congestion_notes;
  std::map<std::pair<std::string, std::string>, double> best_n;  // (model, profile): the best fit's n
  for (const auto& s : series) {
    const ModelInfo& model = e.models.at(s.model);
    const double d = model.testbed_data_per_iter_bytes();
    const double emulated_d = model.data_per_iter_bytes();
    const auto x = s.load_gbps();
    const auto y = s.mean_us();

    const auto cp = find_congestion_point(x, y, options.congestion);
    // The first congested step's median against what its mean was held to:
    // under the tolerance, a few long iterations (a retransmission timeout,
    // say) lifted the mean alone and ended the flat region there.
    const double first_congested_p50_pct =
        cp.first_congested_reference > 0
            ? pct(s.steps[cp.flat_points]->percentile_us(0.5) / cp.first_congested_reference - 1)
            : kNaN;
    // What the method found, then the point's figures (nan without one).
    std::vector<Cell> row{s.model,
                          s.profile,
                          cp.status,
                          static_cast<std::uint64_t>(cp.flat_points),
                          static_cast<std::uint64_t>(cp.tangent_points),
                          first_congested_p50_pct};
    auto data_at = [](const Step& step) { return step.available_payload_bps() / 8 * step.mean_us * 1e-6; };
    if (cp.ok()) {
      const Step& at = *s.steps[cp.nearest];
      const double data = data_at(at);
      const double emulated_data = at.emulated_bps(at.available_payload_bps()) / 8 * at.emulated_us(at.mean_us) * 1e-6;
      // The same quantity at the knee itself, where the iteration is the flat
      // line's: free of where the grid's steps happen to fall around it.
      const double knee_data =
          at.available_payload_bps_at(cp.intersection_x * kGiga) / 8 * cp.flat.at(cp.intersection_x) * 1e-6;
      row.insert(row.end(), {cp.intersection_x, static_cast<double>(at.info.step), x[cp.nearest],
                             at.available_bps() / kGiga, at.info.bottleneck.payload_share,
                             at.available_payload_bps() / kGiga, at.mean_us, data, d, pct((data - d) / d), knee_data,
                             pct((knee_data - d) / d), at.emulated_bps(at.measured_load_bps) / kGiga,
                             at.emulated_bps(at.available_bps()) / kGiga, emulated_data, emulated_d});
      // The step on the knee's other side. When the knee lies in the middle
      // fifth between the two, which one the seed's rule reads is chance from
      // run to run, and the reading jumps with it: the note gives both.
      const std::size_t other = x[cp.nearest] <= cp.intersection_x ? cp.nearest + 1 : cp.nearest - 1;
      const double near = std::fabs(x[cp.nearest] - cp.intersection_x);
      if (other < x.size() && std::fabs(x[other] - cp.intersection_x) < kMidwayRatio * near) {
        const Step& alt = *s.steps[other];
        congestion_notes.push_back(fmt::format(
            "{} {}: the knee ({:.3f} Gbit/s) lies near the middle between the steps at {:.3f} and {:.3f} Gbit/s, so "
            "which one the seed's rule reads can change from run to run: data per iteration is {:.2f} times D at the "
            "step it reads ({:.3f}), {:.2f} at the other, {:.2f} at the knee (intersection_diff_pct)",
            s.model, s.profile, cp.intersection_x, std::min(x[cp.nearest], x[other]), std::max(x[cp.nearest], x[other]),
            data / d, x[cp.nearest], data_at(alt) / d, knee_data / d));
      }
    } else {
      row.insert(row.end(), {kNaN, kNaN, kNaN, kNaN, s.steps.front()->info.bottleneck.payload_share, kNaN, kNaN, kNaN,
                             d, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, emulated_d});
    }
    congestion.add_row(std::move(row));
    const double tolerance_pct = pct(options.congestion.flat_tolerance);
    if (first_congested_p50_pct < tolerance_pct) {
      const Step& first = *s.steps[cp.flat_points];
      const double timeouts = first.tcp_timeouts_per_iter * static_cast<double>(first.iter_us.size());
      congestion_notes.push_back(fmt::format(
          "{} {}: the step at {:.3f} Gbit/s ended the flat region by its mean alone: its median is {:.1f} % up, "
          "under the {:.0f} % tolerance, so its longest iterations decided it, and by medians the point may lie "
          "a step later (iteration_cdf shows the step's spread){}",
          s.model, s.profile, x[cp.flat_points], first_congested_p50_pct, tolerance_pct,
          timeouts >= 0.5 ? fmt::format("; its iterations had {:.0f} TCP retransmission timeout{} (table 1)", timeouts,
                                        timeouts >= 1.5 ? "s" : "")
                          : ""));
    }

    // The most congested step, and the spare capacity from the congestion point on.
    const Step& worst = *s.steps.back();
    auto ideal_bps = [&](const Step& step) { return d * 8 / (step.mean_us * 1e-6); };
    std::uint64_t saturated = 0;
    double spare = 0;
    if (cp.ok()) {
      for (std::size_t i = cp.nearest; i < s.steps.size(); ++i) {
        spare += s.steps[i]->available_payload_bps() - ideal_bps(*s.steps[i]);
        ++saturated;
      }
    }
    bandwidth.add_row({s.model, s.profile, worst.info.step, worst.measured_load_bps / kGiga,
                       worst.available_bps() / kGiga, worst.available_payload_bps() / kGiga, worst.mean_us,
                       ideal_bps(worst) / kGiga, (worst.available_payload_bps() - ideal_bps(worst)) / kGiga,
                       pct(ideal_bps(worst) / worst.available_payload_bps()), saturated,
                       saturated > 0 ? spare / static_cast<double>(saturated) / kGiga : kNaN,
                       worst.emulated_bps(worst.available_bps()) / kGiga,
                       worst.emulated_bps(ideal_bps(worst)) / kGiga});

    const auto candidates = fit_candidates(x, y, s.capacity_bps / kGiga, options.fit_n);
    const ExpFit* best = nullptr;
    for (const auto& f : candidates) {
      if (f.ok() && (best == nullptr || f.r2 > best->r2)) best = &f;
    }
    best_n[{s.model, s.profile}] = best != nullptr ? best->n : 1.0;
    for (const auto& f : candidates) {
      fits.add_row({s.model, s.profile, f.n, f.a_us, f.a_stderr_us, f.b, f.b_stderr, f.capacity_gbps, f.r2,
                    static_cast<std::uint64_t>(f.points), std::string(&f == best ? "yes" : "no"), f.status});
    }
  }
  tables.push_back({"congestion_point", "3. Congestion point per model and profile (two-line method)",
                    std::move(congestion), false, std::move(congestion_notes)});
  tables.push_back({"bandwidth", "4. Ideal vs available bandwidth at the most congested step", std::move(bandwidth)});
  tables.push_back({"fits", "5. Fits t = A exp(B / (C - BW)^n)", std::move(fits)});

  Table cdf({{"model"}, {"profile"}, {"step"}, {"requested_load_pct", 1}, {"quantile", 3}, {"iter_us", 1}});
  const auto quantiles = cdf_quantiles();
  for (const auto& s : e.steps) {
    for (double q : quantiles) {
      cdf.add_row(
          {s.info.model, s.info.profile, s.info.step, pct(s.info.load_bps / s.capacity_bps()), q, s.percentile_us(q)});
    }
  }
  tables.push_back({"iteration_cdf", "6a. Iteration-time CDF per step", std::move(cdf), /*bulky=*/true});

  Table levels({{"model"},
                {"level"},
                {"target_pct", 0},
                {"profile"},
                {"step"},
                {"requested_load_pct", 1},
                {"measured_load_gbps", 3},
                {"mean_us", 1},
                {"p50_us", 1},
                {"p99_us", 1},
                {"mean_slowdown", 3},
                {"p99_slowdown", 3}});
  for (const auto& [name, model] : e.models) {
    const Baseline base = baseline(e, name);
    for (const auto& [level, target] :
         {std::pair<std::string, double>{"light", options.light}, {"heavy", options.heavy}}) {
      for (const auto& s : series) {
        if (s.model != name) continue;
        const Step* nearest = nullptr;
        double distance = options.level_window;
        for (const auto* step : s.steps) {
          if (step->info.profile == kNoCrossTraffic) continue;
          const double d = std::fabs(step->info.load_bps / step->capacity_bps() - target);
          if (d <= distance) {
            distance = d;
            nearest = step;
          }
        }
        if (nearest == nullptr) continue;
        levels.add_row({name, level, pct(target), s.profile, nearest->info.step,
                        pct(nearest->info.load_bps / nearest->capacity_bps()), nearest->measured_load_bps / kGiga,
                        nearest->mean_us, nearest->percentile_us(0.5), nearest->percentile_us(0.99),
                        nearest->mean_us / base.mean_us, nearest->percentile_us(0.99) / base.p99_us});
      }
    }
  }
  tables.push_back({"light_heavy", "6b. Light vs heavy cross traffic across profiles", std::move(levels)});

  Table equal({{"model"},
               {"load_gbps", 3},
               {"emulated_load_gbps", 3},
               {"profile"},
               {"between_steps"},
               {"mean_us", 1},
               {"mean_slowdown", 3}});
  for (const auto& [name, model] : e.models) {
    const Baseline base = baseline(e, name);
    // The heaviest load every profile reached: requested loads are not what got through.
    double load = std::numeric_limits<double>::infinity();
    for (const auto& s : series) {
      if (s.model == name) load = std::min(load, s.steps.back()->measured_load_bps);
    }
    for (const auto& s : series) {
      if (s.model != name || !(load > 0) || s.steps.size() < 2) continue;
      const auto at = at_load(s, load, best_n.at({s.model, s.profile}));
      const Step& reference = *s.steps.back();
      equal.add_row({name, load / kGiga, reference.emulated_bps(load) / kGiga, s.profile,
                     fmt::format("{}-{}", at.below->info.step, at.above->info.step), at.mean_us,
                     at.mean_us / base.mean_us});
    }
  }
  tables.push_back({"equal_load", "6c. Profiles compared at the heaviest load all of them reached", std::move(equal)});

  Table nodes({{"model"},
               {"profile"},
               {"step"},
               {"requested_load_pct", 1},
               {"node"},
               {"shares_bottleneck"},
               {"train_tx_gbps", 3},
               {"train_rx_gbps", 3},
               {"train_tx_p99_gbps", 3},
               {"cross_gbps", 3}});
  for (const auto& s : e.steps) {
    for (const auto& n : s.nodes) {
      nodes.add_row({s.info.model, s.info.profile, s.info.step, pct(s.info.load_bps / s.capacity_bps()), n.node,
                     n.shares_bottleneck, n.train_tx_bps / kGiga, n.train_rx_bps / kGiga, n.train_tx_p99_bps / kGiga,
                     n.cross_bps / kGiga});
    }
  }
  tables.push_back({"node_bandwidth", "7. Per-node bandwidth during the iterations (trace bins)", std::move(nodes)});

  // The step's measured load beside the arrivals: a slow network or a slow rank.
  Table stragglers(straggler_columns(
      {{"model"}, {"profile"}, {"step"}, {"requested_load_pct", 1}, {"measured_load_pct", 1}, {"load_source"}}));
  for (const auto& s : e.steps) {
    if (!s.stragglers) continue;
    add_straggler_rows(stragglers,
                       {s.info.model, s.info.profile, s.info.step, pct(s.info.load_bps / s.capacity_bps()),
                        pct(s.measured_load_bps / s.capacity_bps()), std::string(to_string(s.load_source))},
                       *s.stragglers);
  }
  tables.push_back({"stragglers", kStragglerTableTitle, std::move(stragglers)});
  return tables;
}

}  // namespace xtk::analysis
