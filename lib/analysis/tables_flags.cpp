#include "analysis/tables_flags.hpp"

#include <CLI/CLI.hpp>

#include "analysis/fit.hpp"
#include "analysis/run_dir.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/cli.hpp"
#include "core/units.hpp"

namespace xtk::analysis {
namespace {

double parse_fit_n(const std::string& text) {
  if (text == "auto") return 0;
  for (double n : kFitExponents) {
    if (text == fmt::format("{:g}", n) || (n == 0.5 && text == "1/2")) return n;
  }
  throw UsageError(fmt::format("--fit-n: '{}' is not auto, 1, 0.5 or 2", text));
}

void add_method_flags(CLI::App& app, MethodFlags& f) {
  app.add_option("--warmup", f.warmup, "iterations dropped from the start of each rank")->capture_default_str();
  app.add_option("--flat-tolerance", f.flat_tolerance,
                 "congestion point: a step leaves the flat region this far above the flat line")
      ->capture_default_str();
  app.add_option("--tangent-points", f.tangent_points,
                 "congestion point: congested steps the tangent goes through at least (more while they span less "
                 "than half the median load step, or the line falls or meets the flat line inside the flat region)")
      ->capture_default_str();
  app.add_option("--models", f.models, "model table (default configs/models/params.csv)");
}

void add_method_arguments(Arguments& a, const MethodFlags& f) {
  const MethodFlags d;
  a.option("--warmup", f.warmup, d.warmup)
      .option("--flat-tolerance", f.flat_tolerance, d.flat_tolerance)
      .option("--tangent-points", f.tangent_points, d.tangent_points)
      .option("--models", f.models, d.models);
}

TablesOptions method_options(const MethodFlags& f) {
  TablesOptions options;
  options.step.warmup = f.warmup;
  options.congestion.flat_tolerance = parse_flag("--flat-tolerance", f.flat_tolerance, parse_share);
  if (f.tangent_points < 2) throw UsageError("--tangent-points: a tangent needs 2 points or more");
  options.congestion.tangent_points = f.tangent_points;
  options.models_file = f.models;
  return options;
}

}  // namespace

void add_flags(CLI::App& app, TablesFlags& f) {
  app.add_option("experiment", f.dir,
                 "experiment directory: every directory at or below it holding a run.json is a step")
      ->required();
  add_flags(app, f.out);
  app.add_option("--table", f.only,
                 "only these tables (repeat or comma-separate): " + fmt::format("{}", fmt::join(table_names(), ", ")))
      ->delimiter(',');
  add_method_flags(app, f.method);
  app.add_option("--fit-n", f.fit_n, "fit exponent n: auto (best R^2 of 1, 0.5, 2) or one of them")
      ->capture_default_str();
  app.add_option("--light", f.light, "light cross-traffic level (share of the bottleneck)")->capture_default_str();
  app.add_option("--heavy", f.heavy, "heavy cross-traffic level")->capture_default_str();
}

std::vector<std::string> to_arguments(const TablesFlags& f) {
  const TablesFlags d;
  Arguments a;
  a.word("tables").word(f.dir);
  add_arguments(a, f.out);
  a.each("--table", f.only);
  add_method_arguments(a, f.method);
  return a.option("--fit-n", f.fit_n, d.fit_n)
      .option("--light", f.light, d.light)
      .option("--heavy", f.heavy, d.heavy)
      .list();
}

TablesOptions to_options(const TablesFlags& f) {
  TablesOptions options = method_options(f.method);
  if (const double n = parse_fit_n(f.fit_n); n > 0) options.fit_n = n;
  options.light = parse_flag("--light", f.light, parse_share);
  options.heavy = parse_flag("--heavy", f.heavy, parse_share);
  const auto names = table_names();
  for (const auto& name : f.only) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw UsageError(fmt::format("--table: no table '{}' (tables: {})", name, fmt::join(names, ", ")));
    }
  }
  return options;
}

void add_flags(CLI::App& app, SpreadFlags& f) {
  app.add_option("runs", f.dirs,
                 "two or more runs of one experiment, each an experiment directory (an experiment's repK/, or "
                 "runs with other seeds) or the tables a run's `xtk-analyze tables -o DIR` wrote; or one "
                 "experiment of repetitions, for all its repK/")
      ->required();
  add_flags(app, f.out);
  add_method_flags(app, f.method);
}

std::vector<std::string> to_arguments(const SpreadFlags& f) {
  Arguments a;
  a.word("spread");
  for (const auto& dir : f.dirs) a.word(dir);
  add_arguments(a, f.out);
  add_method_arguments(a, f.method);
  return a.list();
}

TablesOptions to_options(const SpreadFlags& f) { return method_options(f.method); }

std::vector<std::string> spread_runs(const SpreadFlags& f) {
  if (f.dirs.size() == 1) {
    if (auto repetitions = repetition_dirs(f.dirs.front()); repetitions.size() > 1) return repetitions;
  }
  if (f.dirs.size() < 2) {
    throw UsageError(
        fmt::format("spread: one run given, and {0} holds no repetitions ({0}/rep1, {0}/rep2, ...); "
                    "give two runs or more (one run's point is table 3 of xtk-analyze tables {0})",
                    f.dirs.empty() ? std::string("DIR") : f.dirs.front()));
  }
  return f.dirs;
}

}  // namespace xtk::analysis
