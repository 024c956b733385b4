// libFuzzer target: the run-directory readers of lib/analysis (iterations,
// collectives, flow records in CSV and JSON Lines, counters, trace bins, the
// model table, run.json, a run's congestion_point.csv of tables) and the measured-load code on top
// of them, on arbitrary bytes.
//
// Bad input must end in xtk::Error (InputError); anything else that escapes,
// a sanitizer report, or a row that breaks the invariants below is a bug.
// Run through scripts/fuzz.sh.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "analysis/model_params.hpp"
#include "analysis/run_dir.hpp"
#include "analysis/spread.hpp"
#include "analysis/step.hpp"
#include "core/error.hpp"
#include "core/report.hpp"
#include "formats/collectives.hpp"
#include "formats/counters.hpp"
#include "formats/csv_file.hpp"
#include "formats/flow_records.hpp"
#include "formats/iterations.hpp"
#include "formats/trace_bins.hpp"

namespace {

namespace an = xtk::analysis;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

template <typename F>
void rejected_is_fine(F&& f) {
  try {
    f();
  } catch (const xtk::Error&) {
    // Rejected input: the expected outcome for most bytes.
  }
}

// The whole time line, and a short window.
const an::Window kWindows[] = {{0, std::numeric_limits<std::int64_t>::max()}, {1000, 5'000'000'000}};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  rejected_is_fine([&] {
    std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> last_call;
    xtk::read_collectives(text, "fuzz", 0, [&](const xtk::CollectiveRecord& r) {
      check(r.end_ns >= r.arrive_ns && r.arrive_ns >= 0 && !r.collective.empty());
      check(r.group.empty() || std::find(r.group.begin(), r.group.end(), r.rank) != r.group.end());
      check(std::is_sorted(r.group.begin(), r.group.end()));
      const std::pair<std::uint64_t, std::uint64_t> at{r.iter, r.index};
      const auto [it, first] = last_call.try_emplace(r.rank, at);
      check(first || at > it->second);
      it->second = at;
    });
  });

  rejected_is_fine([&] {
    std::map<std::uint64_t, std::uint64_t> last_iter;
    xtk::read_iterations(text, "fuzz", 0, [&](const xtk::IterationRecord& r) {
      check(r.end_ns >= r.start_ns && r.start_ns >= 0);
      check(std::isfinite(r.iter_us) && r.iter_us > 0);
      check(std::isfinite(r.comm_us) && r.comm_us >= 0);
      const auto [it, first] = last_iter.try_emplace(r.rank, r.iter);
      check(first || r.iter > it->second);
      it->second = r.iter;
    });
  });

  rejected_is_fine([&] {
    an::FlowLoad load;
    load.add_file(text, "fuzz");
    xtk::read_flow_records(text, "fuzz", [&](const xtk::FlowRecord& r) {
      check(r.size_bytes > 0);
      check(r.start_ns >= -1 && r.end_ns >= -1);
      if (r.status == xtk::FlowStatus::ok) check(r.start_ns >= 0 && r.end_ns >= r.start_ns && r.error.empty());
      check(r.fct_us() >= 0);
    });
    for (const auto& window : kWindows) {
      for (const auto zero : {std::optional<std::int64_t>(), std::optional<std::int64_t>(1'700'000'000'000'000'000)}) {
        rejected_is_fine([&] {
          const double bps = load.load_bps(window, zero);
          check(std::isfinite(bps) && bps >= 0);
        });
      }
    }
  });

  rejected_is_fine([&] {
    std::map<std::string, std::int64_t> last;
    xtk::read_counters(text, "fuzz", [&](const xtk::CounterSample& s) {
      const std::string key = std::string(s.source) + "/" + std::string(s.name);
      const auto it = last.find(key);
      if (it != last.end()) check(s.t_ns > it->second);
      last[key] = s.t_ns;
    });
    for (const auto& window : kWindows) {
      rejected_is_fine([&] {
        const double bps = an::counter_load_bps(text, "fuzz", "net:eth0", "tx_bytes", window);
        check(std::isfinite(bps) && bps >= 0);
      });
    }
  });

  rejected_is_fine([&] {
    std::int64_t previous = -1;
    xtk::read_trace_bins(text, "fuzz", [&](const xtk::TraceHeader& h, const xtk::TraceBin& b) {
      check(h.bin_ns > 0);
      check(b.bin_start_ns >= previous);
      previous = b.bin_start_ns;
      check(b.bytes == 0 || b.packets > 0);
      check(!b.flow.empty() && !b.src.empty() && !b.dst.empty());
    });
    for (const auto& window : kWindows) {
      rejected_is_fine([&] {
        an::TraceBins bins(window);
        bins.add(text, "fuzz", true);
        bins.add(text, "fuzz", false);
        const double bps = bins.cross_load_bps();
        check(std::isfinite(bps) && bps >= 0);
        for (const auto& n : bins.nodes("node0")) {
          check(n.train_tx_bps >= 0 && n.train_rx_bps >= 0 && n.cross_bps >= 0);
          check(std::isnan(n.train_tx_p99_bps) || n.train_tx_p99_bps >= 0);
        }
      });
    }
  });

  rejected_is_fine([&] {
    const auto table = an::ModelTable::parse(text, "fuzz");
    for (const auto& m : table.models()) check(m.params > 0 && m.bytes_per_param > 0 && !m.model.empty());
  });

  rejected_is_fine([&] {
    const auto points = an::parse_run_points(text, "fuzz", "run");
    check(points.congestion_point.rows() > 0);
  });

  // The tables' CSV fields: what splits joins back to the same fields.
  if (const auto fields = xtk::split_csv_fields(text)) {
    std::string line;
    for (std::size_t i = 0; i < fields->size(); ++i) {
      if (i > 0) line += ',';
      xtk::append_csv_field(line, (*fields)[i]);
    }
    if (text.find_first_of("\r\n") == std::string::npos) check(xtk::split_csv_fields(line) == fields);
  }

  rejected_is_fine([&] {
    const auto info = an::parse_run_json(text, "fuzz", "d", false);
    check(info.ranks >= 1 && !info.iterations.empty() && info.link_bps > 0 && info.bottleneck.link_bps > 0);
    check(info.profile != "none" || info.load_bps == 0);
  });
  return 0;
}
