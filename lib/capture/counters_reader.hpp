// Streams a counter file ("# xtk-counters", format_version 1) row by row in
// constant memory, checking its header and every field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xtk::capture {

struct CounterRow {
  std::int64_t t_ns = 0, realtime_ns = 0;
  std::string_view source, name;  // valid until the next call to next()
  std::uint64_t value = 0;
  bool slow = false;
};

class CountersReader {
 public:
  explicit CountersReader(const std::string& path);  // InputError when it is not a counter file
  ~CountersReader();
  CountersReader(const CountersReader&) = delete;
  CountersReader& operator=(const CountersReader&) = delete;

  bool next(CounterRow& row);  // InputError "file:line: ..." on a bad row
  std::optional<std::string> header(std::string_view key) const;
  std::uint64_t line() const { return line_; }
  const std::string& path() const { return path_; }

 private:
  bool next_line(std::string_view& line);

  std::string path_;
  int fd_ = -1;
  std::vector<char> buffer_;
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  std::uint64_t line_ = 0;
  std::vector<std::pair<std::string, std::string>> header_;
};

}  // namespace xtk::capture
