// The iterations file (docs/run-directory.md#iterations): one row per rank per
// training iteration. The writer streams it to disk, handed to the kernel at
// least every second, so a run that is killed loses at most its last second;
// the reader checks every row.
//
//   # xtk-iterations
//   # format_version=1
//   # key=value ...                     (model, ranks, backend, ...)
//   rank,iter,start_ns,end_ns,iter_us,comm_us,bytes,tcp_retransmits,tcp_timeouts,tcp_rwnd_limited_us
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/csv_file.hpp"

namespace xtk {

struct IterationRecord {
  std::uint64_t rank = 0;
  std::uint64_t iter = 0;
  std::int64_t start_ns = 0, end_ns = 0;  // CLOCK_REALTIME
  double iter_us = 0;                     // CLOCK_MONOTONIC
  double comm_us = 0;
  std::uint64_t bytes = 0;  // bytes this rank sent in the iteration's all-reduces
  // What the process's own TCP connections counted in the iteration:
  // segments retransmitted, retransmission timeouts, and the time their
  // senders waited for the receivers' windows. On a process's first rank
  // only; none where not counted (files of before, kernels before Linux 6.7
  // for timeouts).
  std::optional<std::uint64_t> tcp_retransmits, tcp_timeouts, tcp_rwnd_limited_us;
};

class IterationWriter {
 public:
  IterationWriter(const std::string& path, const std::vector<std::pair<std::string, std::string>>& header);
  void write(const IterationRecord& record);
  void close() { out_.close(); }

 private:
  RunCsvWriter out_;
};

// Reads files of before the TCP columns too. Checks: end >= start, iter_us > 0, comm_us >= 0, `iter` strictly
// increasing within each rank, and rank < `ranks` when `ranks` is not 0.
void read_iterations(std::string_view content, const std::string& source, std::uint64_t ranks,
                     const std::function<void(const IterationRecord&)>& row);

}  // namespace xtk
