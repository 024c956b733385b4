// The collectives file (docs/run-directory.md#collectives): one row per rank
// per collective call of a training job, with the time the rank arrived at it
// (its input was ready) and the time it finished there, both on rank 0's
// CLOCK_REALTIME (each process adds the offset it measured on joining). Which
// rank arrived last, and by how much, is the straggler table's input.
//
//   # xtk-collectives
//   # format_version=1
//   # clock_offset_ns=-1200               (this process's, and the round trip
//   # clock_rtt_ns=85000                   it was measured in)
//   rank,iter,index,collective,bytes,arrive_ns,end_ns,group
//   2,0,0,all_reduce,26214400,1700000000012000000,1700000000019000000,all
// (group: "all" for the whole job, else the call's ranks joined by dots;
// files without the column are read as the whole job's calls)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/csv_file.hpp"

namespace xtk {

struct CollectiveRecord {
  std::uint64_t rank = 0;
  std::uint64_t iter = 0;
  std::uint64_t index = 0;  // the call's place in its iteration (a DDP bucket's number)
  std::string collective;   // nccl-tests' name without "_perf": all_reduce, all_gather, ...
  std::uint64_t bytes = 0;  // the call's buffer (a bucket's gradients)
  std::int64_t arrive_ns = 0, end_ns = 0;
  // The ranks that met in the call: a replay's sub-group, or the two of a
  // send and its recv, in increasing order; empty for the whole job.
  std::vector<std::uint64_t> group;
};

class CollectiveWriter {
 public:
  CollectiveWriter(const std::string& path, const std::vector<std::pair<std::string, std::string>>& header);
  void write(const CollectiveRecord& record);
  void close() { out_.close(); }

 private:
  RunCsvWriter out_;
};

// Checks: end_ns >= arrive_ns, rank (and the group's ranks) < `ranks` when it
// is not 0, the rank in its group, and (iter, index) strictly increasing within
// each rank.
void read_collectives(std::string_view content, const std::string& source, std::uint64_t ranks,
                      const std::function<void(const CollectiveRecord&)>& row);

}  // namespace xtk
