// `xtk-analyze tables` and `xtk-analyze spread` command lines, defined once:
// the flags as a user types them, their registration with CLI11 (the tool
// parses with it), their conversion into TablesOptions, and the argv a
// launcher (xtk-run) renders. tests/unit/command_lines_test.cpp round-trips
// flags -> argv -> flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/output.hpp"
#include "analysis/tables.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace xtk::analysis {

// How a step and a series are read: the flags both subcommands take.
struct MethodFlags {
  std::uint64_t warmup = 0;
  std::string flat_tolerance = "5%", models;
  std::size_t tangent_points = 2;

  bool operator==(const MethodFlags&) const = default;
};

struct TablesFlags {
  std::string dir;
  OutputFlags out;
  std::vector<std::string> only;
  MethodFlags method;
  std::string light = "30%", heavy = "80%", fit_n = "auto";

  bool operator==(const TablesFlags&) const = default;
};

struct SpreadFlags {
  std::vector<std::string> dirs;  // two or more runs, or one experiment of repetitions
  OutputFlags out;
  MethodFlags method;

  bool operator==(const SpreadFlags&) const = default;
};

// On the `tables` subcommand.
void add_flags(CLI::App& tables, TablesFlags& flags);
// "tables DIR ...": the arguments after `xtk-analyze`.
std::vector<std::string> to_arguments(const TablesFlags& flags);
// Throws UsageError naming the flag (an unknown --table included).
TablesOptions to_options(const TablesFlags& flags);

// On the `spread` subcommand.
void add_flags(CLI::App& spread, SpreadFlags& flags);
// "spread DIR DIR ...".
std::vector<std::string> to_arguments(const SpreadFlags& flags);
// Throws UsageError naming the flag.
TablesOptions to_options(const SpreadFlags& flags);
// The runs: the directories given, or the repetitions of the one given
// (DIR/rep1, DIR/rep2, ...). Throws UsageError on fewer than two.
std::vector<std::string> spread_runs(const SpreadFlags& flags);

}  // namespace xtk::analysis
