// One worker thread of the client: the feeder (client.cpp) hands it flows
// through its ring; it starts each at its deadline on a connection of its
// pool, whose channel (lib/transport: TCP, ...) moves the flow's bytes. Its
// parts live in two files:
//   client_worker.cpp  the event loop, the timing of starts, each flow's start and end;
//   client_pool.cpp    the connection pool: per-destination state, opening
//                      ahead of starts (--pool-ahead), backoff, stale handshakes.
// Internal to lib/flow.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "flow/client_worker.hpp"
#include "flow/growing_ring.hpp"
#include "transport/transport.hpp"

namespace xtk::client_detail {

// A handshake not done after this long, nor after twice what slow ones took,
// may have lost its SYN in a full queue (the kernel retries it only after a
// second): the pool stops counting on it and opens another, keeping it in case
// it completes.
constexpr std::int64_t kStaleConnectNs = 3'000'000;
// A handshake this long lost its SYN and waited for the kernel's retry: it
// says nothing of the queue.
constexpr std::int64_t kSynRetryNs = 900'000'000;

// An eventfd in the worker's epoll set: the feeder rings it to wake the
// worker early (Worker::handed).
class Doorbell final : public EventSource {
 public:
  explicit Doorbell(Poller& poller);  // throws Error
  void ring() const;
  void on_events(std::uint32_t events, std::int64_t now) override;  // takes the rings

 private:
  Fd fd_;
};

struct ActiveFlow {
  PlannedFlow plan;
  std::int64_t start_abs = 0;
};

// A pooled connection: the pool's state of it, and the transport's channel,
// whose events it passes on to the worker.
struct Connection final : ChannelOwner {
  enum class State { connecting, idle, busy } state = State::connecting;
  Worker::Impl& worker;
  std::unique_ptr<Channel> channel;
  std::uint32_t dst = 0;
  // Held in place, not on the heap: small flows flat out start one every few
  // microseconds. Per-flow policy: attached while connecting too.
  std::optional<ActiveFlow> flow;
  bool warm = false;  // opened before the start
  std::int64_t opened_abs = 0;

  explicit Connection(Worker::Impl& w) : worker(w) {}
  void connected(std::int64_t now) override;
  void connect_failed(std::string reason, std::int64_t now) override;
  void flow_ended(FlowEnd end, std::int64_t now) override;
  void closed(std::int64_t now) override;
  void option_failed(std::string_view option, int error) override;
  std::int64_t next_due() const override;
};

struct DestinationState {
  std::vector<Connection*> idle;
  std::size_t open = 0;
  std::vector<Connection*> connecting;  // handshakes in progress, oldest first
  std::size_t upcoming = 0;             // flows due within --pool-ahead, not started yet
  bool short_listed = false;            // in Impl::short_of
  GrowingRing<PlannedFlow> pending;     // due, waiting for a connection
  std::int64_t next_connect_abs = 0, backoff_ns = 0, failing_since = 0;
  std::string last_error;
};

struct Worker::Impl {
  Shared& shared;
  const ClientOptions& opt;
  Worker& self;
  Poller poller;
  Doorbell doorbell;
  std::unique_ptr<ClientTransport> transport;
  std::unordered_map<Connection*, std::unique_ptr<Connection>> connections;
  std::vector<DestinationState> dsts;
  FinishedFlows batch;
  std::vector<std::string> warnings;
  struct OptionFailure {
    std::uint64_t flows = 0;
    int error = 0;  // the first one's errno
  };
  std::map<std::string, OptionFailure> option_failures;  // by socket option: a warning at the end
  std::size_t warm_left = 0, active = 0, pending = 0, streams = 0;
  std::uint64_t connection_waits = 0;
  std::size_t ahead = 0;                // ring entries from the front counted into `upcoming`
  std::vector<std::uint32_t> short_of;  // destinations that may need connections opened ahead
  std::int64_t last_publish = 0;
  std::int64_t last_sleep = 0;              // when the worker last slept (blocked in a wait)
  std::int64_t wait_from = 0, wait_to = 0;  // its last wait on the poller: entered, returned
  bool backlog_full = false;                // due flows left on the ring: kMaxPendingFlows wait for connections
  bool fifo = false;                        // at SCHED_FIFO now (it gives it up while busy)
  std::int64_t handshake_ns = 0;            // what recent slow handshakes took (client_pool.cpp, handshake_took)
  std::int64_t widest_ahead_ns = 0;         // the widest pool_ahead_ns() reached (for the summary)

  Impl(Shared& s, Worker& w) : shared(s), opt(s.options), self(w), poller(s.options.batch_sends), doorbell(poller) {
    ChannelOptions channel;
    channel.device = opt.device;
    channel.nodelay = opt.nodelay;
    channel.send_buffer = opt.send_buffer;
    channel.receive_buffer = opt.receive_buffer;
    channel.congestion_control = opt.congestion_control;
    transport = make_client_transport(opt.transport, channel, poller);
  }

  // Several calls a flow: the growth, once per destination, stays out of line.
  DestinationState& dst_state(std::uint32_t dst) {
    if (dst >= dsts.size()) [[unlikely]]
      add_destinations(dst);
    return dsts[dst];
  }
  void add_destinations(std::uint32_t up_to);

  std::int64_t relative(std::int64_t abs) const { return abs - shared.start_mono_ns; }

  // When the next flow in the ring is due (absolute), or "never".
  std::int64_t next_due() const {
    if (shared.stopping.load(std::memory_order_relaxed)) return INT64_MAX;
    const PlannedFlow* plan = self.ring_.front();
    return plan ? shared.start_mono_ns + plan->sched_ns : INT64_MAX;
  }

  // The connection pool (client_pool.cpp).
  void close_connection(Connection& c);
  static void forget_connecting(DestinationState& ds, Connection& c);
  std::size_t fresh_connecting(const DestinationState& ds, std::int64_t now) const;
  std::int64_t stale_connect_ns() const { return std::max(kStaleConnectNs, 2 * handshake_ns); }
  std::int64_t pool_ahead_ns() const {
    return std::max(opt.pool_ahead_ns, std::min(kMaxPoolAheadNs, 2 * handshake_ns));
  }
  bool may_connect(const DestinationState& ds, std::size_t wanted) const;
  void handshake_took(std::int64_t ns);
  void open_connection(std::uint32_t dst, std::int64_t now, std::optional<ActiveFlow> flow, bool warm);
  void connect_failed(std::uint32_t dst, const std::string& reason, std::int64_t now, std::optional<ActiveFlow> flow);
  void feed_connections(std::uint32_t dst, std::int64_t now);
  bool top_up(std::uint32_t dst, std::int64_t now);
  void short_list(std::uint32_t dst);
  void open_ahead(std::int64_t now);
  PlannedFlow pop_front();
  bool saturated(std::uint32_t dst);
  // Whether the ring's front flow, begun now, would only queue for a
  // connection: its destination saturated, or the backlog full.
  bool front_must_wait() {
    const PlannedFlow* plan = self.ring_.front();
    return plan != nullptr && !plan->stream && (pending >= kMaxPendingFlows || saturated(plan->dst));
  }

  // Flows and the event loop (client_worker.cpp).
  void launch(Connection& c, ActiveFlow flow, std::int64_t now);
  void release(Connection& c, bool reusable, std::int64_t now);
  void finish(Connection& c, FlowStatus status, std::string error, std::uint64_t stream_bytes, std::int64_t now);
  void on_connected(Connection& c, std::int64_t now);
  void on_connect_failed(Connection& c, const std::string& reason, std::int64_t now);
  bool begin(PlannedFlow plan, std::int64_t now);  // true when it made a system call (a start, a connect)
  void sweep(std::int64_t now);
  void cancel_all(bool in_flight);
  void prepare_thread(unsigned index);
  // `seen_due`: next_due() when `deadline` was chosen; a flow handed over since returns at once.
  void wait_and_handle(std::int64_t deadline, bool spin, std::int64_t seen_due);
  void run(unsigned index, const std::vector<std::uint32_t>& warm);
};

}  // namespace xtk::client_detail
