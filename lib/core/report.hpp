// One way to report: a human table on stdout and the same rows as CSV or JSON.
// Column names carry their units (_us, _bytes, _gbps) so files explain themselves.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace xtk {

using Cell = std::variant<std::string, std::int64_t, std::uint64_t, double>;

struct Column {
  std::string name;
  int precision = 3;  // digits after the point for doubles
};

// Writes one CSV field at `at`, which has room for csv_field_room(text.size())
// characters, and returns its end: as it is, or in double quotes (RFC 4180,
// quotes doubled, line breaks as spaces) when it holds a comma, quote or line
// break.
char* put_csv_field(char* at, std::string_view text);
constexpr std::size_t csv_field_room(std::size_t text_size) { return 2 * text_size + 2; }
// Appends one CSV field to `out`, as put_csv_field writes it.
void append_csv_field(std::string& out, std::string_view text);
// Its inverse for one line: the fields, quotes undone. nullopt when a quoted
// field does not close, or text follows its closing quote.
std::optional<std::vector<std::string>> split_csv_fields(std::string_view line);

class Table {
 public:
  explicit Table(std::vector<Column> columns);
  void add_row(std::vector<Cell> row);  // throws std::logic_error on a width mismatch
  std::size_t rows() const { return rows_.size(); }
  // A cell by row and column name, for a table built on another's figures;
  // throws std::logic_error on a column the table does not have.
  const Cell& at(std::size_t row, std::string_view column) const;

  void print(std::ostream& out) const;      // aligned, '#'-prefixed header line
  void write_csv(std::ostream& out) const;  // header line then rows (text quoted as append_csv_field does)
  nlohmann::json to_json() const;           // array of objects keyed by column name

 private:
  std::string text(const Cell& cell, const Column& column) const;
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
};

}  // namespace xtk
