#include "capture/counters_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "capture/counters_writer.hpp"
#include "core/error.hpp"

namespace xtk::capture {
namespace {

constexpr std::string_view kColumns = "t_ns,realtime_ns,source,name,value,slow";
constexpr std::size_t kChunk = 1 << 20;

template <typename T>
bool parse_int(std::string_view text, T& value) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

}  // namespace

CountersReader::CountersReader(const std::string& path) : path_(path), buffer_(kChunk) {
  fd_ = path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw InputError(path, 0, fmt::format("cannot open: {}", std::strerror(errno)));
  std::string_view line;
  if (!next_line(line)) throw InputError(path_, 0, "empty file: not an xtk counter file");
  if (line != "# xtk-counters")
    throw InputError(path_, line_, "not an xtk counter file: the first line must be '# xtk-counters'");
  bool versioned = false;
  while (next_line(line)) {
    if (line.empty()) continue;
    if (line.front() != '#') {
      if (!versioned) throw InputError(path_, line_, "no '# format_version=N' line before the column line");
      if (line != kColumns) throw InputError(path_, line_, fmt::format("expected the column line '{}'", kColumns));
      return;
    }
    line.remove_prefix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    const auto eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    const std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "format_version") {
      int version = 0;
      if (!parse_int(value, version) || version != kCountersFormatVersion) {
        throw InputError(path_, line_,
                         fmt::format("format_version '{}' is not supported (this xtk reads version {})", value,
                                     kCountersFormatVersion));
      }
      versioned = true;
    } else {
      header_.emplace_back(std::string(key), std::string(value));
    }
  }
  throw InputError(path_, line_, fmt::format("no column line: the header must end with '{}'", kColumns));
}

CountersReader::~CountersReader() {
  if (fd_ > STDIN_FILENO) ::close(fd_);
}

std::optional<std::string> CountersReader::header(std::string_view key) const {
  for (const auto& [k, v] : header_) {
    if (k == key) return v;
  }
  return std::nullopt;
}

bool CountersReader::next_line(std::string_view& line) {
  while (true) {
    const char* start = buffer_.data() + pos_;
    if (const void* nl = std::memchr(start, '\n', end_ - pos_)) {
      const auto length = static_cast<std::size_t>(static_cast<const char*>(nl) - start);
      line = std::string_view(start, length);
      pos_ += length + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      ++line_;
      return true;
    }
    if (eof_) {
      if (pos_ == end_) return false;
      line = std::string_view(start, end_ - pos_);  // a last line without newline
      pos_ = end_;
      ++line_;
      return true;
    }
    std::memmove(buffer_.data(), start, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
    if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // a line longer than the buffer
    const ssize_t n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(path_, line_, fmt::format("read error: {}", std::strerror(errno)));
    if (n == 0) eof_ = true;
    end_ += static_cast<std::size_t>(std::max<ssize_t>(n, 0));
  }
}

bool CountersReader::next(CounterRow& row) {
  std::string_view line;
  do {
    if (!next_line(line)) return false;
  } while (line.empty() || line.front() == '#');
  std::string_view fields[6];
  std::size_t count = 0;
  for (std::size_t start = 0;;) {
    if (count == 6) {
      count = 7;  // a seventh field
      break;
    }
    const auto comma = line.find(',', start);
    fields[count++] = line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (count != 6) throw InputError(path_, line_, "expected 6 fields: t_ns,realtime_ns,source,name,value,slow");
  if (!parse_int(fields[0], row.t_ns) || row.t_ns < 0) {
    throw InputError(path_, line_, fmt::format("t_ns '{}' is not a non-negative integer", fields[0]));
  }
  if (!parse_int(fields[1], row.realtime_ns) || row.realtime_ns < 0) {
    throw InputError(path_, line_, fmt::format("realtime_ns '{}' is not a non-negative integer", fields[1]));
  }
  if (fields[2].empty() || fields[3].empty()) throw InputError(path_, line_, "empty source or name");
  row.source = fields[2];
  row.name = fields[3];
  if (!parse_int(fields[4], row.value)) {
    throw InputError(path_, line_, fmt::format("value '{}' is not a non-negative integer", fields[4]));
  }
  if (fields[5] != "0" && fields[5] != "1")
    throw InputError(path_, line_, fmt::format("slow '{}' is not 0 or 1", fields[5]));
  row.slow = fields[5] == "1";
  return true;
}

}  // namespace xtk::capture
