// Writers of the binned-trace files (docs/formats.md):
//
//   # xtk-trace-bins      bin_start_ns,flow,src,dst,bytes,packets
//   # xtk-trace-series    bin_start_ns,bytes,packets,rate_bps,smoothed_rate_bps
#pragma once

#include <algorithm>
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
  // The hot path of a many-flow trace (one row per flow per bin): formatted
  // in place, the stamp shared by the rows of a bin formatted once.
  void row(const BinRow& row, std::string_view fields) {
    if (row.bin_start_ns != stamp_bin_) format_stamp(row.bin_start_ns);
    const std::string_view stamp(stamp_, stamp_size_);
    char* p = out_.reserve(stamp.size() + fields.size() + 2 * kMaxDigits + 3);
    p = std::copy(stamp.begin(), stamp.end(), p);
    p = std::copy(fields.begin(), fields.end(), p);
    *p++ = ',';
    p = std::to_chars(p, p + kMaxDigits, row.bytes).ptr;
    *p++ = ',';
    p = std::to_chars(p, p + kMaxDigits, row.packets).ptr;
    *p++ = '\n';
    out_.commit(p);
  }
  void close() { out_.close(); }

 private:
  static constexpr std::size_t kMaxDigits = 20;  // of a 64-bit integer, with a sign
  void format_stamp(std::int64_t bin_start_ns);  // "bin_start_ns," into stamp_

  TextOutput out_;
  std::int64_t stamp_bin_ = 0;
  char stamp_[kMaxDigits + 1];
  std::size_t stamp_size_ = 0;
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
