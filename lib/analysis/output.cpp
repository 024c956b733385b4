#include "analysis/output.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/cli.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "formats/csv_file.hpp"

namespace xtk::analysis {
namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    cells.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return cells;
    start = comma + 1;
  }
}

// Markdown from the table's CSV text (cells never hold commas: they are
// numbers and tokens); numeric columns are right-aligned.
void print_markdown(const Table& table, std::ostream& out) {
  std::ostringstream csv;
  table.write_csv(csv);
  std::istringstream lines(csv.str());
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(split_csv_line(line));
  if (rows.empty()) return;
  std::vector<bool> numeric(rows.front().size(), true);
  for (std::size_t r = 1; r < rows.size(); ++r) {
    for (std::size_t c = 0; c < rows[r].size(); ++c) {
      double value = 0;
      if (rows[r][c] != "nan" && !parse_finite(rows[r][c], value)) numeric[c] = false;
    }
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    out << '|';
    for (const auto& cell : cells) out << ' ' << cell << " |";
    out << '\n';
  };
  print_row(rows.front());
  out << '|';
  for (bool right : numeric) out << (right ? "---:|" : "---|");
  out << '\n';
  for (std::size_t r = 1; r < rows.size(); ++r) print_row(rows[r]);
}

}  // namespace

void print_tables(const std::vector<NamedTable>& tables, std::ostream& out, TextFormat format, bool print_bulky) {
  bool first = true;
  for (const auto& t : tables) {
    if (!first) out << '\n';
    first = false;
    if (format == TextFormat::csv) {
      out << "# " << t.name << '\n';
      t.table.write_csv(out);
      continue;
    }
    out << (format == TextFormat::markdown ? "## " : "== ") << t.title << " (" << t.name << ")\n";
    if (format == TextFormat::markdown) out << '\n';
    if (t.bulky && !print_bulky) {
      out << fmt::format("{} rows: written by -o DIR, --csv and --json, or shown with --table {}\n", t.table.rows(),
                         t.name);
      continue;
    }
    if (t.table.rows() == 0) {
      out << "(no rows)\n";
      continue;
    }
    if (format == TextFormat::markdown) {
      print_markdown(t.table, out);
      if (!t.notes.empty()) out << '\n';
    } else {
      t.table.print(out);
    }
    for (const auto& note : t.notes) out << (format == TextFormat::markdown ? "- " : "# note: ") << note << '\n';
  }
}

std::vector<std::string> write_csv_files(const std::vector<NamedTable>& tables, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  std::vector<std::string> paths;
  for (const auto& t : tables) {
    const std::string path = (std::filesystem::path(dir) / (t.name + ".csv")).string();
    std::ofstream out(path, std::ios::binary);
    if (!out) throw Error(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
    t.table.write_csv(out);
    out.close();
    if (!out) throw Error(fmt::format("{}: write failed", path));
    paths.push_back(path);
  }
  return paths;
}

nlohmann::json tables_json(const std::vector<NamedTable>& tables) {
  nlohmann::json doc;
  doc["format_version"] = kTablesJsonFormatVersion;
  doc["tables"] = nlohmann::json::object();
  for (const auto& t : tables) doc["tables"][t.name] = t.table.to_json();
  return doc;
}

void add_flags(CLI::App& app, OutputFlags& flags) {
  app.add_option("-o,--out", flags.dir, "also write each table to DIR/<table>.csv");
  auto* json = app.add_flag("--json", flags.json, "print one JSON document instead of the tables");
  auto* csv = app.add_flag("--csv", flags.csv, "print the tables as CSV, each under a '# <table>' line");
  auto* markdown = app.add_flag("--markdown", flags.markdown, "print Markdown tables (for papers and READMEs)");
  json->excludes(csv)->excludes(markdown);
  csv->excludes(markdown);
}

void add_arguments(Arguments& arguments, const OutputFlags& flags) {
  arguments.option("--out", flags.dir, std::string())
      .flag("--json", flags.json)
      .flag("--csv", flags.csv)
      .flag("--markdown", flags.markdown);
}

void emit(const std::vector<NamedTable>& tables, const OutputFlags& flags, bool print_bulky) {
  if (!flags.dir.empty()) {
    const auto paths = write_csv_files(tables, flags.dir);
    std::cerr << fmt::format("xtk-analyze: wrote {} CSV files to {}\n", paths.size(), flags.dir);
  }
  if (flags.json) {
    std::cout << with_provenance(tables_json(tables)).dump() << '\n';
  } else if (flags.csv) {
    print_tables(tables, std::cout, TextFormat::csv, true);
  } else {
    print_tables(tables, std::cout, flags.markdown ? TextFormat::markdown : TextFormat::aligned, print_bulky);
  }
}

}  // namespace xtk::analysis
