// `xtk-analyze spread`: table 3 (the congestion point) over several runs of
// one experiment, such as an experiment's repetitions or runs with other
// seeds. Each step's schedule is one draw of the cross traffic, with its own
// surges, so one run gives one draw of each series' congestion point; what a
// paper reports is their median and range (docs/analysis.md, "Spread over
// runs").
//
//   congestion_point_runs    per run, model and profile: table 3's point
//   congestion_point_spread  per model and profile: median, least and most over the runs
#pragma once

#include <string>
#include <vector>

#include "analysis/output.hpp"
#include "analysis/tables.hpp"

namespace xtk::analysis {

// One run's table 3 (congestion_point), named by the run's directory.
struct RunPoints {
  std::string run;
  Table congestion_point;
};
// From the run's step directories, with `options`' method.
RunPoints run_points(const Experiment& run, const TablesOptions& options);
// From the congestion_point.csv that `xtk-analyze tables -o DIR` wrote in
// `tables_dir` (a run whose step data stayed elsewhere: a cluster's scratch,
// a device): its points as that run's tables computed them. Throws
// InputError naming the file and line.
RunPoints read_run_points(const std::string& tables_dir);
// The same from the file's `content`, read from `path`, for the run named `run`.
RunPoints parse_run_points(const std::string& content, const std::string& path, const std::string& run);
// Whether `dir` is such a directory of tables rather than a run.
bool is_tables_dir(const std::string& dir);

// Runs in the order given. Throws InputError when two runs disagree on a
// model's theoretical demand (not one experiment).
std::vector<NamedTable> spread_tables(const std::vector<RunPoints>& runs);

}  // namespace xtk::analysis
