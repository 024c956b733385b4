// The worker's event loop (wait for I/O or the next start, start every flow
// that is due, sweep for timeouts) and each flow's I/O: header and payload out,
// the ack or the pulled bytes in, the record when it ends.
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "flow/client_worker_impl.hpp"

namespace xtk::client_detail {
namespace {

constexpr std::size_t kChunk = 1 << 18;
constexpr std::int64_t kSweepNs = 10'000'000;
constexpr std::int64_t kIdleWaitNs = 5'000'000;  // longest sleep while the feeder may add flows
constexpr std::int64_t kPublishNs = 20'000'000;
// Data transfer yields to the scheduler this long before the next flow's start:
// about what one more chunk of copying takes.
constexpr std::int64_t kYieldNs = 30'000;
// Before a start, no I/O begins this late: about what one small write takes.
constexpr std::int64_t kLastStretchNs = 10'000;
constexpr std::int64_t kBatchNs = 50'000;
// A SCHED_FIFO worker that never sleeps starves the kernel threads bound to
// its CPU, until the kernel's fair-share server runs them ahead of it for
// milliseconds. After this long without sleeping the worker pauses briefly
// (kBreatheNs) while no start is near, so they run a little and often.
constexpr std::int64_t kBreatheAfterNs = 2'000'000;
constexpr std::int64_t kBreatheNs = 20'000;

const std::vector<char>& zeros() {
  static const std::vector<char> buffer(kChunk, 0);
  return buffer;
}

}  // namespace

bool Shared::publish(std::vector<FlowRecord>& batch, bool wait) {
  if (batch.empty()) return true;
  std::unique_lock<std::mutex> lock(records_mutex, std::defer_lock);
  if (wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return false;
  }
  for (auto& r : batch) records.push_back(std::move(r));
  batch.clear();
  return true;
}

void Worker::Impl::record(const PlannedFlow& plan, std::int64_t start_abs, std::int64_t end_abs, FlowStatus status,
                          std::string error, std::uint64_t size) {
  FlowRecord r;
  r.flow_id = plan.id;
  r.dst = shared.destinations[plan.dst].name;
  r.size_bytes = size;
  r.sched_start_ns = plan.sched_ns;
  r.start_ns = start_abs > 0 ? relative(start_abs) : -1;
  r.end_ns = end_abs > 0 ? relative(end_abs) : -1;
  r.status = status;
  r.error = std::move(error);
  batch.push_back(std::move(r));
}

void Worker::Impl::apply_class(Connection& c, const PlannedFlow& plan) {
  const int family = shared.destinations[c.dst].address.family();
  if (c.dscp != plan.dscp && set_dscp(c.fd.get(), family, plan.dscp) == 0) c.dscp = plan.dscp;
  if (c.pacing_bps != plan.rate_bps && set_pacing_bps(c.fd.get(), plan.rate_bps) == 0) c.pacing_bps = plan.rate_bps;
}

void Worker::Impl::launch(Connection& c, std::unique_ptr<ActiveFlow> flow, std::int64_t now) {
  if (flow->start_abs == 0) flow->start_abs = now;
  const PlannedFlow& plan = flow->plan;
  apply_class(c, plan);
  FlowHeader h;
  h.direction = plan.stream ? Direction::push : opt.direction;
  h.stream = plan.stream;
  h.flow_id = plan.id;
  h.size_bytes = plan.size_bytes;
  h.token = opt.token;
  flow->header = encode(h);
  flow->payload_left = h.direction == Direction::push && !plan.stream ? plan.size_bytes : 0;
  flow->receive_left = h.direction == Direction::pull ? plan.size_bytes : 0;
  if (!c.flow) {
    ++active;
    if (plan.stream) ++streams;
  }
  c.flow = std::move(flow);
  c.state = Connection::State::busy;
  write_flow(c, now);
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
    auto flow = std::make_unique<ActiveFlow>();
    flow->plan = ds.pending.front();
    ds.pending.pop_front();
    --pending;
    launch(c, std::move(flow), now);
    return;
  }
  c.state = Connection::State::idle;
  ds.idle.push_back(&c);
  set_events(c, EPOLLIN | EPOLLRDHUP);
}

void Worker::Impl::finish(Connection& c, FlowStatus status, std::string error, std::int64_t now) {
  const ActiveFlow& f = *c.flow;
  const std::uint64_t size = f.plan.stream ? f.stream_bytes : f.plan.size_bytes;
  record(f.plan, f.start_abs, status == FlowStatus::ok ? now : 0, status, std::move(error), size);
  release(c, status == FlowStatus::ok && !f.plan.stream, now);
}

void Worker::Impl::write_flow(Connection& c, std::int64_t now) {
  ActiveFlow& f = *c.flow;
  const bool stream = f.plan.stream;
  while (f.header_sent < kFlowHeaderBytes || f.payload_left > 0 || stream) {
    if (stream && now >= shared.start_mono_ns + f.plan.stop_ns) {
      shutdown(c.fd.get(), SHUT_WR);
      finish(c, FlowStatus::ok, "", now);
      return;
    }
    iovec iov[2];
    int count = 0;
    if (f.header_sent < kFlowHeaderBytes) {
      iov[count++] = {f.header.data() + f.header_sent, kFlowHeaderBytes - f.header_sent};
    }
    // Small writes near the next start, so one copy cannot make it late
    // (the first write of a flow whose successor is due right after it too).
    const std::int64_t until_next = next_due() - now;
    const std::size_t chunk = until_next < kYieldNs ? kChunk / 64 : until_next < 20 * kYieldNs ? kChunk / 8 : kChunk;
    const std::size_t payload = stream ? chunk : std::min<std::uint64_t>(f.payload_left, chunk);
    if (payload > 0) iov[count++] = {const_cast<char*>(zeros().data()), payload};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(count);
    const ssize_t n = sendmsg(c.fd.get(), &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        set_events(c, EPOLLOUT | EPOLLIN | EPOLLRDHUP);
        return;
      }
      finish(c, FlowStatus::failed, fmt::format("send: {}", errno_text(errno)), now);
      return;
    }
    auto sent = static_cast<std::size_t>(n);
    const std::size_t header_part = std::min(sent, kFlowHeaderBytes - f.header_sent);
    f.header_sent += header_part;
    sent -= header_part;
    if (stream) {
      f.stream_bytes += sent;
    } else {
      f.payload_left -= sent;
    }
    now = monotonic_ns();
    if ((f.payload_left > 0 || stream) && now + kYieldNs >= next_due()) {
      set_events(c, EPOLLOUT | EPOLLIN | EPOLLRDHUP);  // level-triggered: resumes after the start
      return;
    }
  }
  set_events(c, EPOLLIN | EPOLLRDHUP);  // the ack (push) or the data (pull)
}

void Worker::Impl::read_flow(Connection& c, std::int64_t now) {
  ActiveFlow& f = *c.flow;
  while (true) {
    ssize_t n = 0;
    if (f.receive_left > 0) {
      n = recv(c.fd.get(), const_cast<char*>(zeros().data()), std::min<std::uint64_t>(f.receive_left, kChunk),
               MSG_TRUNC);
    } else if (!f.plan.stream && opt.direction == Direction::push && f.header_sent == kFlowHeaderBytes &&
               f.payload_left == 0) {
      n = recv(c.fd.get(), f.ack.data() + f.ack_got, kAckBytes - f.ack_got, 0);
    } else {
      char probe = 0;  // nothing is due now: only a close or an error can arrive
      n = recv(c.fd.get(), &probe, 1, MSG_PEEK);
      if (n > 0) return;
    }
    if (n == 0) {
      finish(c, FlowStatus::failed, "the server closed the connection mid-flow", now);
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      finish(c, FlowStatus::failed, fmt::format("recv: {}", errno_text(errno)), now);
      return;
    }
    if (f.receive_left > 0) {
      f.receive_left -= static_cast<std::uint64_t>(n);
      if (f.receive_left == 0) {
        finish(c, FlowStatus::ok, "", monotonic_ns());
        return;
      }
      if (monotonic_ns() + kYieldNs >= next_due()) return;  // level-triggered: resumes after the start
      continue;
    }
    f.ack_got += static_cast<std::size_t>(n);
    if (f.ack_got == kAckBytes) {
      if (decode_ack(f.ack) != f.plan.id) {
        finish(c, FlowStatus::failed, "acknowledgement for another flow", now);
      } else {
        finish(c, FlowStatus::ok, "", now);
      }
      return;
    }
  }
}

void Worker::Impl::on_event(Connection& c, std::uint32_t events, std::int64_t now) {
  DestinationState& ds = dst_state(c.dst);
  if (c.state == Connection::State::connecting) {
    // The pending error is read only when epoll reports one: a syscall saved per connection.
    const int error = (events & (EPOLLERR | EPOLLHUP)) ? socket_error(c.fd.get()) : 0;
    if (c.warm) --warm_left;
    if (error != 0 || (events & (EPOLLERR | EPOLLHUP))) {
      auto flow = std::move(c.flow);
      if (flow) {
        --active;
        if (flow->plan.stream) --streams;
      }
      const std::uint32_t dst = c.dst;
      close_connection(c);
      connect_failed(dst, error != 0 ? error : ECONNREFUSED, now, std::move(flow));
      return;
    }
    forget_connecting(ds, c);
    ds.backoff_ns = 0;
    ds.failing_since = 0;
    ds.last_error.clear();
    if (c.flow) {
      c.state = Connection::State::busy;
      auto flow = std::move(c.flow);
      --active;
      if (flow->plan.stream) --streams;
      launch(c, std::move(flow), now);
    } else {
      release(c, true, now);
    }
    return;
  }
  if (c.state == Connection::State::idle) {
    close_connection(c);  // an idle connection only wakes when the server closes it
    return;
  }
  if (events & EPOLLOUT) {
    write_flow(c, now);
    if (connections.count(&c) == 0 || c.state != Connection::State::busy) return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) read_flow(c, now);
}

void Worker::Impl::begin(const PlannedFlow& plan, std::int64_t now) {
  DestinationState& ds = dst_state(plan.dst);
  if (opt.policy == ConnectionPolicy::pool && !plan.stream && !ds.idle.empty()) {
    Connection* c = ds.idle.back();
    ds.idle.pop_back();
    auto flow = std::make_unique<ActiveFlow>();
    flow->plan = plan;
    launch(*c, std::move(flow), now);
    short_list(plan.dst);  // replaced in the loop, when the next start leaves time
    return;
  }
  if (plan.stream) {
    auto flow = std::make_unique<ActiveFlow>();
    flow->plan = plan;
    flow->start_abs = now;
    open_connection(plan.dst, now, std::move(flow), false);
    return;
  }
  ds.pending.push_back(plan);
  ++pending;
  if (opt.policy == ConnectionPolicy::pool) ++connection_waits;
  feed_connections(plan.dst, now);
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
           now);
  }
  for (std::uint32_t d = 0; d < dsts.size(); ++d) {
    DestinationState& ds = dsts[d];
    while (!ds.pending.empty()) {
      const PlannedFlow& plan = ds.pending.front();
      const std::int64_t waited = now - (shared.start_mono_ns + plan.sched_ns);
      if (!ds.last_error.empty() && waited > opt.retry_ns) {
        record(plan, 0, 0, FlowStatus::failed,
               fmt::format("{} (retried for {:.1f} s)", ds.last_error, static_cast<double>(waited) / 1e9),
               plan.size_bytes);
      } else if (waited > opt.flow_timeout_ns) {
        record(plan, 0, 0, FlowStatus::timeout, "no free connection in time (raise --pool-limit)", plan.size_bytes);
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
    record(*plan, 0, 0, FlowStatus::cancelled, "interrupted before start", plan->size_bytes);
    pop_front();
  }
  for (auto& ds : dsts) {
    for (const auto& plan : ds.pending) {
      record(plan, 0, 0, FlowStatus::cancelled, "interrupted before start", plan.size_bytes);
    }
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
    record(f.plan, c->state == Connection::State::busy ? f.start_abs : 0, 0, FlowStatus::cancelled,
           "interrupted in flight", f.plan.stream ? f.stream_bytes : f.plan.size_bytes);
    close_connection(*c);
  }
}

void Worker::Impl::prepare_thread(unsigned index) {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // wake-ups at the asked time, not 50 us later
  if (!opt.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(opt.cpus[index % opt.cpus.size()], &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
      warnings.push_back(fmt::format("worker {}: cannot pin to CPU {}", index, opt.cpus[index % opt.cpus.size()]));
    }
  }
  if (opt.realtime) {
    sched_param param{};
    param.sched_priority = 50;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) != 0) {
      warnings.push_back(fmt::format("worker {}: SCHED_FIFO not permitted; running with normal priority", index));
    }
  }
}

// Waits for I/O until `deadline` (absolute): with `spin`, sleeps until --spin
// before it, polls epoll, and spins on the clock for the last stretch.
void Worker::Impl::wait_and_handle(std::int64_t deadline, bool spin, std::vector<epoll_event>& events) {
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
  if (opt.realtime && now - last_sleep > kBreatheAfterNs && deadline - now > kBreatheNs + opt.spin_ns + kYieldNs) {
    const timespec pause = to_timespec(kBreatheNs);
    clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, nullptr);
    last_sleep = monotonic_ns();
  }
  const timespec timeout = to_timespec(wait_ns);
  const int n = epoll_pwait2(epoll.get(), events.data(), static_cast<int>(events.size()), &timeout, nullptr);
  if (n == 0 && wait_ns > 0) last_sleep = monotonic_ns();
  const std::int64_t io_from = monotonic_ns();
  for (int i = 0; i < n; ++i) {
    const std::int64_t now_i = monotonic_ns();
    // A flow start comes first; the events left are reported again (level-triggered).
    // Events still go through close to a start while they can end before it
    // (near a start, each does one small write or read): with starts a few
    // tens of microseconds apart, that is the only time the I/O gets.
    const std::int64_t due = next_due();
    if (due - now_i <= kLastStretchNs && !(behind && now_i - io_from < kYieldNs)) return;
    auto* c = static_cast<Connection*>(events[i].data.ptr);
    if (connections.count(c) == 0) continue;  // closed by an earlier event in this batch
    on_event(*c, events[i].events, now_i);
  }
}

void Worker::Impl::run(unsigned index, const std::vector<std::uint32_t>& warm) {
  prepare_thread(index);
  std::int64_t now = monotonic_ns();
  if (opt.policy == ConnectionPolicy::pool) {
    for (std::uint32_t dst : warm) {
      for (std::size_t k = 0; k < opt.pool_init; ++k) {
        ++warm_left;
        open_connection(dst, now, nullptr, true);
      }
    }
  }
  std::vector<epoll_event> events(256);
  std::int64_t next_sweep = now + kSweepNs;
  bool cancelled_in_flight = false;
  while (true) {
    now = monotonic_ns();
    if (warm_left == 0 || now >= shared.start_mono_ns) self.ready_.store(true);
    const bool stopping = shared.stopping.load(std::memory_order_relaxed);
    if (stopping) {
      const bool in_flight = now >= shared.stop_deadline_ns.load(std::memory_order_relaxed);
      if (!cancelled_in_flight) cancel_all(in_flight);
      cancelled_in_flight = in_flight;
    } else {
      while (const PlannedFlow* plan = self.ring_.front()) {
        if (shared.start_mono_ns + plan->sched_ns > now) break;
        begin(*plan, now);
        pop_front();
        now = monotonic_ns();
      }
      open_ahead(now);
      now = monotonic_ns();
    }
    // Never waits for the writer: a SCHED_FIFO worker blocked on a lock held
    // by a preempted normal thread would start its next flows late.
    if ((now - last_publish >= kPublishNs || batch.size() >= 1024) && shared.publish(batch, false)) {
      last_publish = now;
    }
    const bool fed = shared.feeding_done.load(std::memory_order_acquire);
    if (fed && self.ring_.front() == nullptr && pending == 0 && active == 0) break;
    if (stopping && cancelled_in_flight) break;

    std::int64_t deadline = std::min(next_sweep, now + (fed ? kSweepNs : kIdleWaitNs));
    bool spin = false;
    if (!stopping) {
      if (const PlannedFlow* plan = self.ring_.front()) {
        const std::int64_t due = shared.start_mono_ns + plan->sched_ns;
        if (due <= deadline) {
          if (!saturated(plan->dst)) {
            deadline = due;
            spin = true;
          } else {
            // It will wait for a free connection anyway: no spin, and wake-ups
            // batched, so a backlog costs no timer per flow; flows behind it
            // (other destinations) start at most kBatchNs late.
            deadline = std::max(due, now + kBatchNs);
          }
        }
      }
    }
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
        refeed = std::min(refeed, ds.connecting[ds.connecting.size() - fresh]->opened_abs + kStaleConnectNs + 1);
    }
    wait_and_handle(std::min(deadline, refeed), spin, events);
    now = monotonic_ns();
    if (now >= refeed) {
      for (std::uint32_t d = 0; d < dsts.size(); ++d) {
        if (!dsts[d].pending.empty()) feed_connections(d, now);
      }
    }
    if (streams > 0) {
      std::vector<Connection*> due;
      for (auto& [ptr, c] : connections) {
        if (c->flow && c->flow->plan.stream && c->state == Connection::State::busy &&
            now >= shared.start_mono_ns + c->flow->plan.stop_ns) {
          due.push_back(ptr);
        }
      }
      for (Connection* c : due) write_flow(*c, now);
    }
    if (now >= next_sweep) {
      sweep(now);
      next_sweep = now + kSweepNs;
    }
  }
  shared.publish(batch, true);
  shared.connection_waits += connection_waits;
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

}  // namespace xtk::client_detail
