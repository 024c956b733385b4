// A recorded training job's communication, from PyTorch's traces of one rank
// (docs/replay.md): torch.profiler.ExecutionTraceObserver's JSON gives the
// collectives in order, with their sizes, data types and process groups; the
// profiler's Kineto trace of the same iterations gives the GPU compute
// between them. Either file may be gzip-compressed.
//
// Each profiled iteration (a "ProfilerStep#N" node) becomes a list of steps:
// compute, then a collective issued behind it or a wait on every collective
// issued so far; after the last one, compute that overlaps the collectives
// still running, the join, and the compute that needed their results (the
// optimizer step).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collective/collective.hpp"
#include "collective/dtype.hpp"

namespace xtk::collective {

// A c10d process group as the trace names it: ranks start, start + stride, ...
// (c10d leaves the stride out for a group of one rank: 1 here).
struct ProcessGroup {
  std::string name, description;
  std::uint32_t start = 0, stride = 1, size = 0;
  bool operator==(const ProcessGroup&) const = default;
  std::vector<std::uint32_t> ranks() const;  // the job's ranks in the group, in group-rank order
};

struct RecordedCall {
  std::uint64_t node = 0;                  // the ET node id (record_param_comms), for messages
  std::uint64_t rf_id = 0;                 // its record function id: the Kineto trace names the call by it
  std::string torch_name;                  // c10d's: "allreduce", "broadcast", "wait", ...
  const Collective* collective = nullptr;  // nullptr for a wait
  DataType type = DataType::float32;
  Counts counts;           // elements per rank: counts.send in, counts.recv out, counts.param the library's count
  std::uint32_t root = 0;  // a rooted collective's root, or a send's or recv's peer: its rank in the group
  ProcessGroup group;
  std::int64_t compute_before_ns = 0;  // GPU compute launched since the previous call (0 without Kineto)
  bool is_wait() const { return collective == nullptr; }
};

struct RecordedIteration {
  std::string name;  // "ProfilerStep#2"
  std::vector<RecordedCall> calls;
  std::int64_t overlap_ns = 0;     // compute after the last call that did not wait for the collectives
  std::int64_t after_join_ns = 0;  // compute that ran after the last collective ended
  std::int64_t compute_ns() const;
};

struct RecordedTrace {
  std::string et_path, kineto_path;  // kineto_path empty: no compute times
  std::vector<RecordedIteration> iterations;
};

// Reads one rank's execution trace, and its Kineto trace when `kineto_path`
// is set. Throws InputError naming the file (and the node) when a file is not
// what it should be, or a collective is one xtk cannot replay.
RecordedTrace read_recorded_trace(const std::string& et_path, const std::string& kineto_path);

// The same from the files' texts (uncompressed); the paths name them in errors.
RecordedTrace parse_recorded_trace(const std::string& et_text, const std::string& et_path,
                                   const std::string& kineto_text, const std::string& kineto_path);

// A file's whole text, gunzipped when it is gzip-compressed.
std::string read_maybe_gzip(const std::string& path, const std::string& what);

}  // namespace xtk::collective
