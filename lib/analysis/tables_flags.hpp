// `xtk-analyze tables`' command line, defined once: the flags as a user types
// them, their registration with CLI11 (the tool parses with it), their
// conversion into TablesOptions, and the argv a launcher (xtk-run) renders.
// tests/unit/command_lines_test.cpp round-trips flags -> argv -> flags.
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

struct TablesFlags {
  std::string dir;
  OutputFlags out;
  std::vector<std::string> only;
  std::uint64_t warmup = 0;
  std::string flat_tolerance = "5%", light = "30%", heavy = "80%", fit_n = "auto", models;
  std::size_t tangent_points = 2;

  bool operator==(const TablesFlags&) const = default;
};

// On the `tables` subcommand.
void add_flags(CLI::App& tables, TablesFlags& flags);
// "tables DIR ...": the arguments after `xtk-analyze`.
std::vector<std::string> to_arguments(const TablesFlags& flags);
// Throws UsageError naming the flag (an unknown --table included).
TablesOptions to_options(const TablesFlags& flags);

}  // namespace xtk::analysis
