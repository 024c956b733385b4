// `xtk-collective train`: the network behaviour of a data-parallel training
// job without the framework. Each iteration: the forward compute, then the
// backward compute in slices, each slice ending where DDP's next gradient
// bucket is full and its all-reduce is issued (overlapping the rest of the
// backward pass), then a wait for every all-reduce. One row per rank per
// iteration goes to the iterations file as it happens.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "collective/backend.hpp"
#include "collective/buckets.hpp"
#include "collective/job.hpp"
#include "collective/profile.hpp"
#include "collective/time_stats.hpp"
#include "formats/collectives.hpp"

namespace xtk::collective {

struct TrainOptions {
  BucketCaps caps;
  std::optional<std::int64_t> compute_ns;  // one iteration's compute; default: the profile's compute_ms
  std::optional<double> forward_fraction;  // default: the profile's
  double compute_scale = 1.0;
  // Multiplies the gradients and the bucket caps (scale_profile, BucketCaps::scaled).
  double size_scale = 1.0;
  std::uint64_t iterations = 0;  // recorded iterations; 0 = run for duration_ns
  std::int64_t duration_ns = 0;
  std::uint64_t warmup = 1;  // iterations run first and not recorded
  std::optional<std::int64_t> start_at_realtime_ns;
  std::string iterations_path = "iterations-{rank}.csv";    // "" = none; {rank} = the process's rank
  std::string collectives_path = "collectives-{rank}.csv";  // each bucket's all-reduce; "" = none
  bool check = true;
  nlohmann::json to_json() const;
};

struct ComputeTimes {
  std::int64_t forward_ns = 0, backward_ns = 0;
};
// The compute of one iteration, from the options and the profile. Throws
// UsageError when neither gives a compute time.
ComputeTimes compute_times(const TrainOptions& options, const ModelProfile& profile);

struct TrainSummary {
  std::string model;
  std::uint64_t parameters = 0, gradient_bytes = 0;
  std::uint32_t ranks = 0;
  std::vector<std::uint64_t> bucket_bytes;
  ComputeTimes compute;
  std::uint64_t iterations = 0;
  TimeStats iteration_ms;                 // the job's iteration time: the slowest rank of each iteration
  TimeStats comm_ms;                      // per rank per iteration
  TimeStats exposed_ms;                   // communication not hidden behind the backward compute
  std::uint64_t bytes_per_iteration = 0;  // each rank sends, 2(n-1)/n x the gradient bytes
  double busbw_gbyte_s = 0;               // GB/s while communicating: bytes sent / comm time
  double demand_bytes = 0;                // the seed's D = 2(N-1)/N x P x bytes per parameter
  std::uint64_t wrong = 0;                // elements, from the data check after the run
  bool interrupted = false;
  // Over the recorded iterations, summed over the processes' own TCP
  // connections; none where no process counted.
  std::optional<std::uint64_t> tcp_retransmits, tcp_timeouts, tcp_rwnd_limited_us;
  nlohmann::json to_json() const;
};

// A path pattern's {rank} replaced by `rank`.
std::string rank_path(const std::string& pattern, std::uint32_t rank);
// Sleeps until --start-at (CLOCK_REALTIME); throws Error when it has passed.
void wait_for_start(std::int64_t start_realtime_ns, Job& job);
// The collectives file of this process (`pattern` with {rank}); nullptr for "".
std::unique_ptr<CollectiveWriter> open_collectives_file(const std::string& pattern, const std::string& model,
                                                        const std::string& backend, Job& job);
// One iteration's calls, on rank 0's clock.
void write_calls(CollectiveWriter& out, Job& job, std::uint64_t iter, const IterationTiming& timing,
                 const TrainPlan& plan);

// Runs the emulator; rank 0 gets the job's summary, the others their own part.
TrainSummary run_train(const TrainOptions& options, const ModelProfile& profile, Backend& backend, Job& job,
                       const std::atomic<bool>& stop_requested);

}  // namespace xtk::collective
