// The training emulator's summary: every process reports its per-iteration
// times to rank 0, which combines them into the job's view (an iteration
// lasts as long as its slowest rank) and prints it.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "collective/buckets.hpp"
#include "collective/job.hpp"
#include "collective/run_info.hpp"
#include "collective/train.hpp"
#include "formats/iterations.hpp"
#include "transport/tcp/process_counts.hpp"

namespace xtk::collective {

// One process's measurements, as sent to rank 0.
struct RankPart {
  std::vector<double> iter_us, comm_us, exposed_us;
  std::uint64_t bytes_per_iteration = 0;
  std::uint64_t wrong = 0;
  bool interrupted = false;
  // The process's own TCP connections over the recorded iterations; none
  // where it had no TCP connection (timeouts: or a kernel before Linux 6.7).
  std::optional<std::uint64_t> tcp_retransmits, tcp_timeouts, tcp_rwnd_limited_us;
  std::string encode() const;
  static RankPart decode(const std::string& text);
};

// One iteration just run (it began at t0_ns, CLOCK_MONOTONIC, and wall0_ns,
// CLOCK_REALTIME; it ends now) into this process's part, and a row per local
// rank into the iterations file when there is one, the first with what the
// process's TCP connections counted since the iteration before (`tcp`, also
// added to the part).
void record_iteration(const IterationTiming& timing, std::uint64_t iter, std::int64_t t0_ns, std::int64_t wall0_ns,
                      std::uint64_t bytes, Job& job, RankPart& part, IterationWriter* writer, ProcessTcpCounts& tcp);

// The job's summary from every process's part (rank 0), or from `own` alone
// (other ranks, which pass their part and an empty `parts`).
TrainSummary summarize(const ModelProfile& profile, const BucketPlan& plan, const ComputeTimes& compute,
                       std::uint32_t ranks, const std::vector<std::string>& parts, const RankPart* own);

void print_train_summary(std::ostream& out, const TrainSummary& summary);

}  // namespace xtk::collective
