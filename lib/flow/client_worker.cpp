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
#include "flow/client_worker.hpp"

namespace xtk::client_detail {
namespace {

constexpr std::size_t kChunk = 1 << 18;
constexpr std::int64_t kSweepNs = 10'000'000;
constexpr std::int64_t kIdleWaitNs = 5'000'000;  // longest sleep while the feeder may add flows
constexpr std::int64_t kPublishNs = 20'000'000;
constexpr std::int64_t kMinBackoffNs = 10'000'000, kMaxBackoffNs = 1'000'000'000;
// Data transfer yields to the scheduler this long before the next flow's start:
// about what one more chunk of copying takes.
constexpr std::int64_t kYieldNs = 30'000;
constexpr std::int64_t kBatchNs = 50'000;
// More than opening one connection costs the worker (socket, options, SYN):
// connections are opened ahead only while the next start is further away.
constexpr std::int64_t kOpenCostNs = 30'000;
// A handshake not done after this long may have lost its SYN in a full queue
// (the kernel retries it only after a second): the pool stops counting on it
// and opens another, keeping it in case it completes.
constexpr std::int64_t kStaleConnectNs = 3'000'000;
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

struct ActiveFlow {
  PlannedFlow plan;
  std::int64_t start_abs = 0;
  HeaderBytes header{};
  std::size_t header_sent = 0;
  std::uint64_t payload_left = 0, receive_left = 0, stream_bytes = 0;
  AckBytes ack{};
  std::size_t ack_got = 0;
};

struct Connection {
  enum class State { connecting, idle, busy } state = State::connecting;
  Fd fd;
  std::uint32_t dst = 0;
  std::unique_ptr<ActiveFlow> flow;  // per-flow policy: attached while connecting too
  int dscp = 0;
  std::uint64_t pacing_bps = 0;
  std::uint32_t events = 0;
  bool warm = false;  // opened before the start
  std::int64_t opened_abs = 0;
};

struct DestinationState {
  std::vector<Connection*> idle;
  std::size_t open = 0;
  std::vector<Connection*> connecting;  // handshakes in progress, oldest first
  std::size_t upcoming = 0;             // flows due within --pool-ahead, not started yet
  bool short_listed = false;            // in Impl::short_of
  std::deque<PlannedFlow> pending;      // due, waiting for a connection
  std::int64_t next_connect_abs = 0, backoff_ns = 0, failing_since = 0;
  std::string last_error;
};

std::string errno_text(int error) { return std::strerror(error); }

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

struct Worker::Impl {
  Shared& shared;
  const ClientOptions& opt;
  Worker& self;
  Fd epoll;
  std::unordered_map<Connection*, std::unique_ptr<Connection>> connections;
  std::vector<DestinationState> dsts;
  std::vector<FlowRecord> batch;
  std::vector<std::string> warnings;
  std::size_t warm_left = 0, active = 0, pending = 0, streams = 0;
  std::uint64_t connection_waits = 0;
  std::size_t ahead = 0;                // ring entries from the front counted into `upcoming`
  std::vector<std::uint32_t> short_of;  // destinations that may need connections opened ahead
  std::int64_t last_publish = 0;
  std::int64_t last_sleep = 0;  // when the worker last slept (blocked in a wait)

  Impl(Shared& s, Worker& w) : shared(s), opt(s.options), self(w), epoll(epoll_create1(EPOLL_CLOEXEC)) {
    if (!epoll) throw Error(fmt::format("epoll_create1: {}", errno_text(errno)));
  }

  DestinationState& dst_state(std::uint32_t dst) {
    if (dst >= dsts.size()) dsts.resize(dst + 1);
    return dsts[dst];
  }

  std::int64_t relative(std::int64_t abs) const { return abs - shared.start_mono_ns; }

  // When the next flow in the ring is due (absolute), or "never".
  std::int64_t next_due() const {
    if (shared.stopping.load(std::memory_order_relaxed)) return INT64_MAX;
    const PlannedFlow* plan = self.ring_.front();
    return plan ? shared.start_mono_ns + plan->sched_ns : INT64_MAX;
  }

  void set_events(Connection& c, std::uint32_t events) {
    if (c.events == events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = &c;
    epoll_ctl(epoll.get(), c.events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c.fd.get(), &ev);
    c.events = events;
  }

  void record(const PlannedFlow& plan, std::int64_t start_abs, std::int64_t end_abs, FlowStatus status,
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

  void close_connection(Connection& c) {
    DestinationState& ds = dst_state(c.dst);
    --ds.open;  // closing the socket also takes it out of the epoll set
    if (c.state == Connection::State::connecting) forget_connecting(ds, c);
    if (c.state == Connection::State::idle) ds.idle.erase(std::find(ds.idle.begin(), ds.idle.end(), &c));
    if (c.flow) {
      --active;
      if (c.flow->plan.stream) --streams;
    }
    connections.erase(&c);
  }

  static void forget_connecting(DestinationState& ds, Connection& c) {
    ds.connecting.erase(std::find(ds.connecting.begin(), ds.connecting.end(), &c));
  }

  // Handshakes that may still complete soon (not stale).
  static std::size_t fresh_connecting(const DestinationState& ds, std::int64_t now) {
    std::size_t stale = 0;
    while (stale < ds.connecting.size() && now - ds.connecting[stale]->opened_abs > kStaleConnectNs) ++stale;
    return ds.connecting.size() - stale;
  }

  // Opens a connection to `dst`, with `flow` attached for the per-flow policy.
  void open_connection(std::uint32_t dst, std::int64_t now, std::unique_ptr<ActiveFlow> flow, bool warm) {
    DestinationState& ds = dst_state(dst);
    int error = 0;
    Fd fd = connect_tcp_nonblocking(shared.destinations[dst].address, &error);
    if (!fd) {
      connect_failed(dst, error, now, std::move(flow));
      return;
    }
    set_nodelay(fd.get(), opt.nodelay);
    set_buffers(fd.get(), opt.send_buffer, opt.receive_buffer);
    if (!opt.congestion_control.empty()) set_congestion_control(fd.get(), opt.congestion_control);
    auto c = std::make_unique<Connection>();
    c->fd = std::move(fd);
    c->dst = dst;
    c->warm = warm;
    if (flow) {
      ++active;
      if (flow->plan.stream) ++streams;
      c->flow = std::move(flow);
    }
    ++ds.open;
    c->opened_abs = now;
    ds.connecting.push_back(c.get());
    Connection& ref = *c;
    connections.emplace(&ref, std::move(c));
    set_events(ref, EPOLLOUT);
  }

  void connect_failed(std::uint32_t dst, int error, std::int64_t now, std::unique_ptr<ActiveFlow> flow) {
    DestinationState& ds = dst_state(dst);
    ds.last_error = fmt::format("connect to {}: {}", shared.destinations[dst].address.to_string(), errno_text(error));
    if (ds.failing_since == 0) ds.failing_since = now;
    ds.backoff_ns = std::clamp(ds.backoff_ns * 2, kMinBackoffNs, kMaxBackoffNs);
    ds.next_connect_abs = now + ds.backoff_ns;
    if (flow) {
      ds.pending.push_front(flow->plan);  // per-flow: the next attempt restarts its clock
      ++pending;
    }
  }

  // Opens what the pending flows of `dst` need, within the limit and the backoff.
  void feed_connections(std::uint32_t dst, std::int64_t now) {
    DestinationState& ds = dst_state(dst);
    if (now < ds.next_connect_abs || shared.stopping.load(std::memory_order_relaxed)) return;
    if (opt.policy == ConnectionPolicy::per_flow) {
      while (!ds.pending.empty() && ds.open < opt.pool_limit) {
        auto flow = std::make_unique<ActiveFlow>();
        flow->plan = ds.pending.front();
        flow->start_abs = now;  // the handshake counts in the FCT
        ds.pending.pop_front();
        --pending;
        open_connection(dst, now, std::move(flow), false);
        if (ds.next_connect_abs > now) return;  // that attempt failed at once
      }
      return;
    }
    while (ds.pending.size() > fresh_connecting(ds, now) && ds.open < opt.pool_limit) {
      open_connection(dst, now, nullptr, false);
      if (ds.next_connect_abs > now) return;
    }
    top_up(dst, now);
  }

  // Pool: keeps a connection open or opening for every flow of `dst` due
  // within --pool-ahead plus --pool-init spares, so a flow finds one ready
  // instead of waiting for a handshake. Returns false when time ran out
  // (the next start is too close to open another one now).
  bool top_up(std::uint32_t dst, std::int64_t now) {
    DestinationState& ds = dst_state(dst);
    if (opt.policy != ConnectionPolicy::pool || now < ds.next_connect_abs) return true;
    while (ds.idle.size() + fresh_connecting(ds, now) < opt.pool_init + ds.upcoming && ds.open < opt.pool_limit) {
      if (now + kOpenCostNs + opt.spin_ns >= next_due()) return false;
      open_connection(dst, now, nullptr, false);
      if (ds.next_connect_abs > now) return true;
      now = monotonic_ns();
    }
    return true;
  }

  void short_list(std::uint32_t dst) {
    DestinationState& ds = dst_state(dst);
    if (ds.short_listed || opt.policy != ConnectionPolicy::pool) return;
    ds.short_listed = true;
    short_of.push_back(dst);
  }

  // Counts the flows due within --pool-ahead into their destination's
  // `upcoming` and opens the connections they need while there is time.
  void open_ahead(std::int64_t now) {
    if (opt.policy != ConnectionPolicy::pool) return;
    const std::int64_t horizon = relative(now) + opt.pool_ahead_ns;
    while (const PlannedFlow* plan = self.ring_.peek(ahead)) {
      if (plan->sched_ns > horizon) break;
      ++ahead;
      if (plan->stream) continue;
      ++dst_state(plan->dst).upcoming;
      short_list(plan->dst);
    }
    while (!short_of.empty()) {
      const std::uint32_t dst = short_of.back();
      if (!top_up(dst, monotonic_ns())) return;
      dst_state(dst).short_listed = false;
      short_of.pop_back();
    }
  }

  // Takes the front flow off the ring, uncounting it from `upcoming`.
  void pop_front() {
    const PlannedFlow& plan = *self.ring_.front();
    if (ahead > 0) {
      --ahead;
      if (!plan.stream) --dst_state(plan.dst).upcoming;
    }
    self.ring_.pop();
  }

  // No connection can take a new flow to `dst` now: the pool is busy and full.
  bool saturated(std::uint32_t dst) {
    const DestinationState& ds = dst_state(dst);
    return ds.open >= opt.pool_limit && (opt.policy == ConnectionPolicy::per_flow || ds.idle.empty());
  }

  void apply_class(Connection& c, const PlannedFlow& plan) {
    const int family = shared.destinations[c.dst].address.family();
    if (c.dscp != plan.dscp && set_dscp(c.fd.get(), family, plan.dscp) == 0) c.dscp = plan.dscp;
    if (c.pacing_bps != plan.rate_bps && set_pacing_bps(c.fd.get(), plan.rate_bps) == 0) c.pacing_bps = plan.rate_bps;
  }

  void launch(Connection& c, std::unique_ptr<ActiveFlow> flow, std::int64_t now) {
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
  void release(Connection& c, bool reusable, std::int64_t now) {
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

  void finish(Connection& c, FlowStatus status, std::string error, std::int64_t now) {
    const ActiveFlow& f = *c.flow;
    const std::uint64_t size = f.plan.stream ? f.stream_bytes : f.plan.size_bytes;
    record(f.plan, f.start_abs, status == FlowStatus::ok ? now : 0, status, std::move(error), size);
    release(c, status == FlowStatus::ok && !f.plan.stream, now);
  }

  void write_flow(Connection& c, std::int64_t now) {
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

  void read_flow(Connection& c, std::int64_t now) {
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

  void on_event(Connection& c, std::uint32_t events, std::int64_t now) {
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

  void begin(const PlannedFlow& plan, std::int64_t now) {
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

  void sweep(std::int64_t now) {
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

  void cancel_all(bool in_flight) {
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

  void prepare_thread(unsigned index) {
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

  // Waits for I/O until `deadline` (absolute): sleeps to `spin_from`, then polls.
  void wait_and_handle(std::int64_t deadline, bool spin, std::vector<epoll_event>& events) {
    const std::int64_t now = monotonic_ns();
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
    for (int i = 0; i < n; ++i) {
      const std::int64_t now_i = monotonic_ns();
      // A flow start comes first; the events left are reported again (level-triggered).
      // One event goes through when the start is already past (flows fed late,
      // e.g. a schedule faster than the machine), so the I/O cannot starve.
      const std::int64_t due = next_due();
      if (now_i + kYieldNs >= due && (i > 0 || due > now_i)) return;
      auto* c = static_cast<Connection*>(events[i].data.ptr);
      if (connections.count(c) == 0) continue;  // closed by an earlier event in this batch
      on_event(*c, events[i].events, now_i);
    }
  }

  void run(unsigned index, const std::vector<std::uint32_t>& warm) {
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
};

Worker::Worker(Shared& shared, unsigned index)
    : shared_(shared), index_(index), ring_(1 << 16), impl_(std::make_unique<Impl>(shared, *this)) {}

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
