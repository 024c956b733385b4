#include "collective/sweep_report.hpp"

#include <fmt/format.h>

namespace xtk::collective {
namespace {

// nccl-tests' time column: fewer decimals as the number grows, 7 wide.
std::string time_text(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

nlohmann::json result_json(const SweepResult& r) {
  return {{"time_us", r.time_us},
          {"algbw_gbyte_s", r.algbw_gbyte_s},
          {"busbw_gbyte_s", r.busbw_gbyte_s},
          {"wrong", r.checked ? nlohmann::json(r.wrong) : nlohmann::json()},
          {"per_iteration", r.iteration_us.n > 0 ? r.iteration_us.to_json("_us") : nlohmann::json()}};
}

}  // namespace

// nccl-tests' redop and root columns: "none" and -1 where the collective has neither.
std::string SweepReport::redop() const {
  return std::string(options_.collective->reduces() ? reduce_op_name(options_.op) : "none");
}

int SweepReport::root() const { return options_.collective->rooted() ? static_cast<int>(options_.root) : -1; }

void SweepReport::print_header(std::ostream& out) const {
  info_.print(out);
  const bool by_factor = options_.factor > 1;
  out << fmt::format(
      "# nThread 1 nGpus {} minBytes {} maxBytes {} step: {}({}) warmup iters: {} iters: {} agg iters: 1 validation: "
      "{} graph: 0\n#\n",
      info_.ranks_per_process, options_.min_bytes, options_.max_bytes,
      by_factor ? options_.factor : options_.step_bytes, by_factor ? "factor" : "bytes", options_.warmup,
      options_.iterations, options_.check ? 1 : 0);
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place\n",
                     "", "", "", "", "");
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6} {:>6}  {:>7}  {:>6}  {:>6} {:>6}\n",
                     "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                     "busbw", "#wrong");
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>5}  {:>7}  {:>6}  {:>6}  {:>5}\n",
                     "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  out.flush();
}

void SweepReport::print_row(std::ostream& out, const SweepRow& row) const {
  out << fmt::format("{:12}  {:12}  {:>8}  {:>6}  {:6}", row.bytes, row.count, data_type_name(options_.type), redop(),
                     root());
  for (const auto* r : {&row.out_of_place, &row.in_place}) {
    const std::string wrong = r->checked ? fmt::format("{:5}", r->wrong) : std::string("  N/A");
    out << fmt::format("  {}  {:6.2f}  {:6.2f}  {}", time_text(r->time_us), r->algbw_gbyte_s, r->busbw_gbyte_s, wrong);
  }
  out << '\n';
  out.flush();  // a long sweep shows its progress
}

int SweepReport::failed_results() const {
  int failed = 0;
  for (const auto& row : rows_) {
    for (const auto* r : {&row.out_of_place, &row.in_place}) failed += r->checked && r->wrong > 0 ? 1 : 0;
  }
  return failed;
}

double SweepReport::average_busbw_gbyte_s() const {
  double sum = 0;
  for (const auto& row : rows_) sum += row.out_of_place.busbw_gbyte_s + row.in_place.busbw_gbyte_s;
  return rows_.empty() ? 0.0 : sum / static_cast<double>(2 * rows_.size());
}

void SweepReport::print_footer(std::ostream& out) const {
  const int failed = failed_results();
  out << fmt::format("# {:<20} : {} {}\n", "Out of bounds values", failed, failed > 0 ? "FAILED" : "OK");
  out << fmt::format("# {:<20} : {:.6g} \n#\n", "Avg bus bandwidth", average_busbw_gbyte_s());
  out.flush();
}

nlohmann::json SweepReport::to_json() const {
  auto results = nlohmann::json::array();
  for (const auto& row : rows_) {
    results.push_back({{"size", row.bytes},
                       {"count", row.count},
                       {"type", data_type_name(options_.type)},
                       {"redop", redop()},
                       {"root", root()},
                       {"out_of_place", result_json(row.out_of_place)},
                       {"in_place", result_json(row.in_place)}});
  }
  auto j = info_.to_json();
  j["format_version"] = 1;
  j["collective"] = options_.collective->name();
  j["bus_factor"] = options_.collective->bus_factor_formula();
  j["results"] = results;
  j["out_of_bounds"] = {{"count", failed_results()}, {"okay", failed_results() == 0}};
  j["average_busbw_gbyte_s"] = average_busbw_gbyte_s();
  return j;
}

void SweepReport::write_csv(std::ostream& out) const {
  out << "# xtk-sweep\n# format_version=1\n";
  out << fmt::format("# backend={}\n# ranks={}\n# type={}\n# redop={}\n# iterations={}\n", info_.backend, info_.nranks,
                     data_type_name(options_.type), redop(), options_.iterations);
  out << "collective,size_bytes,count,type,redop,in_place,time_us,algbw_gbps,busbw_gbps,wrong\n";
  for (const auto& row : rows_) {
    for (const bool in_place : {false, true}) {
      const auto& r = in_place ? row.in_place : row.out_of_place;
      // One line per collective in plot.py: the in-place runs are their own series.
      const std::string name(options_.collective->name());
      out << fmt::format("{},{},{},{},{},{},{:.3f},{:.6f},{:.6f},{}\n", in_place ? name + "/in-place" : name, row.bytes,
                         row.count, data_type_name(options_.type), redop(), in_place ? 1 : 0, r.time_us,
                         r.algbw_gbyte_s * 8, r.busbw_gbyte_s * 8, r.checked ? std::to_string(r.wrong) : "");
    }
  }
}

}  // namespace xtk::collective
