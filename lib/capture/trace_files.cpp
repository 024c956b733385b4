#include "capture/trace_files.hpp"

namespace xtk::capture {

TraceBinsWriter::TraceBinsWriter(const std::string& path, std::int64_t bin_ns, const HeaderKeys& header) : out_(path) {
  out_.print("# xtk-trace-bins\n# format_version={}\n# bin_ns={}\n", kTraceFormatVersion, bin_ns);
  for (const auto& [key, value] : header) out_.print("# {}={}\n", key, value);
  out_.write("bin_start_ns,flow,src,dst,bytes,packets\n");
  format_stamp(stamp_bin_);
}

void TraceBinsWriter::format_stamp(std::int64_t bin_start_ns) {
  char* end = std::to_chars(stamp_, stamp_ + kMaxDigits, bin_start_ns).ptr;
  *end++ = ',';
  stamp_size_ = static_cast<std::size_t>(end - stamp_);
  stamp_bin_ = bin_start_ns;
}

TraceSeriesWriter::TraceSeriesWriter(const std::string& path, std::int64_t bin_ns, std::size_t smooth_bins,
                                     const HeaderKeys& header)
    : out_(path) {
  out_.print("# xtk-trace-series\n# format_version={}\n# bin_ns={}\n# smooth_bins={}\n", kTraceFormatVersion, bin_ns,
             smooth_bins);
  for (const auto& [key, value] : header) out_.print("# {}={}\n", key, value);
  out_.write("bin_start_ns,bytes,packets,rate_bps,smoothed_rate_bps\n");
}

void TraceSeriesWriter::row(const SeriesPoint& point) {
  // Rates are whole bits per second: bytes x 8 / a whole number of ns is exact enough.
  out_.print("{},{},{},{:.0f},", point.bin_start_ns, point.bytes, point.packets, point.rate_bps);
  if (point.smoothed_bps) out_.print("{:.0f}", *point.smoothed_bps);
  out_.write("\n");
}

}  // namespace xtk::capture
