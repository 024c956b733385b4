#include "collective/replay.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>

#include "collective/train.hpp"
#include "collective/train_report.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/report.hpp"
#include "core/units.hpp"
#include "formats/iterations.hpp"

namespace xtk::collective {
namespace {

constexpr std::size_t kNoBucket = std::numeric_limits<std::size_t>::max();

// A call's elements on `n` ranks: each rank keeps its own share as recorded
// (an all-gather's input, a reduce-scatter's output, an all-to-all's piece
// per peer), so a trace of one job size replays on another.
Counts replay_counts(const RecordedCall& call, std::uint32_t n, double scale) {
  const auto scaled = [&](std::size_t v) {
    return std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(static_cast<double>(v) * scale)));
  };
  const std::string_view name = call.collective->name();
  Counts c;
  if (call.collective->point_to_point()) {
    c = call.collective->counts(scaled(call.counts.param), n, data_type_size(call.type));
  } else if (name == "all-gather") {
    c.send = c.param = scaled(call.counts.send);
    c.recv = c.send * n;
  } else if (name == "reduce-scatter") {
    c.recv = c.param = scaled(call.counts.recv);
    c.send = c.recv * n;
  } else if (name == "all-to-all") {
    c.param = scaled(std::max<std::size_t>(1, call.counts.param));
    c.send = c.recv = c.param * n;
  } else {
    c.send = c.recv = c.param = scaled(call.counts.send);
  }
  return c;
}

using Ranks = std::vector<std::uint32_t>;

std::string encode_groups(const std::set<Ranks>& groups) {
  std::string out;
  for (const auto& g : groups) {
    for (std::size_t i = 0; i < g.size(); ++i) out += fmt::format("{}{}", i == 0 ? "" : ",", g[i]);
    out += ';';
  }
  return out;
}

std::set<Ranks> decode_groups(const std::string& text) {
  std::set<Ranks> groups;
  std::istringstream in(text);
  for (std::string group; std::getline(in, group, ';');) {
    Ranks ranks;
    std::istringstream members(group);
    for (std::string r; std::getline(members, r, ',');) ranks.push_back(static_cast<std::uint32_t>(std::stoul(r)));
    groups.insert(ranks);
  }
  return groups;
}

// The process groups every rank's trace uses, agreed on by all: the whole
// job's group maps to the job, the others become the plan's sub-groups, in one
// order everywhere. A trace whose only group is ranks 0..k-1 is a job of k
// ranks and replays on any number, as before sub-groups existed.
std::map<Ranks, std::size_t> agree_on_groups(const RecordedTrace& trace, Job& job, TrainPlan& plan) {
  std::set<Ranks> mine;
  for (const auto& it : trace.iterations) {
    for (const auto& c : it.calls) {
      if (!c.is_wait()) mine.insert(c.group.ranks());
    }
  }
  const auto parts = job.gather("the replay's process groups", encode_groups(mine));
  std::set<Ranks> all;
  for (const auto& part : parts) all.merge(decode_groups(part));
  all = decode_groups(job.broadcast("the replay's process groups", encode_groups(all)));

  Ranks whole(job.nranks());
  std::iota(whole.begin(), whole.end(), 0U);
  std::map<Ranks, std::size_t> index;
  const bool one_job_of_its_own =
      all.size() == 1 && all.begin()->front() == 0 && all.begin()->back() + 1 == all.begin()->size();
  for (const auto& g : all) {
    if (one_job_of_its_own || g == whole) {
      index[g] = Bucket::kWholeJob;
      continue;
    }
    if (g.back() >= job.nranks()) {
      throw UsageError(fmt::format("{}: the trace has a process group of ranks {}: replay it on {} ranks or more",
                                   trace.et_path, fmt::join(g, ", "), g.back() + 1));
    }
    index[g] = plan.groups.size();
    plan.groups.push_back(g);
  }
  if (!plan.groups.empty() && job.ranks_per_process() != 1) {
    throw UsageError("-g: a replay with process groups other than the whole job runs one rank per process");
  }
  return index;
}

struct ReplayPlan {
  TrainPlan plan;
  std::vector<std::vector<std::size_t>> bucket_of;  // [recorded iteration][call]; kNoBucket for a wait
  std::vector<std::uint64_t> bytes_sent;            // per recorded iteration
};

ReplayPlan plan_replay(const RecordedTrace& trace, Job& job, double size_scale) {
  ReplayPlan p;
  const auto group_of = agree_on_groups(trace, job, p.plan);
  const std::uint32_t nranks = job.nranks();
  for (const auto& it : trace.iterations) {
    auto& buckets = p.bucket_of.emplace_back();
    double sent = 0;
    for (const auto& c : it.calls) {
      if (c.is_wait()) {
        buckets.push_back(kNoBucket);
        continue;
      }
      Bucket b;
      const Ranks ranks = c.group.ranks();
      b.group = group_of.at(ranks);
      if (b.group != Bucket::kWholeJob && std::find(ranks.begin(), ranks.end(), job.world().rank) == ranks.end()) {
        throw UsageError(
            fmt::format("{} node {}: {} over process group '{}' (ranks {}), which rank {} is not in: "
                        "give each rank its own trace (--trace with {{rank}})",
                        trace.et_path, c.node, c.torch_name, c.group.name, fmt::join(ranks, ", "), job.world().rank));
      }
      const std::uint32_t n =
          b.group == Bucket::kWholeJob ? nranks : static_cast<std::uint32_t>(p.plan.groups[b.group].size());
      if (c.collective->rooted() && c.root >= n) {
        throw UsageError(fmt::format("{} node {}: {} from root {} needs more than the job's {} ranks", trace.et_path,
                                     c.node, c.torch_name, c.root, n));
      }
      b.type = c.type;
      b.collective = c.collective;
      b.counts = replay_counts(c, n, size_scale);
      b.root = c.root;
      const std::size_t element = data_type_size(c.type);
      b.bytes = (b.counts.send + b.counts.recv) * element;
      // One buffer for every call: a replay times the calls, it does not check them.
      p.plan.gradient_bytes = std::max(p.plan.gradient_bytes, b.bytes);
      sent += static_cast<double>(c.collective->algbw_elements(b.counts, n) * element) * c.collective->bus_factor(n);
      buckets.push_back(p.plan.buckets.size());
      p.plan.buckets.push_back(b);
    }
    p.bytes_sent.push_back(static_cast<std::uint64_t>(std::llround(sent)));
  }
  return p;
}

std::int64_t scaled_ns(std::int64_t ns, double scale) {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(ns) * scale));
}

IterationTiming replay_iteration(TrainEngine& engine, const RecordedIteration& recorded,
                                 const std::vector<std::size_t>& buckets, double compute_scale) {
  for (std::size_t i = 0; i < recorded.calls.size(); ++i) {
    engine.compute(scaled_ns(recorded.calls[i].compute_before_ns, compute_scale));
    if (buckets[i] == kNoBucket) {
      engine.wait_issued();
    } else {
      engine.issue(buckets[i]);
    }
  }
  engine.compute(scaled_ns(recorded.overlap_ns, compute_scale));
  engine.wait_issued();
  engine.compute(scaled_ns(recorded.after_join_ns, compute_scale));
  return engine.finish_iteration();
}

}  // namespace

nlohmann::json ReplayOptions::to_json() const {
  return {{"trace", trace},
          {"kineto", kineto},
          {"compute_scale", compute_scale},
          {"size_scale", size_scale},
          {"iterations", iterations},
          {"warmup", warmup},
          {"start_at_realtime_ns", start_at_realtime_ns ? nlohmann::json(*start_at_realtime_ns) : nlohmann::json()},
          {"iterations_path", iterations_path},
          {"collectives_path", collectives_path}};
}

nlohmann::json ReplaySummary::to_json() const {
  return {{"trace", trace},
          {"ranks", ranks},
          {"recorded_iterations", recorded_iterations},
          {"calls", calls},
          {"waits", waits},
          {"compute_ms", compute_ms},
          {"bytes_per_iteration", bytes_per_iteration},
          {"iterations", iterations},
          {"iteration", iteration_ms.to_json("_ms")},
          {"comm", comm_ms.to_json("_ms")}};
}

void check_replay_fits(const RecordedTrace& trace, std::uint32_t ranks_per_process) {
  if (ranks_per_process == 1) return;
  for (const auto& it : trace.iterations) {
    for (const auto& c : it.calls) {
      if (!c.is_wait() && c.collective->point_to_point()) {
        throw UsageError(
            fmt::format("-g {}: {} node {} is a {}: a replay with sends and recvs runs one rank per "
                        "process (each rank its own trace)",
                        ranks_per_process, trace.et_path, c.node, c.torch_name));
      }
    }
  }
}

RecordedTrace read_replay_trace(const ReplayOptions& o, std::uint32_t rank) {
  return read_recorded_trace(rank_path(o.trace, rank), o.kineto.empty() ? "" : rank_path(o.kineto, rank));
}

ReplaySummary run_replay(const ReplayOptions& o, const RecordedTrace& trace, Backend& backend, Job& job) {
  const ReplayPlan plan = plan_replay(trace, job, o.size_scale);
  auto engine = backend.train_engine(plan.plan);
  const std::string model = std::filesystem::path(trace.et_path).filename().string();
  std::unique_ptr<IterationWriter> writer;
  if (!o.iterations_path.empty()) {
    writer = std::make_unique<IterationWriter>(
        rank_path(o.iterations_path, job.world().rank),
        std::vector<std::pair<std::string, std::string>>{{"generator", fmt::format("xtk-collective {}", XTK_VERSION)},
                                                         {"model", model},
                                                         {"ranks", std::to_string(job.nranks())},
                                                         {"backend", backend.name()}});
  }
  const auto calls = open_collectives_file(o.collectives_path, model, backend.name(), job);
  const std::size_t recorded = trace.iterations.size();
  const auto run = [&](std::uint64_t k) {
    return replay_iteration(*engine, trace.iterations[k % recorded], plan.bucket_of[k % recorded], o.compute_scale);
  };
  job.barrier("the start of the replay");
  for (std::uint64_t k = 0; k < o.warmup; ++k) {
    job.progress().set_where(fmt::format("in warm-up iteration {}", k));
    run(k);
  }
  if (o.start_at_realtime_ns) wait_for_start(*o.start_at_realtime_ns, job);
  ProcessTcpCounts tcp;
  RankPart part;
  for (std::uint64_t k = 0; k < o.iterations; ++k) {
    job.progress().set_where(fmt::format("in replayed iteration {}", k));
    const std::int64_t t0 = monotonic_ns(), wall0 = realtime_ns();
    const IterationTiming timing = run(k);
    record_iteration(timing, k, t0, wall0, plan.bytes_sent[k % recorded], job, part, writer.get(), tcp);
    if (calls) write_calls(*calls, job, k, timing, plan.plan);
  }
  if (writer) writer->close();
  if (calls) calls->close();
  const auto parts = job.gather("the replay summary", part.encode());

  ReplaySummary s;
  s.trace = trace.et_path;
  s.ranks = job.nranks();
  s.recorded_iterations = recorded;
  double compute_ns = 0, bytes = 0;
  for (std::size_t r = 0; r < recorded; ++r) {
    for (const auto& c : trace.iterations[r].calls) (c.is_wait() ? s.waits : s.calls) += 1;
    compute_ns += static_cast<double>(trace.iterations[r].compute_ns()) * o.compute_scale;
    bytes += static_cast<double>(plan.bytes_sent[r]);
  }
  s.calls /= recorded;
  s.waits /= recorded;
  s.compute_ms = compute_ns / static_cast<double>(recorded) / 1e6;
  s.bytes_per_iteration = static_cast<std::uint64_t>(std::llround(bytes / static_cast<double>(recorded)));
  std::vector<RankPart> all;
  if (job.is_root()) {
    for (const auto& text : parts) all.push_back(RankPart::decode(text));
  } else {
    all.push_back(part);
  }
  s.iterations = all.front().iter_us.size();
  std::vector<double> job_ms(s.iterations, 0.0), comm_ms;
  for (const auto& p : all) {
    for (std::size_t k = 0; k < s.iterations && k < p.iter_us.size(); ++k) {
      job_ms[k] = std::max(job_ms[k], p.iter_us[k] / 1e3);
    }
    for (double v : p.comm_us) comm_ms.push_back(v / 1e3);
  }
  s.iteration_ms = TimeStats::of(job_ms);
  s.comm_ms = TimeStats::of(comm_ms);
  return s;
}

void print_replay_summary(std::ostream& out, const ReplaySummary& s) {
  out << fmt::format("# replay of {}: {} recorded iteration(s), {} collectives and {} waits each, on {} ranks\n",
                     s.trace, s.recorded_iterations, s.calls, s.waits, s.ranks);
  out << fmt::format("# compute per iteration: {:.3f} ms; each rank sends {} per iteration\n", s.compute_ms,
                     format_bytes(static_cast<double>(s.bytes_per_iteration)));
  Table table({{"metric", 0}, {"n", 0}, {"mean_ms", 3}, {"p50_ms", 3}, {"p99_ms", 3}, {"max_ms", 3}, {"cv", 3}});
  for (const auto& [name, t] : {std::pair<const char*, const TimeStats&>{"iteration", s.iteration_ms},
                                std::pair<const char*, const TimeStats&>{"comm", s.comm_ms}}) {
    table.add_row({std::string(name), t.n, t.mean, t.p50, t.p99, t.max, t.cv});
  }
  table.print(out);
  out.flush();
}

}  // namespace xtk::collective
