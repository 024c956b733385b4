#include "collective/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>

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
  if (name == "all-gather") {
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

struct ReplayPlan {
  TrainPlan plan;
  std::vector<std::vector<std::size_t>> bucket_of;  // [recorded iteration][call]; kNoBucket for a wait
  std::vector<std::uint64_t> bytes_sent;            // per recorded iteration
};

ReplayPlan plan_replay(const RecordedTrace& trace, std::uint32_t nranks, double size_scale) {
  std::uint32_t recorded_world = 0;
  for (const auto& it : trace.iterations) {
    for (const auto& c : it.calls) {
      if (!c.is_wait()) recorded_world = std::max(recorded_world, c.group.size);
    }
  }
  ReplayPlan p;
  for (const auto& it : trace.iterations) {
    auto& buckets = p.bucket_of.emplace_back();
    double sent = 0;
    for (const auto& c : it.calls) {
      if (c.is_wait()) {
        buckets.push_back(kNoBucket);
        continue;
      }
      if (c.group.start != 0 || c.group.stride != 1 || c.group.size != recorded_world) {
        throw InputError(trace.et_path, 0,
                         fmt::format("node {}: {} over process group '{}' (ranks {}, {}, ... of {}): xtk replays "
                                     "collectives over the whole job, not over sub-groups",
                                     c.node, c.torch_name, c.group.name, c.group.start, c.group.start + c.group.stride,
                                     c.group.size));
      }
      if (c.collective->rooted() && c.root >= nranks) {
        throw UsageError(fmt::format("{} node {}: {} from root {} needs more than the job's {} ranks", trace.et_path,
                                     c.node, c.torch_name, c.root, nranks));
      }
      Bucket b;
      b.type = c.type;
      b.collective = c.collective;
      b.counts = replay_counts(c, nranks, size_scale);
      b.root = c.root;
      const std::size_t element = data_type_size(c.type);
      b.bytes = (b.counts.send + b.counts.recv) * element;
      // One buffer for every call: a replay times the calls, it does not check them.
      p.plan.gradient_bytes = std::max(p.plan.gradient_bytes, b.bytes);
      sent += static_cast<double>(c.collective->algbw_elements(b.counts, nranks) * element) *
              c.collective->bus_factor(nranks);
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

RecordedTrace read_replay_trace(const ReplayOptions& o, std::uint32_t rank) {
  return read_recorded_trace(rank_path(o.trace, rank), o.kineto.empty() ? "" : rank_path(o.kineto, rank));
}

ReplaySummary run_replay(const ReplayOptions& o, const RecordedTrace& trace, Backend& backend, Job& job) {
  const ReplayPlan plan = plan_replay(trace, job.nranks(), o.size_scale);
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
  RankPart part;
  for (std::uint64_t k = 0; k < o.iterations; ++k) {
    job.progress().set_where(fmt::format("in replayed iteration {}", k));
    const std::int64_t t0 = monotonic_ns(), wall0 = realtime_ns();
    const IterationTiming timing = run(k);
    record_iteration(timing, k, t0, wall0, plan.bytes_sent[k % recorded], job, part, writer.get());
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
