// libFuzzer target: the replay's readers of PyTorch's traces (lib/collective
// execution_trace: the execution trace's collectives and the Kineto trace's
// compute between them), on arbitrary bytes: as an execution trace, and as
// the Kineto trace of a small fixed execution trace.
//
// Bad input must end in xtk::Error (InputError); anything else that escapes,
// a sanitizer report, or a call that breaks the invariants below is a bug.
// Run through scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collective/execution_trace.hpp"
#include "core/error.hpp"

namespace {

namespace xc = xtk::collective;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// One profiled step with an all-reduce (record function id 1) and a wait:
// what the fuzzed Kineto trace is read against.
const std::string kExecutionTrace = R"({"nodes": [
  {"id": 10, "name": "ProfilerStep#5"},
  {"id": 11, "name": "record_param_comms", "inputs": {"values": [[], [1, false], ["0", ""], 0, "allreduce"]},
   "attrs": [{"name": "rf_id", "value": 1}, {"name": "collective_name", "value": "allreduce"},
             {"name": "dtype", "value": "Float"}, {"name": "in_msg_nelems", "value": 1000},
             {"name": "out_msg_nelems", "value": 1000}, {"name": "pg_name", "value": "0"},
             {"name": "global_rank_start", "value": 0}, {"name": "global_rank_stride", "value": 1},
             {"name": "pg_size", "value": 2}]},
  {"id": 12, "name": "record_param_comms",
   "attrs": [{"name": "rf_id", "value": 2}, {"name": "collective_name", "value": "wait"}]}]})";

void check_trace(const xc::RecordedTrace& trace) {
  check(!trace.iterations.empty());
  for (const auto& iteration : trace.iterations) {
    check(!iteration.calls.empty());
    check(iteration.overlap_ns >= 0 && iteration.after_join_ns >= 0);
    for (const auto& call : iteration.calls) {
      check(call.compute_before_ns >= 0);
      if (call.is_wait()) continue;
      check(call.group.size >= 1 && call.group.ranks().size() == call.group.size);
      if (call.collective->rooted() || call.collective->point_to_point()) check(call.root < call.group.size);
    }
  }
}

template <typename F>
void rejected_is_fine(F&& f) {
  try {
    f();
  } catch (const xtk::Error&) {
    // Rejected input: the expected outcome for most bytes.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  rejected_is_fine([&] { check_trace(xc::parse_recorded_trace(text, "fuzz-et.json", "", "")); });
  rejected_is_fine(
      [&] { check_trace(xc::parse_recorded_trace(kExecutionTrace, "et.json", text, "fuzz-kineto.json")); });
  return 0;
}
