// One step of an experiment: the training job at one cross-traffic level,
// with every role started on its host, stopped cleanly, and described by the
// step's run.json (docs/run-directory.md), written last: a step directory
// without one was interrupted, and one with "status": "failed" names the role
// that failed; resume runs both again.
#pragma once

#include <atomic>
#include <string>

#include <nlohmann/json.hpp>

#include "experiment/config.hpp"
#include "experiment/executor.hpp"
#include "experiment/plan.hpp"

namespace xtk {

struct StepOutcome {
  bool ok = false;
  bool interrupted = false;
  std::string error;  // which role failed, with its log's last lines
  double seconds = 0;
};

// `provenance` (provenance.hpp: the build and the hosts) goes into the step's
// run.json, with the NCCL and CUDA versions its ranks report.
StepOutcome run_step(const ExperimentConfig& config, Executor& executor, const StepPlan& step,
                     const nlohmann::json& provenance, const std::atomic<bool>& interrupt);

}  // namespace xtk
