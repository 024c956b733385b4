// `xtk-collective replay`: a recorded training job's communication run again
// (docs/replay.md). Each iteration replays one profiled iteration of the
// trace (cycling when it holds several): its compute, as the GPU was busy
// between the calls (a calibrated kernel, or sleep on a CPU rank), and its
// collectives in order with their sizes and data types, issued behind the
// compute and overlapping it as they did; waits where the job waited, and a
// join before the compute that needed the results. Writes the iterations and
// collectives files as `train` does.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "collective/backend.hpp"
#include "collective/execution_trace.hpp"
#include "collective/job.hpp"
#include "collective/time_stats.hpp"

namespace xtk::collective {

struct ReplayOptions {
  std::string trace = "et-rank{rank}.json";  // {rank}: this process's rank
  std::string kineto;                        // its Kineto trace; "" = no compute between the calls
  double compute_scale = 1.0;
  double size_scale = 1.0;  // multiplies every call's elements (an emulated faster network)
  std::uint64_t iterations = 20;
  std::uint64_t warmup = 2;
  std::optional<std::int64_t> start_at_realtime_ns;
  std::string iterations_path = "iterations-{rank}.csv";
  std::string collectives_path = "collectives-{rank}.csv";
  nlohmann::json to_json() const;
};

struct ReplaySummary {
  std::string trace;
  std::uint32_t ranks = 0;
  std::uint64_t recorded_iterations = 0;  // profiled iterations in the trace
  std::uint64_t calls = 0, waits = 0;     // per replayed iteration, mean over the recorded ones
  double compute_ms = 0;                  // per iteration, scaled
  std::uint64_t bytes_per_iteration = 0;  // each rank sends, per nccl-tests' bus factors
  std::uint64_t iterations = 0;
  TimeStats iteration_ms;  // the slowest rank of each iteration
  TimeStats comm_ms;       // per rank per iteration
  nlohmann::json to_json() const;
};

// Reads this rank's trace (throws InputError or UsageError before the job
// starts anything), then replays it; rank 0 gets the job's summary.
RecordedTrace read_replay_trace(const ReplayOptions& options, std::uint32_t rank);
// -g replays one trace on every GPU of the process: right for DDP's identical
// ranks, not for sends and recvs, whose peers differ from rank to rank.
// Throws UsageError.
void check_replay_fits(const RecordedTrace& trace, std::uint32_t ranks_per_process);
ReplaySummary run_replay(const ReplayOptions& options, const RecordedTrace& trace, Backend& backend, Job& job);
void print_replay_summary(std::ostream& out, const ReplaySummary& summary);

}  // namespace xtk::collective
