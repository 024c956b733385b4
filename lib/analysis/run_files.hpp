// Strict readers of the CSV files in a step directory (docs/run-directory.md):
// iterations, flow records, counters and trace bins.
//
// Every file starts with a magic line and a format version, then one column
// line, then rows:
//
//   # xtk-iterations
//   # format_version=1
//   rank,iter,start_ns,end_ns,iter_us,comm_us,bytes
//   0,0,1700000000000000000,1700000000008000000,8000,3100,4000000
//
// Readers hand each validated row to a callback and keep nothing, so a file of
// millions of rows costs no memory beyond its text. Any malformed row throws
// InputError naming the file and line.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xtk::analysis {

inline constexpr int kRunFilesFormatVersion = 1;

// The whole content of a file; Error("path: cannot read <what>: reason") when it cannot.
std::string read_text_file(const std::string& path, std::string_view what);

// One line-oriented CSV file of the run-directory family: checks the magic
// line, the format version and the column line, then splits rows.
class RunCsv {
 public:
  // `magic` is the first line without "# " (e.g. "xtk-iterations"); `columns`
  // the exact column line. A field may be quoted as in RFC 4180 ("a, ""b""")
  // to hold commas or quotes (free text such as an error message).
  RunCsv(std::string_view content, std::string source, std::string_view magic, std::string_view columns);

  // The value of a `# key=value` header line (format_version is not kept).
  std::optional<std::string_view> header_value(std::string_view key) const;

  bool next();  // the next row; blank and '#' lines are skipped
  std::string_view field(std::size_t i) const { return fields_[i]; }
  std::uint64_t line() const { return line_; }
  const std::string& source() const { return source_; }

  // Field parsers: throw InputError "<name> '<text>' is not ..." at this line.
  std::uint64_t unsigned_field(std::size_t i, std::string_view name) const;
  std::int64_t time_field(std::size_t i, std::string_view name) const;       // integer >= 0
  double number_field(std::size_t i, std::string_view name) const;           // finite
  std::string_view token_field(std::size_t i, std::string_view name) const;  // non-empty, no spaces or '#'

  [[noreturn]] void fail(std::string_view what) const;
  // Fails at the line of header `key`, or at the column line when it is missing.
  [[noreturn]] void fail_header(std::string_view key, std::string_view what) const;

 private:
  struct HeaderLine {
    std::string key, value;
    std::uint64_t line;
  };
  bool next_line(std::string_view& line);

  std::string_view content_;
  std::size_t pos_ = 0;
  std::string source_;
  std::string_view columns_;
  std::size_t column_count_;
  std::vector<HeaderLine> header_;
  std::vector<std::string_view> fields_;
  std::vector<std::string> unquoted_;  // storage of quoted fields, one per column
  std::uint64_t line_ = 0;
  std::uint64_t column_line_ = 0;
};

// Strict whole-token number parsing shared by the readers.
bool parse_u64(std::string_view text, std::uint64_t& value);
bool parse_i64(std::string_view text, std::int64_t& value);
bool parse_finite(std::string_view text, double& value);
// A host, counter source or flow label: non-empty, no comma, whitespace or '#'.
bool valid_token(std::string_view text);

// --- iterations: rank,iter,start_ns,end_ns,iter_us,comm_us,bytes -------------

struct IterationRow {
  std::uint64_t rank = 0;
  std::uint64_t iter = 0;
  std::int64_t start_ns = 0, end_ns = 0;  // CLOCK_REALTIME
  double iter_us = 0;                     // measured on CLOCK_MONOTONIC
  double comm_us = 0;
  std::uint64_t bytes = 0;  // bytes this rank sent in the iteration's collectives
};
// Checks: end >= start, iter_us > 0, comm_us >= 0, `iter` strictly
// increasing within each rank, and rank < `ranks` when `ranks` is not 0.
void read_iterations(std::string_view content, const std::string& source, std::uint64_t ranks,
                     const std::function<void(const IterationRow&)>& row);

// --- flow records, as xtk-client writes them (lib/flow/record.cpp), CSV
// (# xtk-flow-records) or JSON Lines (one object per line, same keys):
// flow_id,dst,size_bytes,sched_start_ns,start_ns,end_ns,fct_us,lateness_us,status,error

enum class FlowStatus { ok, failed, timeout, cancelled };

struct FlowRecord {
  std::uint64_t flow_id = 0;
  std::string_view dst;
  std::uint64_t size_bytes = 0;
  std::int64_t sched_start_ns = 0;  // from the schedule's time zero
  // Same clock; unset (-1 in the file) when the flow never started or ended.
  std::optional<std::int64_t> start_ns, end_ns;
  double fct_us = 0, lateness_us = 0;
  FlowStatus status = FlowStatus::ok;
  std::string_view error;  // empty when ok
};
// Checks: size_bytes > 0; ok flows have a start, an end not before it, no error.
// A file whose first character is '{' is read as JSON Lines.
void read_flows(std::string_view content, const std::string& source, const std::function<void(const FlowRecord&)>& row);

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
