#include "analysis/spread.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "core/stats.hpp"

namespace xtk::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double number(const Table& t, std::size_t row, std::string_view column) {
  const Cell& cell = t.at(row, column);
  if (const auto* d = std::get_if<double>(&cell)) return *d;
  if (const auto* u = std::get_if<std::uint64_t>(&cell)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return static_cast<double>(*i);
  return kNaN;
}

const std::string& text(const Table& t, std::size_t row, std::string_view column) {
  return std::get<std::string>(t.at(row, column));
}

// One series (model and profile) over the runs.
struct SeriesRuns {
  std::string model, profile;
  double theory_bytes = 0;
  std::string theory_run;  // the run that gave theory_bytes first
  std::uint64_t runs = 0;
  // Of the runs that found a point.
  std::vector<double> load_gbps, emulated_load_gbps, diff_pct, intersection_diff_pct;
};

struct Spread {
  double median = kNaN, least = kNaN, most = kNaN;
};

Spread spread_of(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  return {percentile_sorted(values, 0.5), values.front(), values.back()};
}

// Data per iteration as a multiple of the theoretical demand D, as the docs quote it.
double times_d(double diff_pct) { return 1 + diff_pct / 100; }

constexpr const char* kPointsFile = "congestion_point.csv";
// What the spread reads of table 3: its text columns, then its figures.
constexpr std::array<std::string_view, 3> kTextColumns{"model", "profile", "status"};
constexpr std::array<std::string_view, 8> kNumberColumns{"load_gbps",
                                                         "mean_us",
                                                         "data_per_iter_bytes",
                                                         "theory_bytes",
                                                         "diff_pct",
                                                         "intersection_load_gbps",
                                                         "intersection_diff_pct",
                                                         "emulated_load_gbps"};

}  // namespace

RunPoints run_points(const Experiment& run, const TablesOptions& options) {
  for (auto& named : make_tables(run, options)) {
    if (named.name == "congestion_point") return {run.dir, std::move(named.table)};
  }
  throw std::logic_error("make_tables made no congestion_point table");
}

bool is_tables_dir(const std::string& dir) { return std::filesystem::exists(std::filesystem::path(dir) / kPointsFile); }

RunPoints read_run_points(const std::string& tables_dir) {
  const std::string path = (std::filesystem::path(tables_dir) / kPointsFile).string();
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open it");
  std::stringstream text;
  text << in.rdbuf();
  return parse_run_points(text.str(), path, tables_dir);
}

RunPoints parse_run_points(const std::string& content, const std::string& path, const std::string& run) {
  std::istringstream in(content);
  std::vector<Column> columns;
  columns.reserve(kTextColumns.size() + kNumberColumns.size());
  for (auto name : kTextColumns) columns.push_back({std::string(name)});
  for (auto name : kNumberColumns) columns.push_back({std::string(name)});
  RunPoints points{run, Table(columns)};
  std::vector<std::size_t> where(columns.size());  // each column's field in the file
  std::string text;
  for (std::uint64_t line = 1; std::getline(in, text); ++line) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    const auto fields = split_csv_fields(text);
    if (!fields) throw InputError(path, line, "a quoted field does not close where it should");
    if (line == 1) {
      for (std::size_t c = 0; c < columns.size(); ++c) {
        const auto at = std::find(fields->begin(), fields->end(), columns[c].name);
        if (at == fields->end()) {
          throw InputError(
              path, 1,
              fmt::format("no column '{}': not the {} of xtk-analyze tables -o", columns[c].name, kPointsFile));
        }
        where[c] = static_cast<std::size_t>(at - fields->begin());
      }
      continue;
    }
    if (text.empty()) continue;
    std::vector<Cell> row;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (where[c] >= fields->size()) throw InputError(path, line, fmt::format("no {} field", columns[c].name));
      const std::string& field = (*fields)[where[c]];
      if (c < kTextColumns.size()) {
        row.emplace_back(field);
        continue;
      }
      double value = 0;
      const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
      if (error != std::errc() || end != field.data() + field.size()) {
        throw InputError(path, line, fmt::format("{} '{}' is not a number", columns[c].name, field));
      }
      row.emplace_back(value);
    }
    points.congestion_point.add_row(std::move(row));
  }
  if (points.congestion_point.rows() == 0) throw InputError(path, 0, "no series: table 3 of that run is empty");
  return points;
}

std::vector<NamedTable> spread_tables(const std::vector<RunPoints>& runs) {
  Table per_run({{"run"},
                 {"model"},
                 {"profile"},
                 {"status"},
                 {"load_gbps", 3},
                 {"mean_us", 1},
                 {"data_per_iter_bytes", 0},
                 {"theory_bytes", 0},
                 {"diff_pct", 1},
                 {"intersection_load_gbps", 3},
                 {"intersection_diff_pct", 1},
                 {"emulated_load_gbps", 3}});
  std::vector<SeriesRuns> series;  // in the order first met
  for (const RunPoints& run : runs) {
    const Table& t = run.congestion_point;
    for (std::size_t row = 0; row < t.rows(); ++row) {
      const std::string& model = text(t, row, "model");
      const std::string& profile = text(t, row, "profile");
      const std::string& status = text(t, row, "status");
      const double theory = number(t, row, "theory_bytes");
      per_run.add_row({run.run, model, profile, status, number(t, row, "load_gbps"), number(t, row, "mean_us"),
                       number(t, row, "data_per_iter_bytes"), theory, number(t, row, "diff_pct"),
                       number(t, row, "intersection_load_gbps"), number(t, row, "intersection_diff_pct"),
                       number(t, row, "emulated_load_gbps")});
      auto s = std::find_if(series.begin(), series.end(),
                            [&](const SeriesRuns& x) { return x.model == model && x.profile == profile; });
      if (s == series.end()) {
        SeriesRuns first;
        first.model = model;
        first.profile = profile;
        first.theory_bytes = theory;
        first.theory_run = run.run;
        s = series.insert(series.end(), std::move(first));
      } else if (std::abs(s->theory_bytes - theory) > std::max(1.0, 1e-9 * s->theory_bytes)) {  // a CSV's: whole bytes
        throw InputError(run.run, 0,
                         fmt::format("{}'s theoretical data per iteration is {:.0f} bytes here and {:.0f} in {}: "
                                     "the runs are not of one experiment (model, ranks and emulation must agree)",
                                     model, theory, s->theory_bytes, s->theory_run));
      }
      ++s->runs;
      if (status != "ok") continue;
      s->load_gbps.push_back(number(t, row, "load_gbps"));
      s->emulated_load_gbps.push_back(number(t, row, "emulated_load_gbps"));
      s->diff_pct.push_back(number(t, row, "diff_pct"));
      s->intersection_diff_pct.push_back(number(t, row, "intersection_diff_pct"));
    }
  }

  // Two decimals: a reader of the CSV (analysis/plot.py spread) gets D's multiple, 1 + pct / 100, to
  // the notes' two places.
  Table spread({{"model"},
                {"profile"},
                {"runs"},
                {"points"},
                {"load_gbps_median", 3},
                {"load_gbps_min", 3},
                {"load_gbps_max", 3},
                {"diff_pct_median", 2},
                {"diff_pct_min", 2},
                {"diff_pct_max", 2},
                {"intersection_diff_pct_median", 2},
                {"intersection_diff_pct_min", 2},
                {"intersection_diff_pct_max", 2},
                {"emulated_load_gbps_median", 3},
                {"emulated_load_gbps_min", 3},
                {"emulated_load_gbps_max", 3},
                {"theory_bytes", 0}});
  std::vector<std::string> notes;
  for (const auto& s : series) {
    const Spread load = spread_of(s.load_gbps), diff = spread_of(s.diff_pct), knee = spread_of(s.intersection_diff_pct),
                 emulated = spread_of(s.emulated_load_gbps);
    const auto points = static_cast<std::uint64_t>(s.diff_pct.size());
    spread.add_row({s.model, s.profile, s.runs, points, load.median, load.least, load.most, diff.median, diff.least,
                    diff.most, knee.median, knee.least, knee.most, emulated.median, emulated.least, emulated.most,
                    s.theory_bytes});
    if (points == 0) {
      notes.push_back(fmt::format("{} {}: no run of {} found a congestion point (congestion_point_runs says why)",
                                  s.model, s.profile, s.runs));
      continue;
    }
    notes.push_back(fmt::format(
        "{} {}: {} of {} runs found a point; data per iteration there {:.2f} times D (median; {:.2f}-{:.2f}), at "
        "the knee {:.2f} ({:.2f}-{:.2f})",
        s.model, s.profile, points, s.runs, times_d(diff.median), times_d(diff.least), times_d(diff.most),
        times_d(knee.median), times_d(knee.least), times_d(knee.most)));
  }
  std::vector<NamedTable> tables;
  tables.push_back({"congestion_point_runs", "3r. Congestion point of each run (table 3 of each)", std::move(per_run)});
  tables.push_back({"congestion_point_spread",
                    fmt::format("3s. Congestion point over {} runs: median, least and most", runs.size()),
                    std::move(spread), false, std::move(notes)});
  return tables;
}

}  // namespace xtk::analysis
