// Counter files (docs/run-directory.md#counters, "# xtk-counters"): samples of
// cumulative counters, one row per counter per sample,
//
//   t_ns,realtime_ns,source,name,value,slow
//
// and the rules every reader of them shares: which counters count bytes (and
// how many per unit), and when a drop of a value is a wrap. The writer
// streams (the sampling thread only formats rows into memory; a writer thread
// does the file I/O, so a slow disk never delays a sample); the reader checks
// every row, from a file in constant memory or from text.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "formats/csv_file.hpp"

namespace xtk {

inline constexpr int kCountersFormatVersion = 1;
inline constexpr std::string_view kCounterColumns = "t_ns,realtime_ns,source,name,value,slow";

struct CounterSample {
  std::int64_t t_ns = 0;          // CLOCK_MONOTONIC, the middle of the sample's reads
  std::int64_t realtime_ns = 0;   // CLOCK_REALTIME at the same moment
  std::string_view source, name;  // valid until the next row is read
  std::uint64_t value = 0;        // cumulative
  bool slow = false;              // the read took too long: rates touching it are void
};

// Checks every row: the columns' types, slow 0 or 1, and each counter's t_ns
// strictly increasing. A value may drop (a 32-bit counter wraps, a driver
// reloads): the reader keeps it, and counter_increase decides.
class CountersReader {
 public:
  CountersReader(std::string_view content, std::string source);  // text in memory
  explicit CountersReader(const std::string& path);              // a file ("-" = stdin), streamed
  bool next(CounterSample& sample);
  std::optional<std::string_view> header(std::string_view key) const { return csv_.header_value(key); }
  std::uint64_t line() const { return csv_.line(); }
  const std::string& source() const { return csv_.source(); }

 private:
  struct Last {
    std::string source, name;
    std::int64_t t_ns;
  };
  RunCsv csv_;
  std::vector<Last> last_;  // per counter, in the order first seen
  std::size_t guess_ = 0;   // samples repeat one counter order: the next row is usually the next counter
};

// Every row of counter text, checked, to `row`.
void read_counters(std::string_view content, const std::string& source,
                   const std::function<void(const CounterSample&)>& row);

// Bytes per unit of a counter: 4 for InfiniBand's port_xmit_data and
// port_rcv_data (32-bit words), 1 for names with "bytes" or "octets", 0 for
// counters of something else.
int counter_bytes_per_unit(std::string_view name);

// How much a cumulative counter grew from `previous` to `value`: the
// difference, or across a wrap when a drop looks like one (a 32-bit counter
// passing 2^32: both values below it and the distance under 2^31; a 64-bit
// one passing 2^64). nullopt for any other drop: a reset.
std::optional<std::uint64_t> counter_increase(std::uint64_t previous, std::uint64_t value);

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

}  // namespace xtk
