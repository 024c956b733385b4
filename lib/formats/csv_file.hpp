// The CSV files of the run-directory family (docs/run-directory.md): a magic
// line "# xtk-<kind>", "# format_version=N", "# key=value" header lines, one
// column line, then rows. One strict reader for all of them (each format's
// module gives it its magic and columns), and the number and token parsers
// they share.
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

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/line_reader.hpp"
#include "formats/text_output.hpp"

namespace xtk {

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
  // `older_columns`, when given, is an earlier column line of the same format
  // that is read too: its files have the leading columns only (column_count()).
  RunCsv(std::string_view content, std::string source, std::string_view magic, std::string_view columns,
         std::string_view older_columns = {});
  // The same over a file streamed in constant memory ("-" = stdin): the
  // fields of a row are valid until the next call to next().
  struct File {};
  static constexpr File file{};
  RunCsv(File, const std::string& path, std::string_view magic, std::string_view columns);
  ~RunCsv();
  RunCsv(const RunCsv&) = delete;
  RunCsv& operator=(const RunCsv&) = delete;

  // The value of a `# key=value` header line (format_version is not kept).
  std::optional<std::string_view> header_value(std::string_view key) const;

  bool next();  // the next row; blank and '#' lines are skipped
  std::string_view field(std::size_t i) const { return fields_[i]; }
  std::uint64_t line() const { return lines_.line(); }
  std::size_t column_count() const { return column_count_; }
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
  void read_header(std::string_view magic);

  int fd_ = -1;  // file mode
  std::string source_;
  LineReader lines_;
  std::string_view columns_, older_columns_;
  std::size_t column_count_;
  std::vector<HeaderLine> header_;
  std::vector<std::string_view> fields_;
  std::vector<std::string> unquoted_;  // storage of quoted fields, one per column
  std::uint64_t column_line_ = 0;
};

// The writer side: the magic line, the format version, `# key=value` lines
// and the column line, then rows, handed to the kernel at least every second
// so a run that is killed loses at most its last second.
class RunCsvWriter {
 public:
  // `what` names the file in errors ("the iterations file").
  RunCsvWriter(const std::string& path, std::string_view what, std::string_view magic,
               const std::vector<std::pair<std::string, std::string>>& header, std::string_view columns);
  ~RunCsvWriter();  // closes; an error then is printed, not thrown
  RunCsvWriter(const RunCsvWriter&) = delete;
  RunCsvWriter& operator=(const RunCsvWriter&) = delete;

  // One row, with its newline.
  template <typename... Args>
  void row(fmt::format_string<Args...> format, Args&&... args) {
    out_.print(format, std::forward<Args>(args)...);
    flush_if_due();
  }
  void close();

 private:
  void flush_if_due();
  TextOutput out_;
  std::int64_t last_flush_ns_ = 0;
};

// Strict whole-token number parsing shared by the readers.
bool parse_u64(std::string_view text, std::uint64_t& value);
bool parse_i64(std::string_view text, std::int64_t& value);
bool parse_finite(std::string_view text, double& value);
// A host, counter source or flow label: non-empty, no comma, whitespace or '#'.
bool valid_token(std::string_view text);

}  // namespace xtk
