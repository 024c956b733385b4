#include "core/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace xtk {

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<Cell> row) {
  if (row.size() != columns_.size()) {
    throw std::logic_error(fmt::format("table row has {} cells for {} columns", row.size(), columns_.size()));
  }
  rows_.push_back(std::move(row));
}

const Cell& Table::at(std::size_t row, std::string_view column) const {
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    if (columns_[c].name == column) return rows_.at(row)[c];
  }
  throw std::logic_error(fmt::format("table has no column '{}'", column));
}

std::string Table::text(const Cell& cell, const Column& column) const {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, double>) {
          return fmt::format("{:.{}f}", v, column.precision);
        } else {
          return fmt::format("{}", v);
        }
      },
      cell);
}

void Table::print(std::ostream& out) const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) width[c] = columns_[c].name.size();
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : rows_) {
    auto& line = cells.emplace_back();
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      line.push_back(text(row[c], columns_[c]));
      width[c] = std::max(width[c], line.back().size());
    }
  }
  out << '#';
  for (std::size_t c = 0; c < columns_.size(); ++c) out << fmt::format(" {:>{}}", columns_[c].name, width[c]);
  out << '\n';
  for (const auto& line : cells) {
    out << ' ';
    for (std::size_t c = 0; c < columns_.size(); ++c) out << fmt::format(" {:>{}}", line[c], width[c]);
    out << '\n';
  }
}

std::optional<std::vector<std::string>> split_csv_fields(std::string_view line) {
  std::vector<std::string> fields;
  std::size_t i = 0;
  while (true) {
    std::string field;
    if (i < line.size() && line[i] == '"') {
      for (++i;; ++i) {
        if (i >= line.size()) return std::nullopt;  // no closing quote
        if (line[i] != '"') {
          field += line[i];
        } else if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          ++i;
          break;
        }
      }
      if (i < line.size() && line[i] != ',') return std::nullopt;  // text after the closing quote
    } else {
      const std::size_t end = std::min(line.find(',', i), line.size());
      field.assign(line.substr(i, end - i));
      i = end;
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) return fields;
    ++i;  // the comma
  }
}

char* put_csv_field(char* at, std::string_view text) {
  // One pass over the text (find_first_of makes one memchr call per character).
  const auto special = [](char c) { return c == ',' || c == '"' || c == '\n' || c == '\r'; };
  if (std::none_of(text.begin(), text.end(), special)) {
    std::memcpy(at, text.data(), text.size());
    return at + text.size();
  }
  *at++ = '"';
  for (char c : text) {
    if (c == '"') *at++ = '"';
    *at++ = c == '\n' || c == '\r' ? ' ' : c;
  }
  *at++ = '"';
  return at;
}

void append_csv_field(std::string& out, std::string_view text) {
  const std::size_t before = out.size();
  out.resize(before + csv_field_room(text.size()));
  out.resize(static_cast<std::size_t>(put_csv_field(out.data() + before, text) - out.data()));
}

void Table::write_csv(std::ostream& out) const {
  std::string line;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    if (c > 0) line += ',';
    append_csv_field(line, columns_[c].name);
  }
  out << line << '\n';
  for (const auto& row : rows_) {
    line.clear();
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      if (c > 0) line += ',';
      append_csv_field(line, text(row[c], columns_[c]));
    }
    out << line << '\n';
  }
}

nlohmann::json Table::to_json() const {
  auto rows = nlohmann::json::array();
  for (const auto& row : rows_) {
    nlohmann::json object;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      std::visit([&](const auto& v) { object[columns_[c].name] = v; }, row[c]);
    }
    rows.push_back(std::move(object));
  }
  return rows;
}

}  // namespace xtk
