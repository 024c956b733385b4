// The sweep's outputs: nccl-tests' table (all_reduce_perf's and the others') (same columns, same
// units, so its parsers keep working), a JSON document (--json) with the
// per-iteration spread and the devices, and the `# xtk-sweep` CSV (--csv)
// that analysis/plot.py reads (docs/run-directory.md; bandwidths in Gbit/s).
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "collective/run_info.hpp"
#include "collective/sweep.hpp"

namespace xtk::collective {

class SweepReport {
 public:
  SweepReport(const SweepOptions& options, const RunInfo& info) : options_(options), info_(info) {}

  void print_header(std::ostream& out) const;
  void print_row(std::ostream& out, const SweepRow& row) const;
  void print_footer(std::ostream& out) const;
  void add(const SweepRow& row) { rows_.push_back(row); }

  // Results with wrong elements (nccl-tests' "Out of bounds values").
  int failed_results() const;
  double average_busbw_gbyte_s() const;  // GB/s, over every row, both modes
  nlohmann::json to_json() const;
  void write_csv(std::ostream& out) const;

 private:
  std::string redop() const;
  int root() const;
  SweepOptions options_;
  RunInfo info_;
  std::vector<SweepRow> rows_;
};

}  // namespace xtk::collective
