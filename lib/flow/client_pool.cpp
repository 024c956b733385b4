// The worker's connection pool: connections per destination, opened ahead of
// the flows due within --pool-ahead (plus --pool-init spares) while the next
// start leaves time, retried with backoff when connecting fails, and
// handshakes that take too long no longer counted on.
#include <algorithm>

#include "core/clock.hpp"
#include "flow/client_worker_impl.hpp"

namespace xtk::client_detail {
namespace {

constexpr std::int64_t kMinBackoffNs = 10'000'000, kMaxBackoffNs = 1'000'000'000;
// More than opening one connection costs the worker (socket, options, SYN):
// connections are opened ahead only while the next start is further away.
constexpr std::int64_t kOpenCostNs = 30'000;

}  // namespace

void Worker::Impl::add_destinations(std::uint32_t up_to) { dsts.resize(up_to + 1); }

void Worker::Impl::close_connection(Connection& c) {
  DestinationState& ds = dst_state(c.dst);
  --ds.open;
  if (c.state == Connection::State::connecting) forget_connecting(ds, c);
  if (c.state == Connection::State::idle) ds.idle.erase(std::find(ds.idle.begin(), ds.idle.end(), &c));
  if (c.flow) {
    --active;
    if (c.flow->plan.stream) --streams;
  }
  connections.erase(&c);
}

void Worker::Impl::forget_connecting(DestinationState& ds, Connection& c) {
  ds.connecting.erase(std::find(ds.connecting.begin(), ds.connecting.end(), &c));
}

// Handshakes that may still complete soon (not stale).
std::size_t Worker::Impl::fresh_connecting(const DestinationState& ds, std::int64_t now) const {
  const std::int64_t patience = stale_connect_ns();
  std::size_t stale = 0;
  while (stale < ds.connecting.size() && now - ds.connecting[stale]->opened_abs > patience) ++stale;
  return ds.connecting.size() - stale;
}

// Whether another connection to `ds` may open for `wanted` flows (and spares):
// within --pool-limit, and with at most one stale handshake standing in for
// each wanted one, so slow handshakes at a congested port are not answered
// with a SYN for every flow every few milliseconds.
bool Worker::Impl::may_connect(const DestinationState& ds, std::size_t wanted) const {
  return ds.open < opt.pool_limit && ds.connecting.size() < 2 * wanted;
}

// Pool: learns what slow handshakes take, and lets the feeder hand flows over
// early enough for the look-ahead that follows.
// Per-flow connections open at their flow's start: nothing to look ahead for.
void Worker::Impl::handshake_took(std::int64_t ns) {
  if (opt.policy != ConnectionPolicy::pool || ns >= kSynRetryNs) return;
  // Up at once to a slower handshake, down a sixteenth of the way to a faster
  // one. At a congested port the queue, and with it the handshake, swings
  // between near empty and full (a loss-based TCP drains it after each loss),
  // and the window must cover the slow ones: with an average of the last
  // four, a burst's flows waited for handshakes that took twice that average.
  handshake_ns = ns > handshake_ns ? ns : handshake_ns - (handshake_ns - ns) / 16;
  widest_ahead_ns = std::max(widest_ahead_ns, pool_ahead_ns());
  const std::int64_t lookahead = pool_ahead_ns() + kFeederMarginNs;
  std::int64_t seen = shared.lookahead_ns.load(std::memory_order_relaxed);
  while (lookahead > seen && !shared.lookahead_ns.compare_exchange_weak(seen, lookahead)) {
  }
}

// Opens a connection to `dst`, with `flow` attached for the per-flow policy.
void Worker::Impl::open_connection(std::uint32_t dst, std::int64_t now, std::optional<ActiveFlow> flow, bool warm) {
  DestinationState& ds = dst_state(dst);
  auto c = std::make_unique<Connection>(*this);
  std::string error;
  c->channel = transport->connect(shared.destinations[dst].address, *c, &error);
  if (!c->channel) {
    connect_failed(dst, error, now, flow);
    return;
  }
  c->dst = dst;
  c->warm = warm;
  if (flow) {
    ++active;
    if (flow->plan.stream) ++streams;
    c->flow = flow;
  }
  ++ds.open;
  c->opened_abs = now;
  ds.connecting.push_back(c.get());
  Connection& ref = *c;
  connections.emplace(&ref, std::move(c));
}

void Worker::Impl::connect_failed(std::uint32_t dst, const std::string& reason, std::int64_t now,
                                  std::optional<ActiveFlow> flow) {
  DestinationState& ds = dst_state(dst);
  ds.last_error = fmt::format("connect to {}: {}", shared.destinations[dst].address.to_string(), reason);
  if (ds.failing_since == 0) ds.failing_since = now;
  ds.backoff_ns = std::clamp(ds.backoff_ns * 2, kMinBackoffNs, kMaxBackoffNs);
  ds.next_connect_abs = now + ds.backoff_ns;
  if (flow) {
    ds.pending.push_front(flow->plan);  // per-flow: the next attempt restarts its clock
    ++pending;
  }
}

// Opens what the pending flows of `dst` need, within the limit and the backoff.
void Worker::Impl::feed_connections(std::uint32_t dst, std::int64_t now) {
  DestinationState& ds = dst_state(dst);
  // A full pool opens nothing: a schedule faster than the machine queues every flow, and each calls here.
  if (ds.open >= opt.pool_limit || now < ds.next_connect_abs || shared.stopping.load(std::memory_order_relaxed)) {
    return;
  }
  if (opt.policy == ConnectionPolicy::per_flow) {
    while (!ds.pending.empty() && ds.open < opt.pool_limit) {
      const ActiveFlow flow{ds.pending.front(), now};  // the handshake counts in the FCT
      ds.pending.pop_front();
      --pending;
      open_connection(dst, now, flow, false);
      if (ds.next_connect_abs > now) return;  // that attempt failed at once
    }
    return;
  }
  while (ds.pending.size() > fresh_connecting(ds, now) && may_connect(ds, ds.pending.size())) {
    open_connection(dst, now, std::nullopt, false);
    if (ds.next_connect_abs > now) return;
  }
  top_up(dst, now);
}

// Pool: keeps a connection open or opening for every flow of `dst` due
// within --pool-ahead plus --pool-init spares, so a flow finds one ready
// instead of waiting for a handshake. Returns false when time ran out
// (the next start is too close to open another one now).
bool Worker::Impl::top_up(std::uint32_t dst, std::int64_t now) {
  DestinationState& ds = dst_state(dst);
  if (opt.policy != ConnectionPolicy::pool || now < ds.next_connect_abs) return true;
  while (ds.idle.size() + fresh_connecting(ds, now) < opt.pool_init + ds.upcoming &&
         may_connect(ds, opt.pool_init + ds.upcoming)) {
    if (now + kOpenCostNs + opt.spin_ns >= next_due()) return false;
    open_connection(dst, now, std::nullopt, false);
    if (ds.next_connect_abs > now) return true;
    now = monotonic_ns();
  }
  return true;
}

void Worker::Impl::short_list(std::uint32_t dst) {
  DestinationState& ds = dst_state(dst);
  if (ds.short_listed || opt.policy != ConnectionPolicy::pool) return;
  ds.short_listed = true;
  short_of.push_back(dst);
}

// Counts the flows due within --pool-ahead into their destination's
// `upcoming` and opens the connections they need while there is time.
void Worker::Impl::open_ahead(std::int64_t now) {
  if (opt.policy != ConnectionPolicy::pool) return;
  const std::int64_t horizon = relative(now) + pool_ahead_ns();
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

// Takes the front flow off the ring (a copy: the feeder may reuse its slot),
// uncounting it from `upcoming`.
PlannedFlow Worker::Impl::pop_front() {
  const PlannedFlow plan = *self.ring_.front();
  if (ahead > 0) {
    --ahead;
    if (!plan.stream) --dst_state(plan.dst).upcoming;
  }
  self.ring_.pop();
  return plan;
}

// No connection can take a new flow to `dst` now: the pool is busy and full.
bool Worker::Impl::saturated(std::uint32_t dst) {
  const DestinationState& ds = dst_state(dst);
  return ds.open >= opt.pool_limit && (opt.policy == ConnectionPolicy::per_flow || ds.idle.empty());
}

}  // namespace xtk::client_detail
