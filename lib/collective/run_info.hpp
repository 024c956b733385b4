// What a run echoes beside its results so it can be reproduced from its log
// alone: the command line, options, library versions, how ranks were found,
// every rank's device and host, and the environment that steers NCCL and Gloo
// (NCCL_*, GLOO_*, CUDA_* and the launcher's variables) of every process.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "collective/backend.hpp"
#include "collective/job.hpp"

namespace xtk::collective {

using Environment = std::map<std::string, std::string>;

// The variables of this process worth echoing.
Environment relevant_environment();

struct RunInfo {
  std::string command;  // "sweep", "train"
  std::vector<std::string> argv;
  std::int64_t start_realtime_ns = 0;
  World world;
  std::uint32_t nranks = 0, ranks_per_process = 1;
  std::string backend;
  nlohmann::json versions, options;
  std::vector<DeviceInfo> devices;        // every collective rank
  std::vector<Environment> environments;  // every process, by process rank

  nlohmann::json to_json() const;
  // '#' lines: versions, launch, options, environment (rank 0's, then what
  // other ranks set differently), then nccl-tests' "Using devices" block.
  void print(std::ostream& out) const;
};

// Gathers every process's devices and environment to rank 0 (a collective
// call: every process makes it). The others get their own part only.
RunInfo collect_run_info(const std::string& command, const std::vector<std::string>& argv,
                         const nlohmann::json& options, Backend& backend, Job& job);

}  // namespace xtk::collective
