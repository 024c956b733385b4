// Flow records (docs/run-directory.md#flow-records): one per scheduled flow,
// whatever happened to it, as CSV (# xtk-flow-records) or JSON Lines with the
// same keys. The writer streams them (flushed at least every second, so a
// killed client loses at most the last second); the reader checks every field.
//
//   flow_id,dst,size_bytes,sched_start_ns,start_ns,end_ns,fct_us,lateness_us,status,error
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "formats/text_output.hpp"

namespace xtk {

enum class FlowStatus { ok, failed, timeout, cancelled };
std::string_view status_name(FlowStatus status);
std::optional<FlowStatus> parse_flow_status(std::string_view name);

struct FlowRecord {
  std::uint64_t flow_id = 0;
  std::string dst;
  std::uint64_t size_bytes = 0;     // scheduled size (bytes moved when a stream)
  std::int64_t sched_start_ns = 0;  // the schedule's time, from run start
  std::int64_t start_ns = -1;       // actual start, same clock; -1 when it never started
  std::int64_t end_ns = -1;         // -1 when it did not end
  FlowStatus status = FlowStatus::ok;
  std::string error;  // empty when ok

  double fct_us() const;       // end - start, 0 unless ok
  double lateness_us() const;  // start - scheduled start
};

class RecordWriter {
 public:
  enum class Format { csv, jsonl };
  // Writes to `path` ("-" = stdout); format from the extension (.jsonl/.json) unless given.
  explicit RecordWriter(const std::string& path);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  void write(const FlowRecord& record);
  // Hands buffered records to the kernel if the last flush is `interval_ns` old.
  void flush_if_due(std::int64_t now_ns, std::int64_t interval_ns = 1'000'000'000);
  void close();
  std::uint64_t written() const { return written_; }
  Format format() const { return format_; }

 private:
  TextOutput out_;
  Format format_ = Format::csv;
  std::int64_t last_flush_ns_ = 0;
  std::uint64_t written_ = 0;
};

// Reads flow records as the writer writes them, CSV or JSON Lines (a file
// whose first character is '{'). Checks: size_bytes > 0; ok flows have a
// start, an end not before it and no error; fct_us >= 0. `source` names the
// file in errors ("source:line: ...").
void read_flow_records(std::string_view content, const std::string& source,
                       const std::function<void(const FlowRecord&)>& row);

}  // namespace xtk
