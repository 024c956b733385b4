#include "collective/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "collective/pattern.hpp"
#include "collective/sizes.hpp"
#include "collective/train.hpp"
#include "core/units.hpp"

namespace xtk::collective {
namespace {

// This process's measurement of one size and mode.
struct Local {
  double seconds_per_iteration = 0;
  std::vector<double> iteration_seconds;
  std::uint64_t wrong = 0;
  std::vector<std::vector<std::int64_t>> bounds_ns;  // this process's only: not sent to rank 0
};

// A result a collective did not write stays wrong: no pattern value is 0x7F bytes.
constexpr unsigned char kPoison = 0x7F;

// The wrong elements of one call of `count` elements, checked on the host.
// `host`: room for the largest size's check, reused (a fresh gigabyte per size
// costs more in page clearing than the check itself).
std::uint64_t check_once(const SweepOptions& o, Backend& backend, Job& job, std::size_t count, bool in_place,
                         std::vector<char>& host) {
  const Collective& collective = *o.collective;
  const std::size_t element = data_type_size(o.type);
  const Counts counts = collective.counts(count, job.nranks(), element);
  const std::size_t locals = backend.local_devices().size();
  job.progress().set_where(fmt::format("checking {} at {} {}", collective.name(),
                                       format_bytes(static_cast<double>(counts.span() * element)),
                                       in_place ? "in place" : "out of place"));
  // Collectives that only move data check it with any operation's pattern.
  const DataPattern pattern(o.type, collective.reduces() ? o.op : ReduceOp::sum, job.nranks());
  for (std::size_t i = 0; i < locals; ++i) {
    const std::uint32_t rank = job.first_rank() + static_cast<std::uint32_t>(i);
    backend.poison(i, kPoison);
    pattern.fill(rank, counts.send, host.data());
    backend.write(i, in_place, in_place ? counts.send_in_place * rank * element : 0, host.data(),
                  counts.send * element);
  }
  backend.run(CollectiveCall{&collective, o.type, o.op, count, o.root, in_place}, 1, false, false);
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < locals; ++i) {
    const std::uint32_t rank = job.first_rank() + static_cast<std::uint32_t>(i);
    backend.read(i, in_place ? counts.recv_in_place * rank * element : 0, host.data(), counts.recv * element);
    wrong += count_wrong_output(collective, pattern, counts, rank, job.nranks(), o.root, host.data(), element);
  }
  return wrong;
}

Local time_once(const SweepOptions& o, Backend& backend, Job& job, std::size_t count, bool in_place) {
  const Collective& collective = *o.collective;
  const std::size_t element = data_type_size(o.type);
  const CollectiveCall call{&collective, o.type, o.op, count, o.root, in_place};
  job.progress().set_where(
      fmt::format("in the {} sweep at {} {}", collective.name(),
                  format_bytes(static_cast<double>(collective.counts(count, job.nranks(), element).span() * element)),
                  in_place ? "in place" : "out of place"));
  job.barrier("the barrier before a timed run");
  // One untimed call right before the timed ones: it lines the ranks up to
  // the collective's own precision (the barrier is a TCP round trip).
  backend.run(call, 1, false, false);
  const TimedRun run = backend.run(call, o.iterations, true, o.per_iteration);
  Local local;
  local.seconds_per_iteration = run.wall_seconds / o.iterations;
  local.iteration_seconds = run.iteration_seconds;
  local.bounds_ns = run.bounds_ns;
  return local;
}

// algbw from `algbw_bytes` (Collective::algbw_elements x element size) and busbw = algbw x `bus_factor`.
SweepResult combine(const SweepOptions& o, const std::vector<Local>& all, std::uint64_t algbw_bytes,
                    double bus_factor) {
  SweepResult r;
  double seconds = all.front().seconds_per_iteration;
  if (o.rank_time != RankTime::rank0) {
    double sum = 0, low = seconds, high = seconds;
    for (const auto& l : all) {
      sum += l.seconds_per_iteration;
      low = std::min(low, l.seconds_per_iteration);
      high = std::max(high, l.seconds_per_iteration);
    }
    seconds = o.rank_time == RankTime::mean  ? sum / static_cast<double>(all.size())
              : o.rank_time == RankTime::min ? low
                                             : high;
  }
  r.time_us = seconds * 1e6;
  r.algbw_gbyte_s = algbw_gbyte_s(algbw_bytes, seconds);
  r.busbw_gbyte_s = r.algbw_gbyte_s * bus_factor;
  std::vector<double> slowest(all.front().iteration_seconds.size(), 0.0);
  for (const auto& l : all) {
    r.wrong += l.wrong;
    for (std::size_t k = 0; k < slowest.size() && k < l.iteration_seconds.size(); ++k) {
      slowest[k] = std::max(slowest[k], l.iteration_seconds[k] * 1e6);
    }
  }
  r.iteration_us = TimeStats::of(std::move(slowest));
  return r;
}

std::string encode(const Local& l) {
  return nlohmann::json{{"s", l.seconds_per_iteration}, {"i", l.iteration_seconds}, {"w", l.wrong}}.dump();
}

Local decode(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  return Local{j.at("s").get<double>(), j.at("i").get<std::vector<double>>(), j.at("w").get<std::uint64_t>(), {}};
}

}  // namespace

nlohmann::json SweepOptions::to_json() const {
  return {{"collective", collective->name()},
          {"min_bytes", min_bytes},
          {"max_bytes", max_bytes},
          {"step_factor", factor},
          {"step_bytes", step_bytes},
          {"iterations", iterations},
          {"warmup_iterations", warmup},
          {"check", check},
          {"datatype", data_type_name(type)},
          {"op", collective->reduces() ? reduce_op_name(op) : "none"},
          {"root", collective->rooted() ? static_cast<int>(root) : -1},
          {"average", static_cast<int>(rank_time)},
          {"per_iter_timing", per_iteration ? 1 : 0},
          {"collectives_path", collectives_path}};
}

std::vector<std::uint64_t> sweep_bytes(const SweepOptions& o) {
  auto sizes = sweep_sizes(o.min_bytes, o.max_bytes, o.factor, o.step_bytes, data_type_size(o.type));
  if (sizes.empty()) throw UsageError(fmt::format("-b/-e: no size holds a whole {} element", data_type_name(o.type)));
  return sizes;
}

void run_sweep(const SweepOptions& o, Backend& backend, Job& job, const std::function<void(const SweepRow&)>& on_row) {
  const Collective& collective = *o.collective;
  const std::size_t element = data_type_size(o.type);
  const auto sizes = sweep_bytes(o);
  backend.allocate(sizes.back());
  std::vector<std::size_t> counts_to_run;
  for (const auto bytes : sizes) {
    // Below 16 bytes a rank there is nothing to move.
    if (collective.counts(bytes / element, job.nranks(), element).param > 0) counts_to_run.push_back(bytes / element);
  }
  // Every check first, then every timing back to back: a host-side check
  // leaves the GPUs idle for up to a second, and a timed run right after one
  // was 1 % slower and five times as spread (all-gather, 512 MiB, 2 H100s).
  std::map<std::pair<std::size_t, bool>, std::uint64_t> wrong;
  if (o.check) {
    std::size_t largest = 0;
    for (const auto count : counts_to_run) {
      largest = std::max(largest, collective.counts(count, job.nranks(), element).span());
    }
    std::vector<char> host(largest * element);
    for (const auto count : counts_to_run) {
      for (const bool in_place : {false, true}) {
        if (!in_place || collective.in_place_checked()) {
          wrong[{count, in_place}] = check_once(o, backend, job, count, in_place, host);
        }
      }
    }
  }
  job.progress().set_where("warming up");
  job.barrier("the barrier before warm-up");
  for (const auto bytes : {sizes.back(), sizes.front()}) {
    if (o.warmup > 0) {
      backend.run(CollectiveCall{&collective, o.type, o.op, bytes / element, o.root, false}, o.warmup, false, false);
    }
  }
  const auto calls = open_collectives_file(o.collectives_path, std::string(collective.name()), backend.name(), job);
  std::string name(collective.name());
  std::replace(name.begin(), name.end(), '-', '_');
  std::uint64_t run_number = 0;
  for (const auto count : counts_to_run) {
    const Counts counts = collective.counts(count, job.nranks(), element);
    SweepRow row;
    row.bytes = counts.span() * element;
    row.count = counts.param;
    const std::uint64_t algbw_bytes = collective.algbw_elements(counts, job.nranks()) * element;
    for (const bool in_place : {false, true}) {
      const auto checked = wrong.find({count, in_place});
      Local local = time_once(o, backend, job, count, in_place);
      local.wrong = checked == wrong.end() ? 0 : checked->second;
      if (calls) {
        // One "iteration" of the file per size and mode; its calls are the timed ones.
        for (std::size_t i = 0; i < local.bounds_ns.size(); ++i) {
          const auto& b = local.bounds_ns[i];
          for (std::size_t k = 0; k + 1 < b.size(); ++k) {
            calls->write(CollectiveRecord{job.first_rank() + i,
                                          run_number,
                                          k,
                                          name,
                                          row.bytes,
                                          b[k] + job.clock().offset_ns,
                                          b[k + 1] + job.clock().offset_ns,
                                          {}});
          }
        }
      }
      ++run_number;
      const auto gathered = job.gather("the sweep's results", encode(local));
      if (!job.is_root()) continue;
      std::vector<Local> all;
      all.reserve(gathered.size());
      for (const auto& text : gathered) all.push_back(decode(text));
      auto& result = in_place ? row.in_place : row.out_of_place;
      result = combine(o, all, algbw_bytes, collective.bus_factor(job.nranks()));
      result.checked = checked != wrong.end();
    }
    if (job.is_root()) on_row(row);
  }
  if (calls) calls->close();
}

}  // namespace xtk::collective
