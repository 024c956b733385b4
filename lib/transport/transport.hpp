// The flow engine's transports, behind one interface (as gloo's
// transport::Device/Pair and iperf3's struct protocol): xtk-client's workers
// and xtk-server's workers own the schedule, the connection pool, the records
// and the counters; a transport owns how a flow's bytes move.
//
//   client  ClientTransport::connect opens a Channel to a server; the worker
//           starts one flow at a time on it (FlowStart) and hears back through
//           its ChannelOwner: connected, connect_failed, flow_ended, closed.
//   server  ServerTransport accepts channels on the worker's addresses and
//           serves the flows they carry (sink a push, source a pull, ack),
//           admitting each with admit_flow and counting into ServerStats.
//
// Both run inside the worker's one event loop: a transport registers its
// descriptors (sockets, a completion channel) with the worker's Poller, so
// completions are waited on together with the worker's deadlines. Every call
// comes on the worker's thread.
//
// A new transport is one directory (lib/transport/<name>/) and one line in
// registry.cpp.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "transport/socket.hpp"
#include "transport/wire.hpp"

namespace xtk {

class SendBatch;  // send_batch.hpp

// Something with a descriptor in a worker's Poller.
class EventSource {
 public:
  virtual void on_events(std::uint32_t events, std::int64_t now) = 0;
  // What a send through Poller::send_later did: the bytes sent, or -errno
  // (-EAGAIN: the socket was full).
  virtual void on_sent(std::int64_t /*result*/, std::int64_t /*now*/) {}

 protected:
  ~EventSource() = default;
};

// One worker's epoll set. Sources are dispatched while alive: one that an
// earlier event of the same batch closed is skipped.
class Poller {
 public:
  // With `batch_sends`, the sends made while a wait's events are handled go
  // out together through io_uring where the kernel allows it (send_later).
  explicit Poller(bool batch_sends = false);  // throws Error
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;
  // Level-triggered events of `fd`, reported to `source`.
  void add(int fd, EventSource& source, std::uint32_t events);
  void modify(int fd, EventSource& source, std::uint32_t events);
  // `fd`'s events go to `to` from now on, none of this batch's to `from`.
  void hand_over(int fd, EventSource& from, EventSource& to, std::uint32_t events);
  // When the source goes away; closing its descriptor takes it out of the set.
  void forget(EventSource& source);
  // While dispatch hands out events: room for `bytes` to send on `fd` once
  // they are all handled, in one system call with the other sends they make;
  // `source.on_sent` then gets the result. Null: send now (outside dispatch,
  // no batching here, the send too large or the batch full).
  char* send_later(int fd, std::size_t bytes, EventSource& source);
  // Whether sends are batched (asked for, and io_uring allowed).
  bool batches_sends() const { return sends_ != nullptr; }
  // Something to poll without waiting (an RDMA completion queue) each time
  // the worker polls: in its spin phase before a start it calls dispatch with
  // a zero timeout, again and again, so completions are taken as they come,
  // with no interrupt or wake-up between them and the start.
  void add_busy_poll(EventSource& source, std::function<void(std::int64_t)> poll) {
    busy_polls_.emplace_back(&source, std::move(poll));
  }
  // Waits up to `timeout` (nullptr: forever) and dispatches each event,
  // calling `before_each()` first: it returns the time to hand the source, or
  // -1 to leave the rest for the next wait (level-triggered: they are
  // reported again). With a zero timeout, the busy polls run after the events
  // (if before_each allows). Returns the number of events the wait reported.
  template <typename BeforeEach>
  int dispatch(const timespec* timeout, BeforeEach before_each);
  int fd() const { return epoll_.get(); }

 private:
  int wait(const timespec* timeout);
  int wait_legacy(const timespec* timeout);
  void flush_sends();
  Fd epoll_;
  std::unique_ptr<SendBatch> sends_;  // null: every send at once
  bool dispatching_ = false;
  // Set once the kernel refuses epoll_pwait2 (before Linux 5.11, or a seccomp
  // profile that predates it): waits go through epoll_wait and its timer, as
  // epoll_wait counts whole milliseconds and a flow's start needs microseconds.
  bool legacy_ = false;
  Fd timer_;
  bool timer_armed_ = false;
  std::vector<epoll_event> events_ = std::vector<epoll_event>(256);
  std::unordered_set<EventSource*> alive_;
  std::vector<std::pair<EventSource*, std::function<void(std::int64_t)>>> busy_polls_;
};

// A listening TCP socket in a worker's Poller (every transport's server has
// one per address: TCP's for its flows, RDMA's for its control connections);
// each wake-up hands its descriptor to `accept_all`.
class Listener final : public EventSource {
 public:
  // Binds now; with `shared_port`, each worker listens on the same port (SO_REUSEPORT).
  Listener(const SocketAddress& address, bool shared_port, Poller& poller, std::function<void(int)> accept_all);
  void on_events(std::uint32_t, std::int64_t) override { accept_all_(fd_.get()); }
  // The address bound (port 0: the kernel's choice).
  const SocketAddress& bound() const { return bound_; }

 private:
  Fd fd_;
  SocketAddress bound_;
  std::function<void(int)> accept_all_;
};

// The sweep of a server transport: closes each channel quiet too long
// (`expired(now)`: header or idle timeout), outside the loop over them.
template <typename Channel, typename Close>
void close_expired(const std::unordered_map<Channel*, std::unique_ptr<Channel>>& channels, std::int64_t now,
                   Close close) {
  std::vector<Channel*> expired;
  for (const auto& [ptr, channel] : channels) {
    if (channel->expired(now)) expired.push_back(ptr);
  }
  for (Channel* channel : expired) close(*channel);
}

// ---- client side ----

struct FlowStart {
  std::uint64_t id = 0;
  Direction direction = Direction::push;
  bool stream = false;  // push until stop_abs_ns; size_bytes is ignored
  // The connection closes after this flow (per-flow policy). TCP: the server
  // closes first and the channel waits for that before closing its socket.
  bool last = false;
  std::uint64_t size_bytes = 0;
  std::int64_t stop_abs_ns = 0;  // a stream's end, CLOCK_MONOTONIC
  std::uint64_t token = 0;
  int dscp = 0;                         // traffic class, 0-63, on both ends' packets
  std::uint64_t rate_bps = 0;           // pacing cap of the sender (the server for a pull), 0 = none
  std::string_view congestion_control;  // TCP: this flow's algorithm; empty: the connection's as it is
};

struct FlowEnd {
  bool ok = false;
  std::string error;        // why it failed
  std::uint64_t bytes = 0;  // a stream: the bytes it sent
};

// How a channel reports to the worker, one owner per channel. A channel does
// nothing after a call to its owner: the owner may destroy it, or start its
// next flow on it, from inside the call.
class ChannelOwner {
 public:
  virtual void connected(std::int64_t now) = 0;
  virtual void connect_failed(std::string reason, std::int64_t now) = 0;  // "Connection refused", ...
  virtual void flow_ended(FlowEnd end, std::int64_t now) = 0;
  virtual void closed(std::int64_t now) = 0;  // the server closed an idle channel
  // A flow's socket option (DSCP, pacing, congestion control) could not be
  // set: the flow goes on without it. The only call after which the channel
  // goes on: the owner just takes note.
  virtual void option_failed(std::string_view option, int error) = 0;
  // When the worker's next flow start is due (CLOCK_MONOTONIC): a channel
  // moving bytes yields before it, so starts keep their precision.
  virtual std::int64_t next_due() const = 0;

 protected:
  ~ChannelOwner() = default;
};

// One connection to a server, carrying one flow at a time, many in turn.
class Channel {
 public:
  virtual ~Channel() = default;
  virtual void start(const FlowStart& flow, std::int64_t now) = 0;
  // A stream whose stop time has come: end it (flow_ended follows).
  virtual void stop_stream(std::int64_t now) = 0;
};

// For transports with a device (RDMA): which device and port, and how a
// flow's bytes are cut into messages. Flags take perftest's names.
struct DeviceSettings {
  std::string device;                     // empty: the first device found (-d)
  int port = 1;                           // the device's port (--ib-port)
  int gid_index = -1;                     // -1: address by LID (InfiniBand); RoCE needs a GID index (-x)
  int traffic_class = 0;                  // the GRH's traffic class (--tclass)
  int service_level = 0;                  // (--sl)
  std::uint32_t message_bytes = 1 << 16;  // a flow goes as messages of this size (--msg-size)
  std::uint32_t outstanding = 16;         // messages in flight per flow (--outstanding)
  std::string verb = "write";             // "write" (RDMA WRITE with immediate) or "send"

  bool operator==(const DeviceSettings&) const = default;
};
nlohmann::json to_json(const DeviceSettings& settings);

struct ChannelOptions {
  DeviceSettings device;
  bool nodelay = true;
  int send_buffer = 0, receive_buffer = 0;  // 0: the kernel's autotuning
  std::string congestion_control;           // empty: the default
};

class ClientTransport {
 public:
  virtual ~ClientTransport() = default;
  // Starts connecting; the outcome comes through `owner`. A failure known at
  // once returns nullptr with the reason in *error.
  virtual std::unique_ptr<Channel> connect(const SocketAddress& server, ChannelOwner& owner, std::string* error) = 0;
};

// ---- server side ----

struct ServerSettings {
  DeviceSettings device;
  std::size_t max_connections = 10000;
  std::int64_t header_timeout_ns = 5'000'000'000;
  std::int64_t idle_timeout_ns = 300'000'000'000;
  std::uint64_t max_flow_bytes = 1ULL << 40;
  std::uint64_t token = 0;  // 0: none required
  int send_buffer = 0, receive_buffer = 0;
};

// Relaxed counters: each server worker writes its own; snapshots add them up.
struct ServerStats {
  std::atomic<std::uint64_t> bytes_received{0}, bytes_sent{0}, push_flows{0}, pull_flows{0}, streams{0};
  std::atomic<std::uint64_t> accepted{0}, rejected_full{0}, rejected_fd_limit{0};
  std::atomic<std::uint64_t> bad_headers{0}, unauthenticated{0}, too_large{0};
  std::atomic<std::uint64_t> header_timeouts{0}, idle_timeouts{0}, aborted_flows{0};
  std::atomic<std::uint64_t> option_failures{0};  // a flow's DSCP or pacing could not be set
};

inline void bump(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
  counter.fetch_add(n, std::memory_order_relaxed);
}

// What every server transport shares: the settings, its worker's counters,
// and the count of open channels across the workers (--max-connections).
struct ServerContext {
  const ServerSettings& settings;
  ServerStats& stats;
  std::atomic<std::size_t>& open;
};

// A flow header checked against the settings (magic, version, token, size;
// streams are push only), counted as bad, unauthenticated or too large when
// refused (then nullopt: the channel is closed).
std::optional<FlowHeader> admit_flow(const HeaderBytes& bytes, const ServerContext& context);

class ServerTransport {
 public:
  virtual ~ServerTransport() = default;
  // Accepts channels on `address`; returns the address bound (port 0: the
  // kernel's choice). With `shared_port`, each worker listens on the same port.
  virtual SocketAddress listen(const SocketAddress& address, bool shared_port) = 0;
  // Closes channels quiet too long (header and idle timeouts).
  virtual void sweep(std::int64_t now) = 0;
};

// ---- the registry (registry.cpp) ----

// The transports built in, in the order --help lists them.
std::vector<std::string> transport_names();
// Throw UsageError for an unknown name, Error when the transport cannot run here.
std::unique_ptr<ClientTransport> make_client_transport(const std::string& name, const ChannelOptions& options,
                                                       Poller& poller);
std::unique_ptr<ServerTransport> make_server_transport(const std::string& name, const ServerContext& context,
                                                       Poller& poller);

template <typename BeforeEach>
int Poller::dispatch(const timespec* timeout, BeforeEach before_each) {
  const int n = wait(timeout);
  dispatching_ = sends_ != nullptr;
  for (int i = 0; i < n; ++i) {
    auto* source = static_cast<EventSource*>(events_[i].data.ptr);
    if (alive_.count(source) == 0) continue;  // closed by an earlier event of this batch
    const std::int64_t now = before_each();
    if (now < 0) {
      flush_sends();
      return n;
    }
    source->on_events(events_[i].events, now);
  }
  flush_sends();
  if (!busy_polls_.empty() && timeout != nullptr && timeout->tv_sec == 0 && timeout->tv_nsec == 0) {
    for (auto& [source, poll] : busy_polls_) {
      const std::int64_t now = before_each();
      if (now < 0) break;
      poll(now);
    }
  }
  return n;
}

}  // namespace xtk
