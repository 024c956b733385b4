// Writers of the binned-trace files (docs/formats.md):
//
//   # xtk-trace-bins      bin_start_ns,flow,src,dst,bytes,packets
//   # xtk-trace-series    bin_start_ns,bytes,packets,rate_bps,smoothed_rate_bps
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capture/binner.hpp"
#include "capture/rate_series.hpp"
#include "capture/text_output.hpp"

namespace xtk::capture {

inline constexpr int kTraceFormatVersion = 1;
using HeaderKeys = std::vector<std::pair<std::string, std::string>>;

class TraceBinsWriter {
 public:
  // `header` adds `# key=value` lines after format_version and bin_ns.
  TraceBinsWriter(const std::string& path, std::int64_t bin_ns, const HeaderKeys& header);
  // The hot path of a many-flow trace (one row per flow per bin): formatted by hand.
  void row(const BinRow& row, std::string_view fields) {
    char line[96];
    char* p = std::to_chars(line, line + 24, row.bin_start_ns).ptr;
    *p++ = ',';
    out_.write(std::string_view(line, static_cast<std::size_t>(p - line)));
    out_.write(fields);
    p = line;
    *p++ = ',';
    p = std::to_chars(p, line + 48, row.bytes).ptr;
    *p++ = ',';
    p = std::to_chars(p, line + 72, row.packets).ptr;
    *p++ = '\n';
    out_.write(std::string_view(line, static_cast<std::size_t>(p - line)));
  }
  void close() { out_.close(); }

 private:
  TextOutput out_;
};

class TraceSeriesWriter {
 public:
  TraceSeriesWriter(const std::string& path, std::int64_t bin_ns, std::size_t smooth_bins, const HeaderKeys& header);
  void row(const SeriesPoint& point);
  void close() { out_.close(); }

 private:
  TextOutput out_;
};

}  // namespace xtk::capture
