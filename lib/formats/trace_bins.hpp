// The binned-trace files (docs/run-directory.md#trace-bins, docs/capture.md):
//
//   # xtk-trace-bins      bin_start_ns,flow,src,dst,bytes,packets
//   # xtk-trace-series    bin_start_ns,bytes,packets,rate_bps,smoothed_rate_bps
//
// Their writers (xtk-log capture --summarize, xtk-analyze trace) and the
// reader of trace bins (the tables).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <functional>
#include <optional>

#include "formats/text_output.hpp"

namespace xtk {

inline constexpr int kTraceFormatVersion = 1;
inline constexpr std::string_view kTraceBinColumns = "bin_start_ns,flow,src,dst,bytes,packets";
using HeaderKeys = std::vector<std::pair<std::string, std::string>>;

class TraceBinsWriter {
 public:
  // `header` adds `# key=value` lines after format_version and bin_ns.
  TraceBinsWriter(const std::string& path, std::int64_t bin_ns, const HeaderKeys& header);
  // The hot path of a many-flow trace (one row per flow per bin): formatted
  // in place, the stamp shared by the rows of a bin formatted once.
  // `fields` is "flow,src,dst" of the row's series.
  void row(std::int64_t bin_start_ns, std::string_view fields, std::uint64_t bytes, std::uint64_t packets) {
    if (bin_start_ns != stamp_bin_) format_stamp(bin_start_ns);
    const std::string_view stamp(stamp_, stamp_size_);
    char* p = out_.reserve(stamp.size() + fields.size() + 2 * kIntRoom + 3);
    p = std::copy(stamp.begin(), stamp.end(), p);
    p = std::copy(fields.begin(), fields.end(), p);
    *p++ = ',';
    p = put_int(p, bytes);
    *p++ = ',';
    p = put_int(p, packets);
    *p++ = '\n';
    out_.commit(p);
  }
  void close() { out_.close(); }

 private:
  void format_stamp(std::int64_t bin_start_ns);  // "bin_start_ns," into stamp_

  TextOutput out_;
  std::int64_t stamp_bin_ = 0;
  char stamp_[kIntRoom + 1];
  std::size_t stamp_size_ = 0;
};

class TraceSeriesWriter {
 public:
  TraceSeriesWriter(const std::string& path, std::int64_t bin_ns, std::size_t smooth_bins, const HeaderKeys& header);
  // smoothed_bps is absent for the first bins, before the window fills.
  void row(std::int64_t bin_start_ns, std::uint64_t bytes, std::uint64_t packets, double rate_bps,
           std::optional<double> smoothed_bps);
  void close() { out_.close(); }

 private:
  TextOutput out_;
};

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

}  // namespace xtk
