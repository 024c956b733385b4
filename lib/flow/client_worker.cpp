// The worker's event loop (wait for I/O or the next start, start every flow
// that is due, sweep for timeouts), each flow's start on a connection's
// channel, and its end, for the feeder to record, when the channel reports it.
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "flow/client_worker_impl.hpp"

namespace xtk::client_detail {
namespace {

constexpr std::int64_t kSweepNs = 10'000'000;
constexpr std::int64_t kIdleWaitNs = 5'000'000;  // longest sleep while the feeder may add flows
constexpr std::int64_t kPublishNs = 20'000'000;
// Behind schedule, events still go through this long before a start: about
// what one chunk of copying takes (a channel yields as long before it).
constexpr std::int64_t kYieldNs = 30'000;
// Before a start, no I/O begins this late: about what one small write takes.
constexpr std::int64_t kLastStretchNs = 10'000;
// A SCHED_FIFO worker that has not slept for this long, behind schedule or
// moving long flows' bytes with no start within kNearNs: at SCHED_FIFO it
// would take its CPU from the kernel's processing of its own packets and from
// every other thread there (the kernel then runs them ahead of it for
// milliseconds), and precision is not what it needs then. It runs at normal
// priority until it sleeps a whole wait or a start comes within kNearNs.
constexpr std::int64_t kBusyNs = 2'000'000;
constexpr std::int64_t kNearNs = 1'000'000;

}  // namespace

Doorbell::Doorbell(Poller& poller) : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_.get() < 0) throw Error(fmt::format("eventfd: {}", std::strerror(errno)));
  poller.add(fd_.get(), *this, EPOLLIN);
}

void Doorbell::ring() const {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(fd_.get(), &one, sizeof one);  // full (2^64 - 1 rings): already rung
}

void Doorbell::on_events(std::uint32_t /*events*/, std::int64_t /*now*/) {
  std::uint64_t rings = 0;
  [[maybe_unused]] const ssize_t n = read(fd_.get(), &rings, sizeof rings);
}

void FinishedFlows::add(const PlannedFlow& plan, std::int64_t start_abs, std::int64_t end_abs, FlowStatus status,
                        std::string error, std::uint64_t size_bytes) {
  FinishedFlow& f = flows.emplace_back();
  f.plan = plan;
  f.start_abs = start_abs;
  f.end_abs = end_abs;
  f.size_bytes = size_bytes;
  f.status = status;
  if (!error.empty()) {
    errors.push_back(std::move(error));
    f.error = static_cast<std::uint32_t>(errors.size());
  }
}

void FinishedFlows::take(FinishedFlows& other) {
  // Usually the feeder has drained the last batch: the vectors trade places,
  // and nothing is copied (a worker flat out publishes a thousand every few ms).
  if (flows.empty()) {
    flows.swap(other.flows);
    errors.swap(other.errors);
  } else {
    const auto base = static_cast<std::uint32_t>(errors.size());
    for (FinishedFlow& f : other.flows) {
      if (f.error != 0) f.error += base;
      flows.push_back(f);
    }
    for (auto& e : other.errors) errors.push_back(std::move(e));
  }
  other.clear();
}

bool Shared::publish(FinishedFlows& batch, bool wait) {
  if (batch.flows.empty()) return true;
  std::unique_lock<std::mutex> lock(records_mutex, std::defer_lock);
  if (wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return false;
  }
  finished.take(batch);
  return true;
}

void Worker::Impl::launch(Connection& c, ActiveFlow flow, std::int64_t now) {
  if (flow.start_abs == 0) flow.start_abs = now;
  if (!c.flow) {
    ++active;
    if (flow.plan.stream) ++streams;
  }
  const PlannedFlow& plan = c.flow.emplace(flow).plan;
  FlowStart start;
  start.id = plan.id;
  start.direction = plan.stream ? Direction::push : opt.direction;
  start.stream = plan.stream;
  start.last = opt.policy == ConnectionPolicy::per_flow && !plan.stream;
  start.size_bytes = plan.size_bytes;
  start.stop_abs_ns = shared.start_mono_ns + plan.stop_ns;
  start.token = opt.token;
  start.dscp = plan.dscp;
  start.rate_bps = plan.rate_bps;
  if (plan.congestion_control > 0) start.congestion_control = shared.congestion_controls[plan.congestion_control - 1];
  c.state = Connection::State::busy;
  c.channel->start(start, now);
}

// Releases a connection after its flow: reuse it (pool) or close it.
void Worker::Impl::release(Connection& c, bool reusable, std::int64_t now) {
  DestinationState& ds = dst_state(c.dst);
  if (c.flow) {
    --active;
    if (c.flow->plan.stream) --streams;
    c.flow.reset();
  }
  if (!reusable || opt.policy == ConnectionPolicy::per_flow || shared.stopping.load(std::memory_order_relaxed)) {
    const std::uint32_t dst = c.dst;
    close_connection(c);
    if (!ds.pending.empty()) feed_connections(dst, now);  // the freed slot goes to a waiting flow
    return;
  }
  if (!ds.pending.empty()) {
    const ActiveFlow flow{ds.pending.front()};
    ds.pending.pop_front();
    --pending;
    // The next one was queued up to kMaxPendingFlows flows ago: out of the
    // cache by the time a connection frees for it, unless fetched now (both
    // of the cache lines it may straddle).
    if (!ds.pending.empty()) {
      const auto* next = reinterpret_cast<const char*>(&ds.pending.front());
      __builtin_prefetch(next);
      __builtin_prefetch(next + sizeof(PlannedFlow) - 1);
    }
    launch(c, flow, now);
    return;
  }
  c.state = Connection::State::idle;
  ds.idle.push_back(&c);
}

void Worker::Impl::finish(Connection& c, FlowStatus status, std::string error, std::uint64_t stream_bytes,
                          std::int64_t now) {
  const ActiveFlow& f = *c.flow;
  const std::uint64_t size = f.plan.stream ? stream_bytes : f.plan.size_bytes;
  batch.add(f.plan, f.start_abs, status == FlowStatus::ok ? now : 0, status, std::move(error), size);
  release(c, status == FlowStatus::ok && !f.plan.stream, now);
}

void Worker::Impl::on_connected(Connection& c, std::int64_t now) {
  DestinationState& ds = dst_state(c.dst);
  if (c.warm) --warm_left;
  handshake_took(now - c.opened_abs);
  forget_connecting(ds, c);
  ds.backoff_ns = 0;
  ds.failing_since = 0;
  ds.last_error.clear();
  if (c.flow) {
    launch(c, *c.flow, now);  // the flow it opened for (per-flow policy, a stream), counted already
  } else {
    release(c, true, now);
  }
}

void Worker::Impl::on_connect_failed(Connection& c, const std::string& reason, std::int64_t now) {
  if (c.warm) --warm_left;
  const std::optional<ActiveFlow> flow = c.flow;
  const std::uint32_t dst = c.dst;
  close_connection(c);  // uncounts its flow, which the destination queues again
  connect_failed(dst, reason, now, flow);
}

void Connection::connected(std::int64_t now) { worker.on_connected(*this, now); }

void Connection::connect_failed(std::string reason, std::int64_t now) { worker.on_connect_failed(*this, reason, now); }

void Connection::flow_ended(FlowEnd end, std::int64_t now) {
  if (!flow) return;  // cancelled meanwhile
  worker.finish(*this, end.ok ? FlowStatus::ok : FlowStatus::failed, std::move(end.error), end.bytes, now);
}

// An idle connection only wakes when the server closes it.
void Connection::closed(std::int64_t) { worker.close_connection(*this); }

void Connection::option_failed(std::string_view option, int error) {
  auto& failure = worker.option_failures[std::string(option)];
  if (failure.flows++ == 0) failure.error = error;
}

std::int64_t Connection::next_due() const { return worker.next_due(); }

bool Worker::Impl::begin(PlannedFlow plan, std::int64_t now) {
  plan.taken_abs = now;
  // Asleep past the time it could have started: the last wait spanned it.
  const std::int64_t available = std::max(shared.start_mono_ns + plan.sched_ns, plan.handed_abs);
  plan.asleep_ns = wait_from <= available && available < wait_to ? wait_to - available : 0;
  if (backlog_full) {
    plan.taken_abs = std::min(now, available);
    plan.asleep_ns = 0;
  }
  DestinationState& ds = dst_state(plan.dst);
  if (opt.policy == ConnectionPolicy::pool && !plan.stream && !ds.idle.empty()) {
    Connection* c = ds.idle.back();
    ds.idle.pop_back();
    launch(*c, ActiveFlow{plan}, now);
    short_list(plan.dst);  // replaced in the loop, when the next start leaves time
    return true;
  }
  if (plan.stream) {
    open_connection(plan.dst, now, ActiveFlow{plan, now}, false);
    return true;
  }
  ds.pending.push_back(plan);
  ++pending;
  if (opt.policy == ConnectionPolicy::pool) ++connection_waits;
  // A connect made changes how many are open; one that failed at once, the backoff.
  const std::size_t open = ds.open;
  const std::int64_t next_connect = ds.next_connect_abs;
  feed_connections(plan.dst, now);
  return ds.open != open || ds.next_connect_abs != next_connect;
}

void Worker::Impl::sweep(std::int64_t now) {
  std::vector<Connection*> late;
  for (auto& [ptr, c] : connections) {
    // A stream ends at its stop time; the timeout counts from there.
    const std::int64_t from = c->flow && c->flow->plan.stream ? shared.start_mono_ns + c->flow->plan.stop_ns
                                                              : (c->flow ? c->flow->start_abs : 0);
    if (c->flow && c->state == Connection::State::busy && now - from > opt.flow_timeout_ns) {
      late.push_back(ptr);
    }
  }
  for (Connection* c : late) {
    finish(*c, FlowStatus::timeout, fmt::format("no end within {} s", static_cast<double>(opt.flow_timeout_ns) / 1e9),
           0, now);
  }
  for (std::uint32_t d = 0; d < dsts.size(); ++d) {
    DestinationState& ds = dsts[d];
    while (!ds.pending.empty()) {
      const PlannedFlow& plan = ds.pending.front();
      const std::int64_t waited = now - (shared.start_mono_ns + plan.sched_ns);
      if (!ds.last_error.empty() && waited > opt.retry_ns) {
        batch.add(plan, 0, 0, FlowStatus::failed,
                  fmt::format("{} (retried for {:.1f} s)", ds.last_error, static_cast<double>(waited) / 1e9),
                  plan.size_bytes);
      } else if (waited > opt.flow_timeout_ns) {
        batch.add(plan, 0, 0, FlowStatus::timeout, "no free connection in time (raise --pool-limit)", plan.size_bytes);
      } else {
        break;
      }
      ds.pending.pop_front();
      --pending;
    }
    if (!ds.pending.empty()) feed_connections(d, now);
  }
}

void Worker::Impl::cancel_all(bool in_flight) {
  while (const PlannedFlow* plan = self.ring_.front()) {
    batch.add(*plan, 0, 0, FlowStatus::cancelled, "interrupted before start", plan->size_bytes);
    pop_front();
  }
  for (auto& ds : dsts) {
    ds.pending.for_each([&](const PlannedFlow& plan) {
      batch.add(plan, 0, 0, FlowStatus::cancelled, "interrupted before start", plan.size_bytes);
    });
    pending -= ds.pending.size();
    ds.pending.clear();
  }
  if (!in_flight) return;
  std::vector<Connection*> busy;
  for (auto& [ptr, c] : connections) {
    if (c->flow) busy.push_back(ptr);
  }
  for (Connection* c : busy) {
    const ActiveFlow& f = *c->flow;
    batch.add(f.plan, c->state == Connection::State::busy ? f.start_abs : 0, 0, FlowStatus::cancelled,
              "interrupted in flight", f.plan.stream ? 0 : f.plan.size_bytes);
    close_connection(*c);
  }
}

void Worker::Impl::prepare_thread(unsigned index) {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // wake-ups at the asked time, not 50 us later
  if (auto refused = shared.timing->apply_to_worker(index); !refused.empty()) warnings.push_back(std::move(refused));
  fifo = shared.timing->realtime();
  last_sleep = monotonic_ns();
}

NextWait next_wait(std::int64_t now, std::int64_t until, std::int64_t due, bool startable, bool backlog_full,
                   std::int64_t spin_ns) {
  // A start up to --spin after `until` takes its place, and the sweep runs
  // after it: waking for `until`, the worker would wake after that start as
  // late as the kernel wakes it (on a VM tens of us). In part 2 of bench/flow
  // that was 13 of the 80 latest of 8,000 flows.
  // With the backlog full nothing leaves the ring before a connection frees,
  // and that comes as an event: no timer. On a VM each short timer armed and
  // cancelled traps to the hypervisor: 1 KB flows flat out took about 0.15 us
  // more CPU each with them.
  if (due > until + spin_ns || backlog_full) return {until, false};
  if (startable) return {due, true};
  // It will wait for a free connection anyway: no spin, and wake-ups batched,
  // so a backlog costs no timer per flow; flows behind it (other destinations)
  // start at most kBatchNs late.
  return {std::max(due, now + kBatchNs), false};
}

// Waits for I/O until `deadline` (absolute): with `spin`, sleeps until --spin
// before it, polls epoll, and spins on the clock for the last stretch.
void Worker::Impl::wait_and_handle(std::int64_t deadline, bool spin, std::int64_t seen_due) {
  std::int64_t now = monotonic_ns();
  // The last stretch before a start is spun on the clock alone: an epoll
  // call there could return after the start, with an event that would then
  // go first.
  if (spin && deadline - now <= std::min(kLastStretchNs, opt.spin_ns)) {
    while (now < deadline) now = monotonic_ns();
    return;
  }
  // Behind schedule (a flow already due, or flows waiting for a connection:
  // a schedule faster than the machine) events go through for up to
  // kYieldNs before the starts, so the I/O that ends flows and frees
  // connections cannot starve; one at a time, each epoll call would report
  // (and check) every ready connection again. A wait that began ahead of the
  // start and overran it does not count.
  const bool behind = next_due() <= now || pending > 0;
  std::int64_t wait_ns = deadline - now - (spin ? opt.spin_ns : 0);
  if (wait_ns < 0) wait_ns = 0;
  if (fifo && now - last_sleep > kBusyNs && (behind || deadline - now > kNearNs)) {
    shared.timing->set_worker_fifo(false);
    fifo = false;
  } else if (!fifo && shared.timing->realtime() && !behind && deadline - now <= kNearNs) {
    shared.timing->set_worker_fifo(true);
    fifo = true;
  }
  // Idle (its ring empty, no flow waiting), the worker may sleep past a flow
  // the feeder hands over late: the feeder rings the doorbell for one due
  // before this wake-up, and one handed over before it saw the new time is
  // caught here (both sides fence). Otherwise the ring's front, which no
  // later flow precedes, sets the wake-up, and nothing need ring.
  if (wait_ns > 0 && seen_due == INT64_MAX && pending == 0) {
    self.sleeps_until_.store(now + wait_ns, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (next_due() != seen_due) {
      self.sleeps_until_.store(0, std::memory_order_relaxed);
      return;
    }
  }
  const timespec timeout = to_timespec(wait_ns);
  std::int64_t io_from = -1;  // when the events began to be handled
  wait_from = now;
  const int n = poller.dispatch(&timeout, [&]() -> std::int64_t {
    const std::int64_t now_i = monotonic_ns();
    if (io_from < 0) io_from = now_i;
    // A flow start comes first; the events left are reported again (level-triggered).
    // Events still go through close to a start while they can end before it
    // (near a start, each does one small write or read): with starts a few
    // tens of microseconds apart, that is the only time the I/O gets. When the
    // start would only queue for a connection, the events, which free
    // connections, get kBatchNs: each wait cut short costs another (a
    // connection per flow flat out made 0.85 waits a flow, the minimal client
    // 0.45), and flows behind it (other destinations) wait at most that long.
    if (next_due() - now_i > kLastStretchNs) return now_i;
    const std::int64_t events_for = behind ? (front_must_wait() ? kBatchNs : kYieldNs) : 0;
    return now_i - io_from >= events_for ? -1 : now_i;
  });
  wait_to = io_from >= 0 ? io_from : monotonic_ns();
  // A poll without a timeout is not a sleep: time lost inside it (the kernel's
  // work on this CPU) is the awake worker's.
  if (wait_ns == 0) wait_from = wait_to = 0;
  if (n == 0 && wait_ns > 0) {
    last_sleep = wait_to;
    if (!fifo && shared.timing->realtime()) {
      shared.timing->set_worker_fifo(true);  // caught up: its next wake-up is a start's again
      fifo = true;
    }
  }
  self.sleeps_until_.store(0, std::memory_order_relaxed);  // awake: it looks at its ring before the next wait
}

void Worker::Impl::run(unsigned index, const std::vector<std::uint32_t>& warm) {
  prepare_thread(index);
  std::int64_t now = monotonic_ns();
  if (opt.policy == ConnectionPolicy::pool) {
    for (std::uint32_t dst : warm) {
      for (std::size_t k = 0; k < opt.pool_init; ++k) {
        ++warm_left;
        open_connection(dst, now, std::nullopt, true);
      }
    }
  }
  std::int64_t next_sweep = now + kSweepNs;
  bool cancelled_in_flight = false;
  // `now` is read once per pass, after its wait, and again only after a
  // system call: each read is tens of ns on a VM, and 1 KB flows flat out
  // made six a flow.
  now = monotonic_ns();
  while (true) {
    if (warm_left == 0 || now >= shared.start_mono_ns) self.ready_.store(true);
    const bool stopping = shared.stopping.load(std::memory_order_relaxed);
    if (stopping) {
      const bool in_flight = now >= shared.stop_deadline_ns.load(std::memory_order_relaxed);
      if (!cancelled_in_flight) cancel_all(in_flight);
      cancelled_in_flight = in_flight;
    } else {
      const PlannedFlow* plan = nullptr;
      while ((plan = self.ring_.front()) != nullptr && shared.start_mono_ns + plan->sched_ns <= now) {
        if (pending >= kMaxPendingFlows) break;
        // Off the ring first: while it starts, next_due() is its successor's,
        // which sizes its first write.
        const bool called = begin(pop_front(), now);
        if (called) now = monotonic_ns();
      }
      // Due flows left on the ring wait for connections as much as those queued for one.
      backlog_full = plan != nullptr && shared.start_mono_ns + plan->sched_ns <= now;
      open_ahead(now);  // what follows until the wait (which reads the clock) needs no fresher time
    }
    // Never waits for the writer: a SCHED_FIFO worker blocked on a lock held
    // by a preempted normal thread would start its next flows late.
    if ((now - last_publish >= kPublishNs || batch.flows.size() >= 1024) && shared.publish(batch, false)) {
      last_publish = now;
    }
    const bool fed = shared.feeding_done.load(std::memory_order_acquire);
    if (fed && self.ring_.front() == nullptr && pending == 0 && active == 0) break;
    if (stopping && cancelled_in_flight) break;

    const std::int64_t seen_due = next_due();  // what the deadline below is chosen from
    NextWait next{std::min(next_sweep, now + (fed ? kSweepNs : kIdleWaitNs)), false};
    if (!stopping) {
      if (const PlannedFlow* plan = self.ring_.front()) {
        next = next_wait(now, next.deadline, shared.start_mono_ns + plan->sched_ns, !saturated(plan->dst),
                         pending >= kMaxPendingFlows, opt.spin_ns);
      }
    }
    std::int64_t deadline = next.deadline;
    const bool spin = next.spin;
    if (streams > 0) {
      for (auto& [ptr, c] : connections) {
        if (c->flow && c->flow->plan.stream)
          deadline = std::min(deadline, shared.start_mono_ns + c->flow->plan.stop_ns);
      }
    }
    // When waiting flows may get a new connection: a backoff ends, or the
    // oldest handshake they count on turns stale.
    std::int64_t refeed = INT64_MAX;
    for (const auto& ds : dsts) {
      if (ds.pending.empty()) continue;
      if (ds.next_connect_abs > now) refeed = std::min(refeed, ds.next_connect_abs);
      const std::size_t fresh = fresh_connecting(ds, now);
      if (fresh > 0)
        refeed = std::min(refeed, ds.connecting[ds.connecting.size() - fresh]->opened_abs + stale_connect_ns() + 1);
    }
    wait_and_handle(std::min(deadline, refeed), spin, seen_due);
    now = monotonic_ns();
    if (now >= refeed) {
      for (std::uint32_t d = 0; d < dsts.size(); ++d) {
        if (!dsts[d].pending.empty()) feed_connections(d, now);
      }
      now = monotonic_ns();
    }
    if (streams > 0) {
      std::vector<Connection*> due;
      for (auto& [ptr, c] : connections) {
        if (c->flow && c->flow->plan.stream && c->state == Connection::State::busy &&
            now >= shared.start_mono_ns + c->flow->plan.stop_ns) {
          due.push_back(ptr);
        }
      }
      for (Connection* c : due) {
        if (connections.count(c) != 0) c->channel->stop_stream(now);  // an earlier one's end may close others
      }
      if (!due.empty()) now = monotonic_ns();
    }
    if (now >= next_sweep) {
      sweep(now);
      next_sweep = now + kSweepNs;
      now = monotonic_ns();
    }
  }
  shared.publish(batch, true);
  shared.connection_waits += connection_waits;
  {
    std::lock_guard<std::mutex> lock(shared.records_mutex);
    shared.widest_pool_ahead_ns = std::max({shared.widest_pool_ahead_ns, widest_ahead_ns, opt.pool_ahead_ns});
  }
  for (const auto& [option, failure] : option_failures) {
    warnings.push_back(fmt::format("worker {}: {} could not be set for {} flows ({}); they ran without it", index,
                                   option, failure.flows, std::strerror(failure.error)));
  }
}

Worker::Worker(Shared& shared, unsigned index)
    : shared_(shared), index_(index), ring_(kWorkerRingFlows), impl_(std::make_unique<Impl>(shared, *this)) {}

Worker::~Worker() { join(); }

void Worker::start(const std::vector<std::uint32_t>& warm_destinations) {
  thread_ = std::thread([this, warm_destinations] {
    try {
      impl_->run(index_, warm_destinations);
    } catch (const std::exception& e) {
      impl_->warnings.push_back(fmt::format("worker {} stopped: {}", index_, e.what()));
    }
    ready_.store(true);
    finished_.store(true);
  });
}

void Worker::join() {
  if (thread_.joinable()) thread_.join();
}

std::vector<std::string> Worker::warnings() { return impl_->warnings; }

void Worker::handed(std::int64_t due_abs) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::int64_t until = sleeps_until_.load(std::memory_order_relaxed);
  // Once per sleep: the first ring takes the time (0: awake), so a burst of
  // flows handed over rings once, and a worker behind schedule never.
  if (until != 0 && due_abs - shared_.options.spin_ns < until && sleeps_until_.compare_exchange_strong(until, 0)) {
    impl_->doorbell.ring();
  }
}

}  // namespace xtk::client_detail
