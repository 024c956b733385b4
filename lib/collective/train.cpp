#include "collective/train.hpp"

#include <time.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "collective/pattern.hpp"
#include "collective/sizes.hpp"
#include "collective/train_report.hpp"
#include "core/clock.hpp"
#include "core/units.hpp"
#include "formats/collectives.hpp"
#include "formats/iterations.hpp"

namespace xtk::collective {
namespace {

// The stop vote rides in the first element of the last bucket: every rank
// writes 1 (wants to stop: its --duration is over, or it got SIGINT) or 0, and
// after the all-reduce every rank reads the same sum, so all stop after the
// same iteration without an extra message. Timed gradients carry no data.
std::vector<char> vote(DataType type, bool stop) {
  std::vector<char> bytes(data_type_size(type), 0);
  if (!stop) return bytes;
  switch (type) {
    case DataType::float16: {
      const std::uint16_t one = 0x3C00;
      std::memcpy(bytes.data(), &one, 2);
      break;
    }
    case DataType::bfloat16: {
      const std::uint16_t one = 0x3F80;
      std::memcpy(bytes.data(), &one, 2);
      break;
    }
    case DataType::float32: {
      const float one = 1.0F;
      std::memcpy(bytes.data(), &one, 4);
      break;
    }
    case DataType::float64: {
      const double one = 1.0;
      std::memcpy(bytes.data(), &one, 8);
      break;
    }
    default:
      bytes[0] = 1;  // little-endian integer 1
  }
  return bytes;
}

class Trainer {
 public:
  Trainer(const TrainOptions& o, const ModelProfile& profile, Backend& backend, Job& job)
      : job_(job),
        plan_(assign_buckets(profile, o.caps)),
        compute_(compute_times(o, profile)),
        engine_(backend.train_engine(plan_.plan)),
        locals_(backend.local_devices().size()) {
    std::uint64_t gradient = 0;
    for (const auto& b : plan_.plan.buckets) gradient += b.bytes;
    bytes_sent_ =
        static_cast<std::uint64_t>(std::llround(static_cast<double>(gradient) * all_reduce_bus_factor(job.nranks())));
  }

  const BucketPlan& plan() const { return plan_; }
  std::uint64_t bytes_sent() const { return bytes_sent_; }
  const ComputeTimes& compute() const { return compute_; }

  // One iteration; true when the ranks voted to stop after it.
  bool iteration(bool want_stop, IterationTiming* timing) {
    const Bucket& last = plan_.plan.buckets.back();
    const auto ballot = vote(last.type, want_stop);
    for (std::size_t i = 0; i < locals_; ++i)
      engine_->write_gradients(i, last.offset_bytes, ballot.data(), ballot.size());
    engine_->compute(compute_.forward_ns);
    for (std::size_t b = 0; b < plan_.plan.buckets.size(); ++b) {
      engine_->compute(
          static_cast<std::int64_t>(std::llround(static_cast<double>(compute_.backward_ns) * plan_.compute_before[b])));
      engine_->issue(b);
    }
    *timing = engine_->finish_iteration();
    std::vector<char> result(ballot.size());
    engine_->read_gradients(0, last.offset_bytes, result.data(), result.size());
    for (char c : result) {
      if (c != 0) return true;
    }
    return false;
  }

  // All-reduces every bucket once with known data; the elements that are wrong.
  std::uint64_t check() {
    for (std::size_t b = 0; b < plan_.plan.buckets.size(); ++b) {
      const Bucket& bucket = plan_.plan.buckets[b];
      const DataPattern pattern(bucket.type, ReduceOp::sum, job_.nranks());
      std::vector<char> host(bucket.bytes);
      for (std::size_t i = 0; i < locals_; ++i) {
        pattern.fill(job_.first_rank() + static_cast<std::uint32_t>(i), bucket.count(), host.data());
        engine_->write_gradients(i, bucket.offset_bytes, host.data(), host.size());
      }
      engine_->issue(b);
    }
    engine_->finish_iteration();
    std::uint64_t wrong = 0;
    for (const auto& bucket : plan_.plan.buckets) {
      const DataPattern pattern(bucket.type, ReduceOp::sum, job_.nranks());
      std::vector<char> host(bucket.bytes);
      for (std::size_t i = 0; i < locals_; ++i) {
        engine_->read_gradients(i, bucket.offset_bytes, host.data(), host.size());
        wrong += pattern.count_wrong(bucket.count(), host.data());
      }
    }
    return wrong;
  }

 private:
  Job& job_;
  BucketPlan plan_;
  ComputeTimes compute_;
  std::unique_ptr<TrainEngine> engine_;
  std::size_t locals_;
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace

std::string rank_path(const std::string& pattern, std::uint32_t rank) {
  std::string path = pattern;
  for (auto at = path.find("{rank}"); at != std::string::npos; at = path.find("{rank}", at)) {
    path.replace(at, 6, std::to_string(rank));
  }
  return path;
}

void wait_for_start(std::int64_t start_realtime_ns, Job& job) {
  const auto now = realtime_ns();
  if (start_realtime_ns < now) {
    // The launcher left too little time for start-up: say which knob gives more.
    throw Error(
        fmt::format("--start-at is {:.3f} s in the past after the warm-up: the ranks started too late for it "
                    "(give a later --start-at; under xtk-run, raise [training] startup)",
                    static_cast<double>(now - start_realtime_ns) / 1e9));
  }
  job.progress().set_where("waiting for --start-at");
  const timespec t = to_timespec(start_realtime_ns);
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &t, nullptr) != 0) {
  }
}

std::unique_ptr<CollectiveWriter> open_collectives_file(const std::string& pattern, const std::string& model,
                                                        const std::string& backend, Job& job) {
  if (pattern.empty()) return nullptr;
  return std::make_unique<CollectiveWriter>(
      rank_path(pattern, job.world().rank),
      std::vector<std::pair<std::string, std::string>>{{"generator", fmt::format("xtk-collective {}", XTK_VERSION)},
                                                       {"model", model},
                                                       {"ranks", std::to_string(job.nranks())},
                                                       {"backend", backend},
                                                       {"clock_offset_ns", std::to_string(job.clock().offset_ns)},
                                                       {"clock_rtt_ns", std::to_string(job.clock().rtt_ns)}});
}

void write_calls(CollectiveWriter& out, Job& job, std::uint64_t iter, const IterationTiming& timing,
                 const TrainPlan& plan) {
  for (const auto& c : timing.calls) {
    const Bucket& b = plan.buckets[c.bucket];
    std::string name(b.collective != nullptr ? b.collective->name() : "all-reduce");
    std::replace(name.begin(), name.end(), '-', '_');  // nccl-tests' spelling
    const std::size_t elements =
        b.collective != nullptr && b.collective->point_to_point() ? b.counts.param : b.counts.send;
    const std::size_t bytes = b.collective != nullptr ? elements * data_type_size(b.type) : b.bytes;
    const std::uint64_t rank = job.first_rank() + c.local;
    std::vector<std::uint64_t> group;
    if (b.collective != nullptr && b.collective->point_to_point()) {
      const std::uint64_t peer = b.group == Bucket::kWholeJob ? b.root : plan.groups[b.group][b.root];
      group = {std::min(rank, peer), std::max(rank, peer)};
    } else if (b.group != Bucket::kWholeJob) {
      group.assign(plan.groups[b.group].begin(), plan.groups[b.group].end());
    }
    out.write(CollectiveRecord{rank, iter, c.bucket, name, bytes, c.arrive_ns + job.clock().offset_ns,
                               c.end_ns + job.clock().offset_ns, std::move(group)});
  }
}

nlohmann::json TrainOptions::to_json() const {
  return {{"bucket_bytes", caps.bytes},
          {"first_bucket_bytes", caps.first_bytes},
          {"compute_ns", compute_ns ? nlohmann::json(*compute_ns) : nlohmann::json()},
          {"forward_fraction", forward_fraction ? nlohmann::json(*forward_fraction) : nlohmann::json()},
          {"compute_scale", compute_scale},
          {"size_scale", size_scale},
          {"iterations", iterations},
          {"duration_ns", duration_ns},
          {"warmup", warmup},
          {"start_at_realtime_ns", start_at_realtime_ns ? nlohmann::json(*start_at_realtime_ns) : nlohmann::json()},
          {"iterations_path", iterations_path},
          {"collectives_path", collectives_path},
          {"check", check}};
}

ComputeTimes compute_times(const TrainOptions& o, const ModelProfile& profile) {
  double total_ns = 0;
  if (o.compute_ns) {
    total_ns = static_cast<double>(*o.compute_ns);
  } else if (profile.compute_ms) {
    total_ns = *profile.compute_ms * 1e6;
  } else {
    throw UsageError(
        fmt::format("{} has no compute_ms: give the compute time of an iteration with --compute", profile.source));
  }
  total_ns *= o.compute_scale;
  const double forward = o.forward_fraction.value_or(profile.forward_fraction);
  if (!(forward >= 0 && forward < 1)) throw UsageError("--forward-fraction must be in [0, 1)");
  ComputeTimes t;
  t.forward_ns = static_cast<std::int64_t>(std::llround(total_ns * forward));
  t.backward_ns = static_cast<std::int64_t>(std::llround(total_ns)) - t.forward_ns;
  return t;
}

TrainSummary run_train(const TrainOptions& options, const ModelProfile& full_profile, Backend& backend, Job& job,
                       const std::atomic<bool>& stop_requested) {
  TrainOptions o = options;
  o.caps = options.caps.scaled(options.size_scale);
  const ModelProfile profile = scale_profile(full_profile, options.size_scale);
  Trainer trainer(o, profile, backend, job);
  std::unique_ptr<IterationWriter> writer;
  if (!o.iterations_path.empty()) {
    std::vector<std::pair<std::string, std::string>> header{
        {"generator", fmt::format("xtk-collective {}", XTK_VERSION)},
        {"model", profile.model},
        {"ranks", std::to_string(job.nranks())},
        {"backend", backend.name()},
        {"bucket_bytes", std::to_string(o.caps.bytes)}};
    if (o.size_scale != 1.0) header.emplace_back("size_scale", fmt::format("{}", o.size_scale));
    writer = std::make_unique<IterationWriter>(rank_path(o.iterations_path, job.world().rank), header);
  }
  const auto calls = open_collectives_file(o.collectives_path, profile.model, backend.name(), job);
  RankPart part;
  part.bytes_per_iteration = trainer.bytes_sent();
  IterationTiming timing;
  job.barrier("the start of training");
  for (std::uint64_t k = 0; k < o.warmup; ++k) {
    job.progress().set_where(fmt::format("in warm-up iteration {}", k));
    trainer.iteration(false, &timing);
  }
  if (o.start_at_realtime_ns) wait_for_start(*o.start_at_realtime_ns, job);
  ProcessTcpCounts tcp;
  const std::int64_t start = monotonic_ns();
  for (std::uint64_t k = 0;; ++k) {
    job.progress().set_where(fmt::format("in training iteration {}", k));
    const bool want_stop = stop_requested.load() || (o.iterations == 0 && monotonic_ns() - start >= o.duration_ns);
    const std::int64_t t0 = monotonic_ns(), wall0 = realtime_ns();
    const bool stop = trainer.iteration(want_stop, &timing);
    record_iteration(timing, k, t0, wall0, trainer.bytes_sent(), job, part, writer.get(), tcp);
    if (calls) write_calls(*calls, job, k, timing, trainer.plan().plan);
    if (stop) {
      part.interrupted = stop_requested.load() || o.iterations > 0;
      break;
    }
    if (o.iterations > 0 && k + 1 >= o.iterations) break;
  }
  if (writer) writer->close();
  if (calls) calls->close();
  if (o.check) {
    job.progress().set_where("in the data check after training");
    part.wrong = trainer.check();
  }
  const auto parts = job.gather("the training summary", part.encode());
  return summarize(profile, trainer.plan(), trainer.compute(), job.nranks(), parts, job.is_root() ? nullptr : &part);
}

}  // namespace xtk::collective
