// The steps of an experiment: per model, one zero-load step, then every
// cross-traffic profile at every load, each with its own step directory and
// schedule seed; with repetitions, all of it again under repK/ with new seeds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiment/config.hpp"

namespace xtk {

struct StepPlan {
  std::string model;
  std::string profile;  // "none" for the zero-load step
  std::uint32_t index = 0;
  double load_share = 0;   // of the bottleneck link
  std::string dir;         // the step directory
  std::uint64_t seed = 0;  // of its schedule
  std::uint32_t repetition = 1;
  std::string executor = "netns";  // where it runs: netns, slurm or hosts (the config's executor)
};

// Each config seed owns this many step seeds: seed s's steps draw from
// s + (s - 1) * kSeedBlock on (docs/experiments.md, "What a step does").
inline constexpr std::uint64_t kSeedBlock = std::uint64_t{1} << 32;

std::vector<StepPlan> plan_steps(const ExperimentConfig& config, const std::string& experiment_dir);
// Resuming: nothing when the step's directory holds a completed run of this
// very step (a run.json "ok" that analysis reads, with its model, profile,
// load, seed and executor); else why it runs again, empty when there is
// nothing to say (never run, failed or interrupted) and otherwise what its
// record holds instead, or why analysis refuses it.
std::optional<std::string> rerun_reason(const StepPlan& step);
// Where repetition `rep` (from 1) of the experiment lives: the experiment's
// directory itself when there is one repetition, else its repK/.
std::string repetition_dir(const ExperimentConfig& config, const std::string& experiment_dir, std::uint32_t rep);

// A model profile's totals (docs/collective.md), for run.json: the name the
// tables show, P and the bytes per exchanged element.
struct ModelTotals {
  std::string name;
  double params = 0;
  double bytes_per_param = 0;
  double compute_ms = 0;  // one iteration's compute (the header's compute_ms; 0 when absent)
};
// `model` is a profile file or NAME for configs/models/NAME.csv.
ModelTotals read_model_totals(const std::string& model);

// Tools are found beside xtk-run (installed), in the build tree's tools/NAME/,
// or on PATH; $XTK_BIN_DIR overrides.
std::string find_tool(const std::string& name);

}  // namespace xtk
