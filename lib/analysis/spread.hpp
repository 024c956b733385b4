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

// Runs in the order given; each is named by its directory. Throws InputError
// when two runs disagree on a model's theoretical demand (not one experiment).
std::vector<NamedTable> spread_tables(const std::vector<Experiment>& runs, const TablesOptions& options);

}  // namespace xtk::analysis
