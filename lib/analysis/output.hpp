// How xtk-analyze subcommands report: named tables printed for people (aligned
// text or Markdown), written as one CSV file each, or as one JSON document.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "core/report.hpp"

namespace xtk::analysis {

inline constexpr int kTablesJsonFormatVersion = 1;

struct NamedTable {
  std::string name;   // file stem and JSON key: "iteration_time"
  std::string title;  // heading for people
  Table table;
  // Too long to read on a terminal (a CDF): text output prints a pointer to
  // the CSV/JSON instead of its rows, unless asked for by name.
  bool bulky = false;
};

enum class TextFormat { aligned, markdown };

void print_tables(const std::vector<NamedTable>& tables, std::ostream& out, TextFormat format, bool print_bulky);
// DIR/<name>.csv for each table; creates DIR. Returns the paths written.
std::vector<std::string> write_csv_files(const std::vector<NamedTable>& tables, const std::string& dir);
// {"format_version": 1, "tables": {"<name>": [row objects]}}
nlohmann::json tables_json(const std::vector<NamedTable>& tables);

}  // namespace xtk::analysis
