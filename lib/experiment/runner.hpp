// xtk-run: every step of an experiment in turn on one executor, resumable and
// interrupt-safe, then the analysis tables over the experiment directory.
#pragma once

#include <atomic>
#include <ostream>
#include <string>

#include "experiment/config.hpp"

namespace xtk {

struct RunOptions {
  std::string out;      // overrides the config's experiment directory
  bool fresh = false;   // run every step again, even completed ones
  bool analyze = true;  // xtk-analyze tables (and plots) at the end
  bool progress = true;
};

// Returns the process exit status: 0 all steps ok, 1 some step failed, 130 interrupted.
int run_experiment(const ExperimentConfig& config, const RunOptions& options, const std::atomic<bool>& interrupt,
                   std::ostream& out);

}  // namespace xtk
