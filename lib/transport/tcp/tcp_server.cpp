// Flows on TCP connections, server side: accept (bounded by --max-connections
// and the open-file limit), read each flow's header, then sink a push (and
// acknowledge it) or source a pull; close what stays quiet too long.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "transport/tcp/tcp.hpp"

namespace xtk::tcp {
namespace {

// A header read also takes the payload of small flows with it.
constexpr std::size_t kHeaderRead = 1 << 16;

class TcpServer;

class Connection final : public EventSource {
 public:
  Connection(TcpServer& server, Fd fd, int family);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  void on_events(std::uint32_t events, std::int64_t now) override;
  void on_sent(std::int64_t result, std::int64_t now) override;  // the ack, sent with the wait's other sends
  // Closed by the sweep: no header within the header timeout, or no traffic within the idle timeout.
  bool expired(std::int64_t now);

 private:
  enum class State { header, push_body, push_stream, ack, pull_body };
  bool begin_flow();
  void mark(const FlowHeader& header);
  bool consume(const char* data, std::size_t length);
  bool on_readable();
  bool on_writable();
  bool acked(std::int64_t result);
  void set_writing(bool on);

  TcpServer& server_;
  Fd fd_;
  int family_;
  int dscp_ = 0;
  std::uint64_t pacing_bps_ = 0;
  std::string congestion_control_;  // set by a pull; empty: the one it was accepted with
  State state_ = State::header;
  HeaderBytes header_{};
  std::size_t header_got_ = 0;
  std::uint64_t left_ = 0;
  AckBytes ack_{};
  std::size_t ack_sent_ = 0;
  std::int64_t last_activity_ns_ = 0;
  bool writing_ = false;     // EPOLLOUT registered
  bool ack_queued_ = false;  // in the poller's batch of sends (send_later)
  bool last_ = false;        // the flow is the connection's last: closed after it (wire.hpp)
};

class TcpServer final : public ServerTransport {
 public:
  TcpServer(const ServerContext& context, Poller& poller)
      : context_(context), poller_(poller), spare_(open("/dev/null", O_RDONLY | O_CLOEXEC)) {
    if (!spare_) throw Error(fmt::format("open /dev/null: {}", std::strerror(errno)));
  }

  SocketAddress listen(const SocketAddress& address, bool shared_port) override {
    listeners_.push_back(std::make_unique<Listener>(address, shared_port, poller_, [this](int fd) { accept_all(fd); }));
    return listeners_.back()->bound();
  }

  void sweep(std::int64_t now) override {
    close_expired(connections_, now, [this](Connection& c) { close(c); });
  }

  void accept_all(int listener) {
    while (true) {
      const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if ((errno == EMFILE || errno == ENFILE) && refuse_one(listener)) continue;
        return;  // EAGAIN, or a transient error: the next wake-up retries
      }
      if (context_.open.load(std::memory_order_relaxed) >= context_.settings.max_connections) {
        ::close(fd);
        bump(context_.stats.rejected_full);
        continue;
      }
      context_.open.fetch_add(1, std::memory_order_relaxed);
      bump(context_.stats.accepted);
      set_nodelay(fd, true);
      set_buffers(fd, context_.settings.send_buffer, context_.settings.receive_buffer);
      sockaddr_storage local{};
      socklen_t length = sizeof local;
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
      auto c = std::make_unique<Connection>(*this, Fd(fd), local.ss_family);
      Connection& ref = *c;
      connections_.emplace(&ref, std::move(c));
      poller_.add(fd, ref, EPOLLIN | EPOLLRDHUP);
    }
  }

  void close(Connection& c) {
    if (connections_.erase(&c) > 0) context_.open.fetch_sub(1, std::memory_order_relaxed);
  }

  const ServerContext& context() const { return context_; }
  Poller& poller() { return poller_; }
  std::vector<char>& buffer() { return buffer_; }

 private:
  // At the open-file limit: closes the connection waiting first, through the
  // spare descriptor. Left in the queue, that connection would wake the worker
  // again at once, and it would spin until a descriptor came free.
  bool refuse_one(int listener) {
    if (!spare_) return false;
    spare_.reset();
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      bump(context_.stats.rejected_fd_limit);
    }
    spare_ = Fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
    return fd >= 0;
  }

  ServerContext context_;
  Poller& poller_;
  Fd spare_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::unordered_map<Connection*, std::unique_ptr<Connection>> connections_;
  std::vector<char> buffer_ = std::vector<char>(kChunk);
};

Connection::Connection(TcpServer& server, Fd fd, int family)
    : server_(server), fd_(std::move(fd)), family_(family), last_activity_ns_(monotonic_ns()) {}

Connection::~Connection() { server_.poller().forget(*this); }

bool Connection::expired(std::int64_t now) {
  const auto& settings = server_.context().settings;
  auto& stats = server_.context().stats;
  const std::int64_t quiet = now - last_activity_ns_;
  if (state_ == State::header && header_got_ > 0 && quiet > settings.header_timeout_ns) {
    bump(stats.header_timeouts);
    return true;
  }
  if (quiet > settings.idle_timeout_ns) {
    // A stream's bytes below its low-water mark wake nothing: read here, they are traffic.
    if (state_ == State::push_stream) {
      const ssize_t n = recv_now(fd_.get(), server_.buffer().data(), kChunk, MSG_TRUNC);
      if (n > 0) {
        bump(stats.bytes_received, static_cast<std::uint64_t>(n));
        last_activity_ns_ = now;
        return false;
      }
    }
    bump(stats.idle_timeouts);
    return true;
  }
  return false;
}

void Connection::on_events(std::uint32_t events, std::int64_t now) {
  last_activity_ns_ = now;
  bool keep = true;
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) keep = on_readable();
  if (keep && (events & EPOLLOUT)) keep = on_writable();
  if (keep && (events & EPOLLERR)) keep = false;
  if (!keep) server_.close(*this);
}

// What a send of the ack did (bytes, or -errno); false when the connection is to be closed.
bool Connection::acked(std::int64_t result) {
  if (result < 0) {
    if (result != -EAGAIN && result != -EINTR) return false;
    set_writing(true);
    return true;
  }
  ack_sent_ += static_cast<std::size_t>(result);
  if (ack_sent_ < kAckBytes) {
    set_writing(true);
    return true;
  }
  bump(server_.context().stats.push_flows);
  if (last_) return false;  // this end closes first: TIME_WAIT stays here, not on the client's port
  state_ = State::header;
  set_writing(false);
  return true;
}

void Connection::on_sent(std::int64_t result, std::int64_t /*now*/) {
  ack_queued_ = false;
  if (!acked(result)) server_.close(*this);
}

void Connection::set_writing(bool on) {
  if (writing_ == on) return;
  writing_ = on;
  server_.poller().modify(fd_.get(), *this, EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0U));
}

// The flow's class on the server's packets too (a pull's data, a push's
// acknowledgements), and a pull's pacing cap and congestion control: the
// client cannot set them for the server's socket.
// A failure is counted; the flow goes on without it.
void Connection::mark(const FlowHeader& header) {
  auto& stats = server_.context().stats;
  if (header.dscp != dscp_) {
    if (set_dscp(fd_.get(), family_, header.dscp) == 0) {
      dscp_ = header.dscp;
    } else {
      bump(stats.option_failures);
    }
  }
  if (header.direction != Direction::pull) return;
  if (header.rate_bps != pacing_bps_) {
    if (set_pacing_bps(fd_.get(), header.rate_bps) == 0) {
      pacing_bps_ = header.rate_bps;
    } else {
      bump(stats.option_failures);
    }
  }
  if (!header.congestion_control.empty() && header.congestion_control != congestion_control_) {
    if (set_congestion_control(fd_.get(), header.congestion_control) == 0) {
      congestion_control_ = header.congestion_control;
    } else {
      bump(stats.option_failures);
    }
  }
}

// Admits a complete header and moves to the flow's state; false closes.
bool Connection::begin_flow() {
  const auto header = admit_flow(header_, server_.context());
  if (!header) return false;
  header_got_ = 0;
  last_ = header->last;
  mark(*header);
  if (header->stream) {
    auto& stats = server_.context().stats;
    state_ = State::push_stream;
    // Woken per turn's worth of bytes, not per packet: a stream ends with the
    // client's FIN, which wakes it whatever is left below the mark.
    if (set_receive_low_water(fd_.get(), kTurnBytes) != 0) bump(stats.option_failures);
    return true;
  }
  left_ = header->size_bytes;
  if (header->direction == Direction::push) {
    ack_ = encode_ack(header->flow_id);
    ack_sent_ = 0;
    state_ = left_ == 0 ? State::ack : State::push_body;
  } else {
    state_ = State::pull_body;
    set_writing(true);
  }
  return true;
}

// Takes flow bytes from `data` (header bytes, payload) in the connection's
// state; false when the connection is to be closed. Small flows thus cost one
// recv: header and payload arrive together.
bool Connection::consume(const char* data, std::size_t length) {
  auto& stats = server_.context().stats;
  while (length > 0) {
    if (state_ == State::header) {
      const std::size_t take = std::min(length, kFlowHeaderBytes - header_got_);
      std::memcpy(header_.data() + header_got_, data, take);
      header_got_ += take;
      data += take;
      length -= take;
      if (header_got_ < kFlowHeaderBytes) return true;
      if (!begin_flow()) return false;
      if (state_ == State::ack && !on_writable()) return false;
    } else if (state_ == State::push_stream) {
      return true;
    } else if (state_ == State::push_body) {
      const std::uint64_t take = std::min<std::uint64_t>(length, left_);
      left_ -= take;
      data += take;
      length -= static_cast<std::size_t>(take);
      if (left_ == 0) {
        state_ = State::ack;
        if (!on_writable()) return false;
      }
    } else {
      // A peer that sends during its ack or pull: a protocol error.
      bump(stats.bad_headers);
      return false;
    }
  }
  return true;
}

// Reads what is there; false when the connection is to be closed.
bool Connection::on_readable() {
  auto& stats = server_.context().stats;
  auto& buffer = server_.buffer();
  std::size_t turn = 0;
  while (true) {
    if (state_ == State::push_body || state_ == State::push_stream) {
      if (turn >= kTurnBytes) return true;  // level-triggered: the rest next turn
      const std::size_t want = state_ == State::push_stream ? kChunk : std::min<std::uint64_t>(left_, kChunk);
      // MSG_TRUNC: TCP discards the bytes without copying them out.
      const ssize_t n = recv_now(fd_.get(), buffer.data(), want, MSG_TRUNC);
      if (n == 0) {
        bump(state_ == State::push_stream ? stats.streams : stats.aborted_flows);
        return false;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return true;
        bump(stats.aborted_flows);  // a reset mid-flow
        return false;
      }
      bump(stats.bytes_received, static_cast<std::uint64_t>(n));
      turn += static_cast<std::size_t>(n);
      if (state_ == State::push_stream) continue;
      left_ -= static_cast<std::uint64_t>(n);
      if (left_ == 0) {
        state_ = State::ack;
        return on_writable();
      }
      continue;
    }
    if (state_ == State::header) {
      const ssize_t n = recv_now(fd_.get(), buffer.data(), kHeaderRead, 0);
      if (n == 0) {
        if (header_got_ > 0) bump(stats.aborted_flows);
        return false;
      }
      if (n < 0) return errno == EAGAIN || errno == EINTR;
      bump(stats.bytes_received, static_cast<std::uint64_t>(n));
      if (!consume(buffer.data(), static_cast<std::size_t>(n))) return false;
      if ((state_ == State::header || ack_queued_) && static_cast<std::size_t>(n) < kHeaderRead)
        return true;  // drained
      continue;
    }
    // ack or pull_body: nothing may arrive now. Data is a protocol error
    // (level-triggered epoll would otherwise report it again and again).
    char probe = 0;
    const ssize_t n = recv_now(fd_.get(), &probe, 1, MSG_PEEK);
    if (n > 0) bump(stats.bad_headers);
    if (n >= 0 || (errno != EAGAIN && errno != EINTR)) {
      if (n <= 0) bump(stats.aborted_flows);
      return false;
    }
    return true;
  }
}

bool Connection::on_writable() {
  auto& stats = server_.context().stats;
  if (state_ == State::ack) {
    if (ack_queued_) return true;
    if (ack_sent_ == 0) {
      if (char* room = server_.poller().send_later(fd_.get(), kAckBytes, *this)) {
        std::memcpy(room, ack_.data(), kAckBytes);
        ack_queued_ = true;
        return true;
      }
    }
    const ssize_t n = send_now(fd_.get(), ack_.data() + ack_sent_, kAckBytes - ack_sent_, MSG_NOSIGNAL);
    return acked(n >= 0 ? n : -errno);
  }
  if (state_ == State::pull_body) {
    auto& buffer = server_.buffer();
    std::size_t turn = 0;
    while (left_ > 0) {
      if (turn >= kTurnBytes) return true;  // still writing: the rest next turn
      const ssize_t n = send_now(fd_.get(), buffer.data(), std::min<std::uint64_t>(left_, kChunk), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return true;
        bump(stats.aborted_flows);
        return false;
      }
      bump(stats.bytes_sent, static_cast<std::uint64_t>(n));
      left_ -= static_cast<std::uint64_t>(n);
      turn += static_cast<std::size_t>(n);
    }
    bump(stats.pull_flows);
    if (last_) return false;
    state_ = State::header;
    set_writing(false);
    return true;
  }
  set_writing(false);
  return true;
}

}  // namespace

std::unique_ptr<ServerTransport> make_server(const ServerContext& context, Poller& poller) {
  return std::make_unique<TcpServer>(context, poller);
}

}  // namespace xtk::tcp
