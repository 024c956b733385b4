// Schedule files: the flows a client replays (format in docs/formats.md).
//
//   # xtk-schedule
//   # format_version=1
//   # key=value ...                  (generator parameters)
//   flow_id,start_ns,src,dst,size_bytes[,dscp][,rate_bps][,cc]
//   0,10233,h0,h1,23311
//
// Both sides stream: the writer formats into a buffer, the reader holds a
// block of lines (LineReader), so schedules of hundreds of millions of flows need constant memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <istream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/line_reader.hpp"
#include "formats/text_output.hpp"

namespace xtk {

inline constexpr int kScheduleFormatVersion = 1;

struct Flow {
  std::uint64_t id = 0;
  std::int64_t start_ns = 0;  // from the schedule's time zero
  std::string_view src;
  std::string_view dst;
  std::uint64_t size_bytes = 0;
  int dscp = 0;                // 0-63
  std::uint64_t rate_bps = 0;  // per-flow pacing cap, 0 = none
  std::string_view cc;         // TCP congestion control; empty = the client's
};

struct ScheduleHeader {
  // Generator parameters in the order written (format_version excluded).
  std::vector<std::pair<std::string, std::string>> params;
  bool has_dscp = false;
  bool has_rate = false;
  bool has_cc = false;

  void set(std::string key, std::string value);
  std::optional<std::string> get(std::string_view key) const;
};

class ScheduleWriter {
 public:
  // Writes to `path`, or to stdout when path is "-".
  ScheduleWriter(const std::string& path, const ScheduleHeader& header);
  ~ScheduleWriter();
  ScheduleWriter(const ScheduleWriter&) = delete;
  ScheduleWriter& operator=(const ScheduleWriter&) = delete;

  void write(const Flow& flow);
  void close();  // flushes; throws on an I/O error (a full disk must not pass silently)
  std::uint64_t flows_written() const { return flows_; }

 private:
  char* put_line(char* at, const Flow& flow) const;  // at has room for the line

  TextOutput out_;
  bool has_dscp_, has_rate_, has_cc_;
  std::uint64_t flows_ = 0;
};

class ScheduleReader {
 public:
  // Reads the header; throws InputError naming `source` and the line.
  ScheduleReader(std::istream& in, std::string source);
  static std::unique_ptr<ScheduleReader> open(const std::string& path);  // "-" = stdin

  const ScheduleHeader& header() const { return header_; }
  // Next flow, or false at the end. Validates each line (numbers, sorted
  // starts, increasing ids, dscp range); the returned views live until the next call.
  bool next(Flow& flow);
  std::uint64_t line() const { return lines_.line(); }
  // Throws InputError at the current line ("file:line: what"): for what the
  // reader's users check of a flow, such as a destination that does not resolve.
  [[noreturn]] void fail(std::string_view what) const;

 private:
  std::unique_ptr<std::istream> owned_;
  std::string source_;
  ScheduleHeader header_;
  LineReader lines_;
  std::string last_src_, last_dst_;  // the last hosts checked (valid_token)
  std::int64_t last_start_ = INT64_MIN;
  std::uint64_t last_id_ = 0;
  bool have_id_ = false;
  int dscp_column_ = -1, rate_column_ = -1, cc_column_ = -1;
  std::size_t columns_ = 5;
};

}  // namespace xtk
