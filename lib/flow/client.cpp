#include "flow/client.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>
#include <unordered_map>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "flow/client_worker.hpp"
#include "flow/late_starts.hpp"
#include "workload/mix.hpp"
#include "workload/schedule.hpp"

namespace xtk {

using client_detail::Destination;
using client_detail::FinishedFlow;
using client_detail::FinishedFlows;
using client_detail::kMaxPoolAheadNs;
using client_detail::PlannedFlow;
using client_detail::Shared;
using client_detail::Worker;

nlohmann::json ClientOptions::to_json() const {
  return {{"schedule", schedule},
          {"records", records},
          {"transport", transport},
          {"map", map},
          {"port", port},
          {"threads", threads},
          {"policy", policy == ConnectionPolicy::pool ? "pool" : "per-flow"},
          {"pool_limit", pool_limit},
          {"pool_init", pool_init},
          {"pool_ahead_ns", pool_ahead_ns},
          {"direction", direction == Direction::push ? "push" : "pull"},
          {"spin_ns", spin_ns},
          {"realtime", timing.realtime},
          {"cpus", timing.pinning == CpuPinning::automatic ? nlohmann::json("auto")
                   : timing.pinning == CpuPinning::none    ? nlohmann::json("none")
                                                           : nlohmann::json(timing.cpus)},
          {"cpu_wake_latency_ns", timing.cpu_wake_latency_ns == kWakeLatencyAuto ? nlohmann::json("auto")
                                  : timing.cpu_wake_latency_ns < 0               ? nlohmann::json("none")
                                                                   : nlohmann::json(timing.cpu_wake_latency_ns)},
          {"congestion_control", congestion_control},
          {"send_buffer", send_buffer},
          {"receive_buffer", receive_buffer},
          {"nodelay", nodelay},
          {"batch_sends", batch_sends},
          {"flow_timeout_ns", flow_timeout_ns},
          {"retry_ns", retry_ns},
          {"grace_ns", grace_ns},
          {"duration_ns", duration_ns},
          {"start_at_realtime_ns", start_at_realtime_ns ? nlohmann::json(*start_at_realtime_ns) : nlohmann::json()},
          {"token_set", token != 0},
          {"link_bps", link_bps},
          {"bulk_streams", bulk_streams},
          {"bulk_dst", bulk_dst},
          {"bulk_rate_bps", bulk_rate_bps},
          {"device", transport == "tcp" ? nlohmann::json() : xtk::to_json(device)}};
}

namespace {

// The feeder tops the workers' rings up at most this often: well within the
// look-ahead, and a full ring (kWorkerRingFlows) is tens of milliseconds of
// work even at a million flows/s. Waking once per flow of a dense schedule
// would take CPU from the workers and from the servers beside them.
constexpr std::int64_t kFeedIntervalNs = 1'000'000;
// With a worker's ring full (a schedule faster than the machine), the feeder
// has nothing to add for a while: it sleeps this long instead, since on a VM
// each of its wake-ups takes the workers' CPUs for a context switch.
constexpr std::int64_t kFullRingWaitNs = 10'000'000;

// Destinations by name; names resolve once, in the feeder, ahead of their flows.
class DestinationTable {
 public:
  DestinationTable(Shared& shared, const ClientOptions& options) : shared_(shared), port_(options.port) {
    for (const auto& entry : options.map) {
      const auto eq = entry.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) {
        throw UsageError(fmt::format("--map '{}': expected NAME=ADDRESS[:PORT]", entry));
      }
      mapped_[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
  }

  std::uint32_t index(std::string_view name) {
    if (auto it = index_.find(std::string(name)); it != index_.end()) return it->second;
    const std::string key(name);
    std::string address;
    if (auto it = mapped_.find(key); it != mapped_.end()) {
      address = it->second;
    } else {
      address = key;  // an address, or a name the resolver knows
    }
    if (shared_.destinations.size() >= client_detail::kMaxDestinations) {
      throw Error(fmt::format("more than {} destinations", client_detail::kMaxDestinations));
    }
    SocketAddress resolved;
    try {
      resolved = resolve_address(address, port_, fmt::format("destination '{}'", key));
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{} (map it with --map {}=ADDRESS)", e.what(), key));
    }
    shared_.destinations.push_back(Destination{key, resolved});
    const auto i = static_cast<std::uint32_t>(shared_.destinations.size() - 1);
    index_.emplace(key, i);
    return i;
  }

 private:
  Shared& shared_;
  std::uint16_t port_;
  std::unordered_map<std::string, std::string> mapped_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

// Where flows come from: a schedule file, or the bulk streams.
class FlowFeed {
 public:
  FlowFeed(const ClientOptions& options, Shared& shared, DestinationTable& table)
      : options_(options), shared_(shared), table_(table) {
    if (options.bulk_streams > 0) return;
    reader_ = ScheduleReader::open(options.schedule);
    // Rows with an empty cc go back to the client's own algorithm.
    if (reader_->header().has_cc) {
      default_cc_ = options.congestion_control.empty() ? default_congestion_control() : options.congestion_control;
    }
  }

  const ScheduleHeader* header() const { return reader_ ? &reader_->header() : nullptr; }

  bool next(PlannedFlow& plan) {
    if (!reader_) {
      if (bulk_next_ >= options_.bulk_streams) return false;
      plan = PlannedFlow{};
      plan.id = bulk_next_++;
      plan.dst = table_.index(options_.bulk_dst);
      plan.rate_bps = options_.bulk_rate_bps;
      plan.stream = true;
      plan.stop_ns = options_.duration_ns;
      return true;
    }
    Flow flow;
    if (!reader_->next(flow)) return false;
    plan.id = flow.id;
    plan.sched_ns = flow.start_ns;
    try {
      plan.dst = table_.index(flow.dst);
    } catch (const UsageError& e) {
      reader_->fail(e.what());  // the schedule's line: a bad port in its dst column, say
    }
    plan.size_bytes = flow.size_bytes;
    plan.dscp = flow.dscp;
    plan.rate_bps = flow.rate_bps;
    plan.congestion_control =
        reader_->header().has_cc ? congestion_control(flow.cc.empty() ? std::string_view(default_cc_) : flow.cc) : 0;
    plan.stream = false;
    return true;
  }

 private:
  // A name checked once, by the kernel, on its first row: one it refuses
  // fails the schedule at that line instead of every flow that names it.
  std::uint8_t congestion_control(std::string_view name) {
    auto& names = shared_.congestion_controls;
    const auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) return static_cast<std::uint8_t>(it - names.begin() + 1);
    if (auto problem = congestion_control_problem(std::string(name)); !problem.empty()) {
      reader_->fail(fmt::format("cc: {}", problem));
    }
    if (names.size() >= client_detail::kMaxCongestionControls) {
      reader_->fail(fmt::format("more than {} congestion controls", client_detail::kMaxCongestionControls));
    }
    names.emplace_back(name);
    return static_cast<std::uint8_t>(names.size());
  }

  const ClientOptions& options_;
  Shared& shared_;
  DestinationTable& table_;
  std::string default_cc_;
  std::unique_ptr<ScheduleReader> reader_;
  unsigned bulk_next_ = 0;
};

double header_number(const ScheduleHeader* header, std::string_view key) {
  if (header == nullptr) return 0;
  const auto value = header->get(key);
  if (!value) return 0;
  try {
    return parse_number(*value);
  } catch (const UsageError&) {
    return 0;
  }
}

void check_options(const ClientOptions& o) {
  if (o.threads == 0) throw UsageError("--threads must be at least 1");
  if (o.bulk_streams == 0 && o.schedule.empty()) throw UsageError("give a schedule file, or --bulk N with --dst");
  if (o.bulk_streams > 0 && o.bulk_dst.empty()) throw UsageError("--bulk needs --dst ADDRESS");
  if (o.bulk_streams > 0 && o.duration_ns <= 0) throw UsageError("--bulk needs --duration");
  if (o.bulk_streams > 0 && !o.schedule.empty()) {
    throw UsageError(fmt::format("give a schedule ({}) or --bulk, not both", o.schedule));
  }
  if (o.flow_timeout_ns <= 0) throw UsageError("--flow-timeout must be above 0");
  if (o.pool_limit == 0) throw UsageError("--pool-limit must be at least 1");
  if (!o.congestion_control.empty()) {
    if (auto problem = congestion_control_problem(o.congestion_control); !problem.empty()) {
      throw UsageError(fmt::format("--cc: {}", problem));
    }
  }
}

// While alive, keeps the calling thread (the feeder) off the workers' --cpus,
// so it never competes with a SCHED_FIFO worker for its core: starved there,
// it would in the end be run by the kernel's fair-share server for
// milliseconds at a time, ahead of the worker.
class FeederAffinity {
 public:
  explicit FeederAffinity(const std::vector<int>& worker_cpus) {
    if (worker_cpus.empty() || pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) != 0) return;
    cpu_set_t rest = saved_;
    for (int cpu : worker_cpus) {
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_CLR(cpu, &rest);
    }
    changed_ = CPU_COUNT(&rest) > 0 && pthread_setaffinity_np(pthread_self(), sizeof rest, &rest) == 0;
  }
  ~FeederAffinity() {
    if (changed_) pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
  }
  FeederAffinity(const FeederAffinity&) = delete;
  FeederAffinity& operator=(const FeederAffinity&) = delete;

 private:
  cpu_set_t saved_{};
  bool changed_ = false;
};

}  // namespace

ClientResult run_client(const ClientOptions& options, const std::atomic<bool>& interrupt) {
  check_options(options);
  Shared shared(options);
  DestinationTable table(shared, options);
  FlowFeed feed(options, shared, table);
  const ScheduleHeader* header = feed.header();

  // Destinations named in the header get warm connections before the start.
  std::vector<std::uint32_t> warm;
  if (header) {
    if (auto dst = header->get("dst")) {
      const auto destinations = parse_host_mix(*dst, "schedule header dst");
      for (const auto& name : destinations.values()) warm.push_back(table.index(name));
    }
  }
  SummaryInputs inputs;
  inputs.requested_bps = header_number(header, "load_bps_per_src");
  inputs.link_bps = options.link_bps > 0 ? options.link_bps : header_number(header, "link_bps");
  inputs.duration_ns =
      options.duration_ns > 0 ? options.duration_ns : static_cast<std::int64_t>(header_number(header, "duration_ns"));
  if (header && header->get("file_src") == std::nullopt && header->get("src")) {
    const auto sources = *header->get("src");
    if (sources.find(',') != std::string::npos) {
      inputs.requested_bps *= static_cast<double>(std::count(sources.begin(), sources.end(), ',') + 1);
    }
  }

  ClientResult result{ClientSummary(inputs), 0, false, 0, {}, {}};
  const std::int64_t now = monotonic_ns();
  if (options.start_at_realtime_ns) {
    shared.start_mono_ns = now + (*options.start_at_realtime_ns - realtime_ns());
    if (shared.start_mono_ns < now) {
      throw UsageError(
          fmt::format("--start-at is {:.3f} s in the past", static_cast<double>(now - shared.start_mono_ns) / 1e9));
    }
  } else {
    shared.start_mono_ns = now + options.prepare_ns;
  }
  result.start_realtime_ns = realtime_ns() + (shared.start_mono_ns - monotonic_ns());

  RecordWriter writer(options.records);
  // The flows' interfaces decide the worker CPUs: every destination known
  // before the start (the header's, --map's, --dst, the first flow's).
  for (const auto& entry : options.map) table.index(entry.substr(0, entry.find('=')));
  PlannedFlow plan;
  bool have = feed.next(plan);
  std::vector<SocketAddress> addresses;
  for (const auto& d : shared.destinations) addresses.push_back(d.address);
  const Timing timing(options.bulk_streams > 0 ? options.timing.without_start_times() : options.timing, addresses);
  shared.timing = &timing;
  result.timing = timing.to_json();
  if (!timing.lacking().empty()) {
    std::cerr << "xtk-client: " << timing.lacking() << std::endl;
    result.warnings.push_back(timing.lacking());
  }
  const FeederAffinity feeder_affinity(timing.worker_cpus());
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned t = 0; t < options.threads; ++t) workers.push_back(std::make_unique<Worker>(shared, t));
  for (auto& w : workers) w->start(warm);

  FinishedFlows drained;
  LateStarts late_starts;
  FlowRecord record;  // one for all: its strings keep their room
  const auto drain = [&] {
    {
      std::lock_guard<std::mutex> lock(shared.records_mutex);
      drained.take(shared.finished);
    }
    for (const FinishedFlow& f : drained.flows) {
      const PlannedFlow& planned = f.plan;
      if (f.start_abs > 0) {
        late_starts.add({shared.start_mono_ns + planned.sched_ns, planned.handed_abs, planned.taken_abs,
                         planned.asleep_ns, f.start_abs});
      }
      record.flow_id = planned.id;
      record.dst = shared.destinations[planned.dst].name;
      record.size_bytes = f.size_bytes;
      record.sched_start_ns = planned.sched_ns;
      record.start_ns = f.start_abs > 0 ? f.start_abs - shared.start_mono_ns : -1;
      record.end_ns = f.end_abs > 0 ? f.end_abs - shared.start_mono_ns : -1;
      record.status = f.status;
      if (f.error != 0) {
        record.error = std::move(drained.errors[f.error - 1]);
      } else {
        record.error.clear();
      }
      writer.write(record);
      result.summary.add(record);
    }
    drained.clear();
  };
  const auto cancel = [&](const PlannedFlow& flow, const std::string& why) {
    FlowRecord r;
    r.flow_id = flow.id;
    r.dst = shared.destinations[flow.dst].name;
    r.size_bytes = flow.size_bytes;
    r.sched_start_ns = flow.sched_ns;
    r.status = FlowStatus::cancelled;
    r.error = why;
    writer.write(r);
    result.summary.add(r);
  };

  const bool tty = options.progress && isatty(STDERR_FILENO);
  std::int64_t next_progress = shared.start_mono_ns + 1'000'000'000;
  std::size_t next_worker = 0;
  bool stopped = false;
  // A schedule that turns out bad mid-way stops the run like an interrupt,
  // after the records of every flow already handed out are written.
  std::exception_ptr failure;
  try {
    while (true) {
      const std::int64_t t = monotonic_ns();
      if (!stopped && interrupt.load()) {
        stopped = true;
        result.interrupted = true;
        shared.stop_deadline_ns.store(t + options.grace_ns);
        shared.stopping.store(true);
      }
      if (stopped) {
        // Every flow not handed out yet still gets its record.
        while (have) {
          cancel(plan, "interrupted before start");
          have = feed.next(plan);
        }
      }
      const std::int64_t lookahead = shared.lookahead_ns.load(std::memory_order_relaxed);
      bool full = false;
      while (have && shared.start_mono_ns + plan.sched_ns <= t + lookahead) {
        if (options.duration_ns > 0 && plan.sched_ns >= options.duration_ns && !plan.stream) {
          cancel(plan, "scheduled after --duration");
        } else {
          // Stamped when first offered: the time a full ring adds is the worker's backlog, not the feeder's.
          if (plan.handed_abs == 0) plan.handed_abs = monotonic_ns();
          if (!workers[next_worker]->ring().push(plan)) {
            full = true;  // that worker is full: the next round goes on
            break;
          }
          workers[next_worker]->handed(shared.start_mono_ns + plan.sched_ns);
          next_worker = (next_worker + 1) % workers.size();
          plan.handed_abs = 0;
        }
        have = feed.next(plan);
      }
      if (!have) shared.feeding_done.store(true, std::memory_order_release);
      drain();
      writer.flush_if_due(t);
      if (tty && t >= next_progress) {
        const double elapsed = static_cast<double>(t - shared.start_mono_ns) / 1e9;
        std::cerr << fmt::format("\r  {:7.1f} s  {:>10} flows done  {:>8.3f} Gbit/s  lateness p99 {:8.1f} us ", elapsed,
                                 result.summary.flows(), result.summary.goodput_bps_at(t - shared.start_mono_ns) / 1e9,
                                 result.summary.lateness_ns().quantile(0.99) / 1e3);
        next_progress += 1'000'000'000;
      }
      bool all_done = !have;
      for (const auto& w : workers) all_done = all_done && w->finished();
      if (all_done) break;
      // Sleep until the next flow enters the look-ahead window, from 1 to 5 ms;
      // with a ring full, kFullRingWaitNs.
      std::int64_t wake = t + 5'000'000;
      if (have) wake = std::min(wake, shared.start_mono_ns + plan.sched_ns - lookahead);
      wake = std::max(wake, t + (full ? kFullRingWaitNs : kFeedIntervalNs));
      const timespec ts = to_timespec(wake);
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    }
  } catch (...) {
    failure = std::current_exception();
    shared.stop_deadline_ns.store(monotonic_ns());
    shared.stopping.store(true);
    shared.feeding_done.store(true, std::memory_order_release);
  }
  for (auto& w : workers) w->join();
  drain();
  if (tty) std::cerr << '\n';
  result.summary.set_elapsed_ns(monotonic_ns() - shared.start_mono_ns);
  result.summary.set_connection_waits(shared.connection_waits.load());
  if (options.policy == ConnectionPolicy::pool && options.bulk_streams == 0) {
    result.summary.set_pool_ahead(shared.widest_pool_ahead_ns, shared.widest_pool_ahead_ns >= kMaxPoolAheadNs &&
                                                                   options.pool_ahead_ns < kMaxPoolAheadNs);
  }
  result.summary.set_late_starts(late_starts);
  writer.close();
  result.records = writer.written();
  for (auto& w : workers) {
    for (auto& warning : w->warnings()) result.warnings.push_back(std::move(warning));
  }
  if (failure) std::rethrow_exception(failure);
  return result;
}

}  // namespace xtk
