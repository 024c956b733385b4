// `xtk-collective sweep`: one collective over a range of sizes the way
// nccl-tests measures it - warm-up at the largest and smallest size, then per
// size and per mode (out of place, in place) a checked run, a barrier, one
// untimed call, and -n timed iterations back to back; the time is the mean
// over ranks (-a 1) of the host-clock time per iteration.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collective/backend.hpp"
#include "collective/collective.hpp"
#include "collective/dtype.hpp"
#include "collective/job.hpp"
#include "collective/time_stats.hpp"

namespace xtk::collective {

enum class RankTime { rank0 = 0, mean = 1, min = 2, max = 3 };  // nccl-tests' -a

struct SweepOptions {
  const Collective* collective = &find_collective("all-reduce");
  std::uint32_t root = 0;  // of broadcast and reduce
  std::uint64_t min_bytes = 32ULL << 20, max_bytes = 32ULL << 20;
  std::uint64_t factor = 1, step_bytes = 1ULL << 20;
  int iterations = 20, warmup = 5;
  bool check = true;
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  RankTime rank_time = RankTime::mean;
  bool per_iteration = false;  // -I: time every iteration (nccl-tests' per_iter_timing)
  // With -I: every timed call's start and end per rank, on rank 0's clock
  // (the collectives file; {rank} = the process's rank). "" = none.
  std::string collectives_path;
  nlohmann::json to_json() const;
};

struct SweepResult {
  double time_us = 0;        // per iteration, combined over ranks by -a
  double algbw_gbyte_s = 0;  // GB/s
  double busbw_gbyte_s = 0;
  bool checked = false;     // -c 1, and not an in-place run of a collective without an in-place form
  std::uint64_t wrong = 0;  // elements, all ranks, when checked
  TimeStats iteration_us;   // per iteration: the slowest rank's time of each iteration (n = 0 without -I)
};

struct SweepRow {
  std::uint64_t bytes = 0, count = 0;  // nccl-tests' size (the larger buffer) and count (the library call's)
  SweepResult out_of_place, in_place;
};

// Runs the sweep; rank 0 gets each row as soon as it is measured.
// The sizes the sweep runs, in bytes; throws UsageError when -b/-e/-f/-i give
// none that holds a whole element of the data type.
std::vector<std::uint64_t> sweep_bytes(const SweepOptions& options);

void run_sweep(const SweepOptions& options, Backend& backend, Job& job,
               const std::function<void(const SweepRow&)>& on_row);

}  // namespace xtk::collective
