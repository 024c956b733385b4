// Straggler attribution from the collectives files: for every collective call
// (one DDP bucket's all-reduce in one iteration; in a replay, a sub-group's
// call or a send and its recv among the ranks that met), which rank arrived last and
// by how much, and what the others spent waiting for it. A slow rank shows as
// one rank last most of the time with a wide arrival spread; a slow network as
// a long transfer after everyone arrived, whoever came last (docs/analysis.md,
// table 8).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/report.hpp"

namespace xtk::analysis {

struct StragglerRank {
  std::uint64_t rank = 0;
  std::uint64_t calls = 0;  // calls it was in (all of them, unless the job ran sub-groups or sends)
  std::uint64_t last = 0;   // calls at which it arrived last
  double last_by_us = 0;    // mean, over those calls, of its arrival after the next-latest rank's
  double wait_us = 0;       // mean, over its calls, of the last arrival minus its own
};

struct Stragglers {
  std::uint64_t calls = 0;       // calls that every rank of their group recorded
  std::uint64_t iterations = 0;  // iterations with their calls complete
  std::vector<StragglerRank> ranks;
  double spread_p50_us = 0, spread_p99_us = 0;  // last arrival minus the first, per call
  double transfer_p50_us = 0;                   // the last end minus the last arrival, per call
  // Per iteration, the arrival spread at its final call over the iteration's
  // time (from the previous iteration's last end to its own): the share of the
  // iteration the earliest rank stood waiting for the last. Mean; NaN when no
  // iteration follows another.
  double lost_share = 0;
};

// Reads the collectives files (one or several per job; a rank lives in one
// file) and attributes every call. Iterations below `warmup` are left out;
// `calls` is 0 when no call is left that every rank recorded. Throws
// InputError naming the file and line.
Stragglers read_stragglers(const std::vector<std::string>& paths, std::uint64_t ranks, std::uint64_t warmup);

inline constexpr const char* kStragglerTableTitle = "8. Stragglers: who arrived last at each collective call";

// Table 8's columns after `leading` (the step's), and one row per rank.
std::vector<Column> straggler_columns(std::vector<Column> leading);
void add_straggler_rows(Table& table, const std::vector<Cell>& leading, const Stragglers& s);

}  // namespace xtk::analysis
