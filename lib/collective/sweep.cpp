#include "collective/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "collective/pattern.hpp"
#include "collective/sizes.hpp"
#include "core/units.hpp"

namespace xtk::collective {
namespace {

// This process's measurement of one size and mode.
struct Local {
  double seconds_per_iteration = 0;
  std::vector<double> iteration_seconds;
  std::uint64_t wrong = 0;
};

Local measure(const SweepOptions& o, Backend& backend, Job& job, std::size_t count, bool in_place) {
  const std::size_t bytes = count * data_type_size(o.type);
  const AllReduceCall call{o.type, o.op, count, in_place};
  const std::size_t locals = backend.local_devices().size();
  job.progress().set_where(fmt::format("in the sweep at {} {}", format_bytes(static_cast<double>(bytes)),
                                       in_place ? "in place" : "out of place"));
  Local local;
  if (o.check) {
    const DataPattern pattern(o.type, o.op, job.nranks());
    std::vector<char> host(bytes);
    for (std::size_t i = 0; i < locals; ++i) {
      pattern.fill(job.first_rank() + static_cast<std::uint32_t>(i), count, host.data());
      backend.write_input(i, host.data(), bytes, in_place);
    }
    backend.run(call, 1, false);
    for (std::size_t i = 0; i < locals; ++i) {
      backend.read_output(i, host.data(), bytes);
      local.wrong += pattern.count_wrong(count, host.data());
    }
  }
  job.barrier("the barrier before a timed run");
  // One untimed call right before the timed ones: it lines the ranks up to
  // the collective's own precision (the barrier is a TCP round trip), and the
  // GPUs and links idle during the host-side check wake up outside the timing
  // (on 2 H200s the first call after such a pause took 2-3x as long).
  backend.run(call, 1, false);
  const TimedRun run = backend.run(call, o.iterations, true);
  local.seconds_per_iteration = run.wall_seconds / o.iterations;
  local.iteration_seconds = run.iteration_seconds;
  return local;
}

SweepResult combine(const SweepOptions& o, const std::vector<Local>& all, std::uint64_t bytes, std::uint32_t nranks) {
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
  r.algbw_gbyte_s = algbw_gbyte_s(bytes, seconds);
  r.busbw_gbyte_s = busbw_gbyte_s(bytes, seconds, nranks);
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
  return Local{j.at("s").get<double>(), j.at("i").get<std::vector<double>>(), j.at("w").get<std::uint64_t>()};
}

}  // namespace

nlohmann::json SweepOptions::to_json() const {
  return {{"min_bytes", min_bytes},   {"max_bytes", max_bytes},
          {"step_factor", factor},    {"step_bytes", step_bytes},
          {"iterations", iterations}, {"warmup_iterations", warmup},
          {"check", check},           {"datatype", data_type_name(type)},
          {"op", reduce_op_name(op)}, {"average", static_cast<int>(rank_time)}};
}

void run_sweep(const SweepOptions& o, Backend& backend, Job& job, const std::function<void(const SweepRow&)>& on_row) {
  const std::size_t element = data_type_size(o.type);
  const auto sizes = sweep_sizes(o.min_bytes, o.max_bytes, o.factor, o.step_bytes, element);
  if (sizes.empty()) throw UsageError(fmt::format("-b/-e: no size holds a whole {} element", data_type_name(o.type)));
  backend.allocate(sizes.back());
  job.progress().set_where("warming up");
  job.barrier("the barrier before warm-up");
  for (const auto bytes : {sizes.back(), sizes.front()}) {
    if (o.warmup > 0) backend.run(AllReduceCall{o.type, o.op, bytes / element, false}, o.warmup, false);
  }
  for (const auto bytes : sizes) {
    SweepRow row;
    row.bytes = bytes;
    row.count = bytes / element;
    for (const bool in_place : {false, true}) {
      const Local local = measure(o, backend, job, row.count, in_place);
      const auto gathered = job.gather("the sweep's results", encode(local));
      if (!job.is_root()) continue;
      std::vector<Local> all;
      all.reserve(gathered.size());
      for (const auto& text : gathered) all.push_back(decode(text));
      (in_place ? row.in_place : row.out_of_place) = combine(o, all, bytes, job.nranks());
    }
    if (job.is_root()) on_row(row);
  }
}

}  // namespace xtk::collective
