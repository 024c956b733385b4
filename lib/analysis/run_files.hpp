// The strict reader of trace-bin files in a step directory
// (docs/run-directory.md), on the run-directory CSV reader (formats/csv_file.hpp).
// Iterations, flow records and counters have their own modules (formats/).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/csv_file.hpp"

namespace xtk::analysis {

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
