#include "formats/csv_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace xtk {

std::string read_text_file(const std::string& path, std::string_view what) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw Error(fmt::format("{}: cannot read {}: {}", path, what, std::strerror(errno)));
  std::string text;
  char buffer[1 << 16];
  std::size_t n = 0;
  do {  // a short read is the end of the file or an error: no read after it
    n = std::fread(buffer, 1, sizeof buffer, file.get());
    text.append(buffer, n);
  } while (n == sizeof buffer);
  if (std::ferror(file.get()) != 0)
    throw Error(fmt::format("{}: cannot read {}: {}", path, what, std::strerror(errno)));
  return text;
}

bool parse_u64(std::string_view text, std::uint64_t& value) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

bool parse_i64(std::string_view text, std::int64_t& value) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

bool parse_finite(std::string_view text, double& value) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(value);
}

bool valid_token(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\t' || c == '#' || c == '\r' || c == '\n') return false;
  }
  return true;
}

RunCsv::RunCsv(std::string_view content, std::string source, std::string_view magic, std::string_view columns,
               std::string_view older_columns)
    : source_(std::move(source)),
      lines_(content),
      columns_(columns),
      older_columns_(older_columns),
      column_count_(static_cast<std::size_t>(std::count(columns.begin(), columns.end(), ',')) + 1),
      fields_(column_count_),
      unquoted_(column_count_) {
  read_header(magic);
}

namespace {
int open_for_reading(const std::string& path) {
  const int fd = path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  return fd;
}
}  // namespace

RunCsv::RunCsv(File /*tag*/, const std::string& path, std::string_view magic, std::string_view columns)
    : fd_(open_for_reading(path)),
      source_(path),
      lines_(fd_, path),
      columns_(columns),
      column_count_(static_cast<std::size_t>(std::count(columns.begin(), columns.end(), ',')) + 1),
      fields_(column_count_),
      unquoted_(column_count_) {
  try {
    read_header(magic);
  } catch (...) {
    if (fd_ > STDIN_FILENO) ::close(fd_);
    throw;
  }
}

RunCsvWriter::RunCsvWriter(const std::string& path, std::string_view what, std::string_view magic,
                           const std::vector<std::pair<std::string, std::string>>& header, std::string_view columns)
    : out_(path, what) {
  out_.print("# {}\n# format_version={}\n", magic, kRunFilesFormatVersion);
  for (const auto& [key, value] : header) out_.print("# {}={}\n", key, value);
  out_.print("{}\n", columns);
  out_.flush();
  last_flush_ns_ = monotonic_ns();
}

RunCsvWriter::~RunCsvWriter() {
  try {
    close();
  } catch (const Error& e) {
    std::fprintf(stderr, "xtk: %s\n", e.what());
  }
}

void RunCsvWriter::flush_if_due() {
  const std::int64_t now = monotonic_ns();
  if (now - last_flush_ns_ >= 1'000'000'000) {
    out_.flush();
    last_flush_ns_ = now;
  }
}

void RunCsvWriter::close() { out_.close(); }

RunCsv::~RunCsv() {
  if (fd_ > STDIN_FILENO) ::close(fd_);
}

void RunCsv::read_header(std::string_view magic) {
  const std::string magic_line = fmt::format("# {}", magic);
  std::string_view line;
  if (!lines_.next(line)) {
    throw InputError(source_, 0,
                     fmt::format("empty file: not an {} file (the first line must be '{}')", magic, magic_line));
  }
  if (without_byte_order_mark(line) != magic_line) {
    fail(fmt::format("not an {} file: the first line must be '{}'", magic, magic_line));
  }
  std::uint64_t versioned = 0;  // the format_version line's number
  while (lines_.next(line)) {
    if (line.empty()) continue;
    if (line.front() != '#') {
      if (versioned == 0) fail("no '# format_version=N' line before the column line");
      if (!older_columns_.empty() && line == older_columns_) {
        columns_ = older_columns_;  // the file's columns, for messages
        column_count_ = static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')) + 1;
        fields_.resize(column_count_);
        unquoted_.resize(column_count_);
      } else if (line != columns_) {
        fail(fmt::format("expected the column line '{}'", columns_));
      }
      column_line_ = lines_.line();
      return;
    }
    line.remove_prefix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    const auto eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;  // free-form comment
    const std::string_view key = line.substr(0, eq);
    const std::string_view value = line.substr(eq + 1);
    if (key == "format_version") {
      if (versioned > 0) fail(fmt::format("header key 'format_version' is given twice (first on line {})", versioned));
      std::uint64_t version = 0;
      if (!parse_u64(value, version)) fail(fmt::format("format_version '{}' is not a number", value));
      if (version != kRunFilesFormatVersion) {
        fail(fmt::format("format_version {} is not supported (this xtk reads version {})", version,
                         kRunFilesFormatVersion));
      }
      versioned = lines_.line();
      continue;
    }
    for (const auto& h : header_) {
      if (h.key == key) fail(fmt::format("header key '{}' is given twice (first on line {})", key, h.line));
    }
    header_.push_back({std::string(key), std::string(value), lines_.line()});
  }
  fail(fmt::format("no column line: the header must end with '{}'", columns_));
}

std::optional<std::string_view> RunCsv::header_value(std::string_view key) const {
  for (const auto& h : header_) {
    if (h.key == key) return std::string_view(h.value);
  }
  return std::nullopt;
}

void RunCsv::fail_header(std::string_view key, std::string_view what) const {
  for (const auto& h : header_) {
    if (h.key == key) throw InputError(source_, h.line, what);
  }
  throw InputError(source_, column_line_, what);
}

bool RunCsv::next() {
  std::string_view line;
  while (lines_.next(line)) {
    if (line.empty() || line.front() == '#') continue;
    std::size_t n = 0, pos = 0;
    while (true) {
      if (n == column_count_) fail(fmt::format("more than {} fields (columns: {})", column_count_, columns_));
      if (pos < line.size() && line[pos] == '"') {
        std::string& text = unquoted_[n];
        text.clear();
        std::size_t i = pos + 1;
        while (true) {
          if (i >= line.size()) fail(fmt::format("field {} has no closing quote", n + 1));
          if (line[i] == '"') {
            if (i + 1 < line.size() && line[i + 1] == '"') {
              text += '"';
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          text += line[i++];
        }
        if (i < line.size() && line[i] != ',') fail(fmt::format("field {} has text after its closing quote", n + 1));
        fields_[n++] = text;
        if (i >= line.size()) break;
        pos = i + 1;
        continue;
      }
      const auto comma = line.find(',', pos);
      fields_[n++] = line.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
    if (n != column_count_) fail(fmt::format("{} fields, expected {} (columns: {})", n, column_count_, columns_));
    return true;
  }
  return false;
}

void RunCsv::fail(std::string_view what) const { throw InputError(source_, line(), what); }

std::uint64_t RunCsv::unsigned_field(std::size_t i, std::string_view name) const {
  std::uint64_t value = 0;
  if (!parse_u64(fields_[i], value)) fail(fmt::format("{} '{}' is not a non-negative integer", name, fields_[i]));
  return value;
}

std::int64_t RunCsv::time_field(std::size_t i, std::string_view name) const {
  std::int64_t value = 0;
  if (!parse_i64(fields_[i], value) || value < 0) {
    fail(fmt::format("{} '{}' is not a non-negative integer of nanoseconds", name, fields_[i]));
  }
  return value;
}

double RunCsv::number_field(std::size_t i, std::string_view name) const {
  double value = 0;
  if (!parse_finite(fields_[i], value)) fail(fmt::format("{} '{}' is not a number", name, fields_[i]));
  return value;
}

std::string_view RunCsv::token_field(std::size_t i, std::string_view name) const {
  if (!valid_token(fields_[i])) fail(fmt::format("{} '{}' is empty or has spaces or '#'", name, fields_[i]));
  return fields_[i];
}

}  // namespace xtk
