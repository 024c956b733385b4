#include "formats/trace_bins.hpp"

#include <fmt/format.h>

#include <limits>

#include "core/error.hpp"
#include "formats/csv_file.hpp"

namespace xtk {

TraceBinsWriter::TraceBinsWriter(const std::string& path, std::int64_t bin_ns, const HeaderKeys& header) : out_(path) {
  out_.print("# xtk-trace-bins\n# format_version={}\n# bin_ns={}\n", kTraceFormatVersion, bin_ns);
  for (const auto& [key, value] : header) out_.print("# {}={}\n", key, value);
  out_.write(kTraceBinColumns);
  out_.write("\n");
  format_stamp(stamp_bin_);
}

void TraceBinsWriter::format_stamp(std::int64_t bin_start_ns) {
  char* end = put_int(stamp_, bin_start_ns);
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

void TraceSeriesWriter::row(std::int64_t bin_start_ns, std::uint64_t bytes, std::uint64_t packets, double rate_bps,
                            std::optional<double> smoothed_bps) {
  // Rates are whole bits per second: bytes x 8 / a whole number of ns is exact enough.
  out_.print("{},{},{},{:.0f},", bin_start_ns, bytes, packets, rate_bps);
  if (smoothed_bps) out_.print("{:.0f}", *smoothed_bps);
  out_.write("\n");
}

TraceHeader read_trace_bins(std::string_view content, const std::string& source,
                            const std::function<void(const TraceHeader&, const TraceBin&)>& row) {
  RunCsv csv(content, source, "xtk-trace-bins", kTraceBinColumns);
  TraceHeader header;
  const auto bin = csv.header_value("bin_ns");
  if (!bin) csv.fail_header("bin_ns", "no '# bin_ns=N' line before the column line: the bin width is required");
  if (!parse_i64(*bin, header.bin_ns) || header.bin_ns <= 0) {
    csv.fail_header("bin_ns", fmt::format("bin_ns '{}' is not a positive integer", *bin));
  }
  TraceBin b;
  std::int64_t first = -1, previous = -1;
  while (csv.next()) {
    b.bin_start_ns = csv.time_field(0, "bin_start_ns");
    b.flow = csv.field(1);
    if (b.flow.empty()) csv.fail("flow is empty");
    b.src = csv.token_field(2, "src");
    b.dst = csv.token_field(3, "dst");
    b.bytes = csv.unsigned_field(4, "bytes");
    b.packets = csv.unsigned_field(5, "packets");
    if (b.bin_start_ns < previous) {
      csv.fail(fmt::format("bin_start_ns {} is before the previous row's {}: bins are sorted by time", b.bin_start_ns,
                           previous));
    }
    if (b.bin_start_ns > std::numeric_limits<std::int64_t>::max() - header.bin_ns) {
      csv.fail(fmt::format("bin_start_ns {} is too large: the bin would end past the largest time", b.bin_start_ns));
    }
    if (first < 0) first = b.bin_start_ns;
    if ((b.bin_start_ns - first) % header.bin_ns != 0) {
      csv.fail(fmt::format("bin_start_ns {} is not on the bin grid: the first bin starts at {}, bins are {} ns",
                           b.bin_start_ns, first, header.bin_ns));
    }
    previous = b.bin_start_ns;
    if (b.bytes > 0 && b.packets == 0) csv.fail(fmt::format("bytes {} in 0 packets", b.bytes));
    row(header, b);
  }
  return header;
}

}  // namespace xtk
