// Strict readers of the counter and trace-bin files in a step directory
// (docs/run-directory.md), on the run-directory CSV reader (formats/csv_file.hpp).
// Iterations and flow records have their own modules (formats/).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/csv_file.hpp"

namespace xtk::analysis {

// --- counters: t_ns,realtime_ns,source,name,value,slow ----------------------

struct CounterSample {
  std::int64_t t_ns = 0;         // CLOCK_MONOTONIC, after the read
  std::int64_t realtime_ns = 0;  // CLOCK_REALTIME beside it
  std::string_view source, name;
  std::uint64_t value = 0;  // cumulative
  bool slow = false;        // the read took too long: rates touching it are void
};
// Checks, per (source, name): t_ns strictly increasing. Values may drop (a
// wrap or a reset): counter_load_bps decides.
void read_counters(std::string_view content, const std::string& source,
                   const std::function<void(const CounterSample&)>& row);

// --- trace bins: bin_start_ns,flow,src,dst,bytes,packets ----------------------

struct TraceBin {
  std::int64_t bin_start_ns = 0;  // CLOCK_REALTIME (packet timestamps)
  std::string_view flow;          // the capture tool's flow label: "tcp 10.0.0.1:40000>10.0.0.2:7000"
  std::string_view src, dst;      // addresses
  std::uint64_t bytes = 0;        // wire bytes
  std::uint64_t packets = 0;
};
struct TraceHeader {
  std::int64_t bin_ns = 0;
};
// Checks: bin_ns given and > 0, bin_start_ns non-decreasing and on the grid
// first bin_start_ns + k * bin_ns, packets > 0 when bytes > 0.
// The header is complete before the first row: `row` gets it with each bin.
TraceHeader read_trace_bins(std::string_view content, const std::string& source,
                            const std::function<void(const TraceHeader&, const TraceBin&)>& row);

}  // namespace xtk::analysis
