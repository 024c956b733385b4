// How xtk-analyze subcommands report: named tables printed for people (aligned
// text or Markdown), or for programs (CSV or one JSON document) on stdout, and
// written as one CSV file each under -o DIR. The output flags mean the same in
// every xtk tool (docs/formats.md, "Output flags").
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "core/report.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace xtk {
class Arguments;
}

namespace xtk::analysis {

inline constexpr int kTablesJsonFormatVersion = 1;

struct NamedTable {
  std::string name;   // file stem and JSON key: "iteration_time"
  std::string title;  // heading for people
  Table table;
  // Too long to read on a terminal (a CDF): text output prints a pointer to
  // the CSV/JSON instead of its rows, unless asked for by name.
  bool bulky = false;
  // Lines printed under the table for people (text and markdown): what its
  // rows cannot say, such as a figure to distrust. CSV and JSON leave them out.
  std::vector<std::string> notes{};
};

// CSV: each table under a "# <name>" line, a blank line between tables.
enum class TextFormat { aligned, markdown, csv };

void print_tables(const std::vector<NamedTable>& tables, std::ostream& out, TextFormat format, bool print_bulky);
// DIR/<name>.csv for each table; creates DIR. Returns the paths written.
std::vector<std::string> write_csv_files(const std::vector<NamedTable>& tables, const std::string& dir);
// {"format_version": 1, "tables": {"<name>": [row objects]}}
nlohmann::json tables_json(const std::vector<NamedTable>& tables);

struct OutputFlags {
  std::string dir;  // -o: DIR/<table>.csv
  bool json = false, csv = false, markdown = false;

  bool operator==(const OutputFlags&) const = default;
};

void add_flags(CLI::App& app, OutputFlags& flags);
void add_arguments(Arguments& arguments, const OutputFlags& flags);
// The tables to stdout in the chosen format, and to -o DIR. Bulky tables are
// printed in full only when `print_bulky` (asked for by name) or as CSV/JSON.
void emit(const std::vector<NamedTable>& tables, const OutputFlags& flags, bool print_bulky);

}  // namespace xtk::analysis
