// The counter file (docs/formats.md, "# xtk-counters"), streamed:
//
//   t_ns,realtime_ns,source,name,value,slow
//
// The sampling thread only formats rows into memory; a writer thread does
// the file I/O, so a slow disk never delays a sample.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace xtk::capture {

inline constexpr int kCountersFormatVersion = 1;

class CountersWriter {
 public:
  // Writes the header (`# key=value` lines after format_version) and starts
  // the writer thread. Throws Error when `path` cannot be created.
  CountersWriter(const std::string& path, const std::vector<std::pair<std::string, std::string>>& header);
  ~CountersWriter();
  CountersWriter(const CountersWriter&) = delete;
  CountersWriter& operator=(const CountersWriter&) = delete;

  // Registers a counter; returns its id for row().
  std::size_t add_counter(std::string_view source, std::string_view name);
  // One sample's stamps; then row() per counter read in it.
  void begin_sample(std::int64_t t_ns, std::int64_t realtime_ns, bool slow);
  void row(std::size_t counter, std::uint64_t value);
  void end_sample();  // hands the buffer to the writer thread once it is big enough

  // Whether the writer thread has failed (a full disk): sampling should stop.
  bool failed() const;
  // Writes what is left, joins the thread; throws Error on a write error.
  void close();
  std::uint64_t rows() const { return rows_; }

 private:
  void write_loop();

  int fd_ = -1;
  bool owns_fd_ = false;
  std::string path_;
  std::vector<std::string> prefixes_;  // ",source,name," per counter
  std::string stamp_;                  // "t_ns,realtime_ns" of the current sample
  const char* slow_suffix_ = ",0\n";
  std::string chunk_;  // rows not yet handed over
  std::uint64_t rows_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::string> queue_;
  std::vector<std::string> spare_;  // emptied buffers, to reuse without allocating
  bool closing_ = false;
  std::string error_;
  std::thread thread_;
};

}  // namespace xtk::capture
