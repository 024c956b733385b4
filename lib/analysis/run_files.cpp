#include "analysis/run_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace xtk::analysis {

TraceHeader read_trace_bins(std::string_view content, const std::string& source,
                            const std::function<void(const TraceHeader&, const TraceBin&)>& row) {
  RunCsv csv(content, source, "xtk-trace-bins", "bin_start_ns,flow,src,dst,bytes,packets");
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

}  // namespace xtk::analysis
