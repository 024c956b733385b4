// `xtk-analyze tables`: the seed's spreadsheet, made from an experiment
// directory (docs/analysis.md explains every table and method).
//
//   1 iteration_time     per step: loads, available bandwidth, iteration-time statistics
//   2 theory             per model: P, N, D = 2(N-1)/N * P * bytes/param, zero-load time, bandwidth required
//   3 congestion_point   per model and profile: two-line method, data per iteration vs theory
//   4 bandwidth          per model and profile: ideal vs available bandwidth, spare capacity
//   5 fits               per model and profile: t = A exp(B / (C - BW)^n)
//   6 iteration_cdf      per step: CDF points;  light_heavy: ~30 % vs ~80 % across profiles;
//                        equal_load: the profiles at the heaviest load all of them reached
//   7 node_bandwidth     per step with trace bins: each training node's bandwidth
//   8 stragglers         per step with collectives files, per rank: how often last, by how much, waits
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/congestion.hpp"
#include "analysis/output.hpp"
#include "analysis/step.hpp"

namespace xtk::analysis {

struct TablesOptions {
  StepOptions step;
  CongestionOptions congestion;
  std::optional<double> fit_n;        // fixed exponent; all candidates when unset
  double light = 0.30, heavy = 0.80;  // cross-traffic levels compared, shares of capacity
  double level_window = 0.10;         // a step counts for a level within this share of it
  std::string models_file;            // configs/models/params.csv when empty
  unsigned threads = 0;               // step loading; 0 = hardware concurrency
};

// What the theory needs of a model, from its run.json files or params.csv.
struct ModelInfo {
  double params = 0, bytes_per_param = 0;
  std::string params_source;  // "run.json" or the params.csv path
  std::uint64_t ranks = 0;
  Emulation emulation;  // one for all the model's steps
  // D = 2 (N - 1) / N * P * bytes/param: what each rank of the (emulated)
  // cluster's job sends per ring all-reduce.
  double data_per_iter_bytes() const;
  // D as the testbed's job sent it: x the emulation's byte_scale.
  double testbed_data_per_iter_bytes() const { return data_per_iter_bytes() * emulation.byte_scale; }
};

struct Experiment {
  std::string dir;
  // Sorted by model, profile ("none" first), requested load, step index.
  std::vector<Step> steps;
  std::map<std::string, ModelInfo> models;
  std::vector<std::string> skipped;  // failed steps left out, with why
};

Experiment load_experiment(const std::string& dir, const TablesOptions& options);

// All tables, in the order above.
std::vector<NamedTable> make_tables(const Experiment& experiment, const TablesOptions& options);
std::vector<std::string> table_names();

}  // namespace xtk::analysis
