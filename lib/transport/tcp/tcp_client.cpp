// A flow on a TCP connection, client side: the header and the payload out
// (push) or the payload in (pull), the acknowledgement of a push, the
// connection's end. Writes shrink and yield as the owner's next start nears.
#include <poll.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <vector>

#include "core/clock.hpp"
#include "transport/tcp/tcp.hpp"

namespace xtk::tcp {
namespace {

// Transfer yields to the scheduler this long before the next flow's start:
// about what one more chunk of copying takes.
constexpr std::int64_t kYieldNs = 30'000;

// What a worker's channels send from: a header's room, then kChunk zeros.
// A flow's header is copied in front of the zeros just before its write, so
// header and payload leave in one send() from one buffer: sendmsg with two
// pieces took 1 KB flows flat out about 0.15 us more CPU each. One per worker
// (its channels write one at a time), never shared between threads.
class SendBuffer {
 public:
  // The unsent rest of `header` (from `header_sent`) then `payload` zeros, contiguous.
  const char* place(const HeaderBytes& header, std::size_t header_sent) {
    std::memcpy(bytes_.data() + header_sent, header.data() + header_sent, kFlowHeaderBytes - header_sent);
    return bytes_.data() + header_sent;
  }
  const char* zeros() const { return bytes_.data() + kFlowHeaderBytes; }
  // Where receives that only count bytes (MSG_TRUNC) point: nothing lands there.
  char* sink() { return bytes_.data() + kFlowHeaderBytes; }

 private:
  std::vector<char> bytes_ = std::vector<char>(kFlowHeaderBytes + kChunk, 0);
};

std::string errno_text(int error) { return std::strerror(error); }

// Sockets whose last flow ended, each kept until the server's close arrives:
// the side that closes first holds the connection in TIME_WAIT for a minute,
// and on the client that is its local port. A connection per flow would run
// out of ports at a few hundred flows per second to one server (tens of
// thousands per second on loopback, where the kernel reuses them after 1 s).
class Closings {
 public:
  explicit Closings(Poller& poller) : poller_(poller) {}
  // What is left gets up to kDrainNs in all for the servers' closes.
  ~Closings() {
    std::vector<pollfd> fds;
    for (const auto& closing : open_) {
      poller_.forget(*closing);
      fds.push_back({closing->fd.get(), POLLIN | POLLRDHUP, 0});
    }
    const std::int64_t deadline = monotonic_ns() + kDrainNs;
    std::size_t done = 0;
    while (done < fds.size()) {
      const std::int64_t left_ms = (deadline - monotonic_ns()) / 1'000'000;
      if (left_ms <= 0 || poll(fds.data(), fds.size(), static_cast<int>(left_ms)) <= 0) break;
      for (auto& p : fds) {
        if (p.revents != 0) {
          p.fd = -1;  // poll skips it from now on
          ++done;
        }
      }
    }
  }
  Closings(const Closings&) = delete;
  Closings& operator=(const Closings&) = delete;

  // Takes `fd` over from `channel`, which is going away. At the cap the
  // oldest is closed first: a server that has not closed it by now may never.
  void add(Fd fd, EventSource& channel) {
    if (open_.size() >= kMaxAwaitingClose) done(*open_.front());
    open_.push_back(std::make_unique<Closing>(*this, std::move(fd)));
    Closing& closing = *open_.back();
    closing.self = std::prev(open_.end());
    poller_.hand_over(closing.fd.get(), channel, closing, EPOLLIN | EPOLLRDHUP);
  }

 private:
  static constexpr std::int64_t kDrainNs = 200'000'000;

  struct Closing;
  using List = std::list<std::unique_ptr<Closing>>;  // oldest first
  struct Closing final : EventSource {
    Closing(Closings& closings, Fd socket) : owner(closings), fd(std::move(socket)) {}
    // The server's close (or anything else: nothing more is due) ends it.
    void on_events(std::uint32_t /*events*/, std::int64_t /*now*/) override { owner.done(*this); }
    Closings& owner;
    Fd fd;
    List::iterator self;  // its place in open_
  };

  void done(Closing& closing) {
    poller_.forget(closing);
    open_.erase(closing.self);
  }

  Poller& poller_;
  List open_;
};

class TcpChannel final : public Channel, public EventSource {
 public:
  TcpChannel(Fd fd, int family, ChannelOwner& owner, Poller& poller, SendBuffer& buffer, Closings& closings)
      : fd_(std::move(fd)), family_(family), owner_(owner), poller_(poller), buffer_(buffer), closings_(closings) {
    set_events(EPOLLOUT);  // writable: the handshake completed (or failed)
  }
  ~TcpChannel() override {
    if (await_close_) {
      closings_.add(std::move(fd_), *this);
    } else {
      poller_.forget(*this);
    }
  }
  TcpChannel(const TcpChannel&) = delete;
  TcpChannel& operator=(const TcpChannel&) = delete;

  void start(const FlowStart& flow, std::int64_t now) override {
    set_options(flow);
    FlowHeader h;
    h.direction = flow.direction;
    h.stream = flow.stream;
    h.last = flow.last;
    h.flow_id = flow.id;
    h.size_bytes = flow.size_bytes;
    h.token = flow.token;
    h.dscp = flow.dscp;
    if (flow.direction == Direction::pull) {
      h.rate_bps = flow.rate_bps;
      h.congestion_control = flow.congestion_control;
    }
    flow_ = flow;
    header_ = encode(h);
    header_sent_ = 0;
    payload_left_ = flow.direction == Direction::push && !flow.stream ? flow.size_bytes : 0;
    receive_left_ = flow.direction == Direction::pull ? flow.size_bytes : 0;
    stream_bytes_ = 0;
    ack_got_ = 0;
    state_ = State::busy;
    write(now);
  }

  void stop_stream(std::int64_t now) override {
    if (state_ == State::busy && flow_.stream) write(now);
  }

  void on_events(std::uint32_t events, std::int64_t now) override {
    if (state_ == State::connecting) {
      // The pending error is read only when epoll reports one: a syscall saved per connection.
      const bool failed = (events & (EPOLLERR | EPOLLHUP)) != 0;
      const int error = failed ? socket_error(fd_.get()) : 0;
      if (failed) {
        owner_.connect_failed(errno_text(error != 0 ? error : ECONNREFUSED), now);
        return;
      }
      state_ = State::idle;
      set_events(EPOLLIN | EPOLLRDHUP);
      owner_.connected(now);
      return;
    }
    if (state_ == State::idle) {
      owner_.closed(now);  // an idle connection only wakes when the server closes it
      return;
    }
    if (events & EPOLLOUT) {
      if (!write(now)) return;
    }
    // The server's close often comes with a last flow's ack: then nothing is left to wait for.
    peer_closed_ = (events & (EPOLLRDHUP | EPOLLHUP)) != 0;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) read(now);
  }

 private:
  enum class State { connecting, idle, busy };

  // The flow's class on this end; its pacing cap and algorithm when this end
  // sends the data (the server takes a pull's from the header). Set only on
  // change: pooled connections carry many flows.
  void set_options(const FlowStart& flow) {
    if (dscp_ != flow.dscp) {
      const int error = set_dscp(fd_.get(), family_, flow.dscp);
      if (error == 0) {
        dscp_ = flow.dscp;
      } else {
        owner_.option_failed(family_ == AF_INET6 ? "IPV6_TCLASS" : "IP_TOS", error);
      }
    }
    const std::uint64_t pacing = flow.direction == Direction::push ? flow.rate_bps : 0;
    if (pacing_bps_ != pacing) {
      const int error = set_pacing_bps(fd_.get(), pacing);
      if (error == 0) {
        pacing_bps_ = pacing;
      } else {
        owner_.option_failed("SO_MAX_PACING_RATE", error);
      }
    }
    if (flow.direction == Direction::push && !flow.congestion_control.empty() &&
        congestion_control_ != flow.congestion_control) {
      const int error = set_congestion_control(fd_.get(), std::string(flow.congestion_control));
      if (error == 0) {
        congestion_control_ = flow.congestion_control;
      } else {
        owner_.option_failed(fmt::format("TCP_CONGESTION {}", flow.congestion_control), error);
      }
    }
  }

  void set_events(std::uint32_t events) {
    if (events_ == events) return;
    if (events_ == 0) {
      poller_.add(fd_.get(), *this, events);
    } else {
      poller_.modify(fd_.get(), *this, events);
    }
    events_ = events;
  }

  // Ends the flow: the owner may start the next one on this channel or close it.
  void end(bool ok, std::string error, std::int64_t now) {
    state_ = State::idle;
    await_close_ = ok && flow_.last && !peer_closed_;  // the server closes first
    if (ok) set_events(EPOLLIN | EPOLLRDHUP);
    owner_.flow_ended({ok, std::move(error), stream_bytes_}, now);
  }

  void on_sent(std::int64_t result, std::int64_t now) override {
    if (result < 0 && result != -EAGAIN && result != -EINTR) {
      end(false, fmt::format("send: {}", errno_text(static_cast<int>(-result))), now);
      return;
    }
    if (result > 0) sent(static_cast<std::size_t>(result));
    if (header_sent_ < kFlowHeaderBytes || payload_left_ > 0) write(now);  // the rest at once, or at EPOLLOUT
  }

  // A flow's first write, when the whole flow fits: handed to the poller, to
  // leave with the other sends of this wait's events (transport.hpp).
  bool hand_to_batch() {
    if (flow_.stream || header_sent_ > 0) return false;
    char* room = poller_.send_later(fd_.get(), kFlowHeaderBytes + payload_left_, *this);  // null when too large
    if (room == nullptr) return false;
    std::memcpy(room, header_.data(), kFlowHeaderBytes);
    std::memset(room + kFlowHeaderBytes, 0, payload_left_);
    set_events(EPOLLIN | EPOLLRDHUP);  // the ack (push) or the data (pull), once on_sent has counted it
    return true;
  }

  // Counts `n` bytes sent: the header's first, then the payload's (or the stream's).
  void sent(std::size_t n) {
    const std::size_t header_part = std::min(n, kFlowHeaderBytes - header_sent_);
    header_sent_ += header_part;
    n -= header_part;
    if (flow_.stream) {
      stream_bytes_ += n;
    } else {
      payload_left_ -= n;
    }
  }

  // Sends what it can; false when the flow ended (the channel may be gone).
  bool write(std::int64_t now) {
    const bool stream = flow_.stream;
    if (hand_to_batch()) return true;
    std::size_t turn = 0;
    while (header_sent_ < kFlowHeaderBytes || payload_left_ > 0 || stream) {
      if (stream && now >= flow_.stop_abs_ns) {
        shutdown(fd_.get(), SHUT_WR);
        end(true, "", now);
        return false;
      }
      // Small writes near the next start, so one copy cannot make it late
      // (the first write of a flow whose successor is due right after it too).
      const std::int64_t until_next = owner_.next_due() - now;
      const std::size_t chunk = until_next < kYieldNs ? kChunk / 64 : until_next < 20 * kYieldNs ? kChunk / 8 : kChunk;
      const std::size_t payload = stream ? chunk : std::min<std::uint64_t>(payload_left_, chunk);
      const std::size_t header_left = kFlowHeaderBytes - header_sent_;
      const char* from = header_left > 0 ? buffer_.place(header_, header_sent_) : buffer_.zeros();
      const ssize_t n = send_now(fd_.get(), from, header_left + payload, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) {
          set_events(EPOLLOUT | EPOLLIN | EPOLLRDHUP);
          return true;
        }
        end(false, fmt::format("send: {}", errno_text(errno)), now);
        return false;
      }
      sent(static_cast<std::size_t>(n));
      if (header_sent_ == kFlowHeaderBytes && payload_left_ == 0 && !stream) break;  // all sent: no clock read
      now = monotonic_ns();
      turn += static_cast<std::size_t>(n);
      if (turn >= kTurnBytes || now + kYieldNs >= owner_.next_due()) {
        set_events(EPOLLOUT | EPOLLIN | EPOLLRDHUP);  // level-triggered: resumes next turn, or after the start
        return true;
      }
    }
    set_events(EPOLLIN | EPOLLRDHUP);  // the ack (push) or the data (pull)
    return true;
  }

  void read(std::int64_t now) {
    std::size_t turn = 0;
    while (true) {
      ssize_t n = 0;
      if (receive_left_ > 0) {
        n = recv_now(fd_.get(), buffer_.sink(), std::min<std::uint64_t>(receive_left_, kChunk), MSG_TRUNC);
      } else if (!flow_.stream && flow_.direction == Direction::push && header_sent_ == kFlowHeaderBytes &&
                 payload_left_ == 0) {
        n = recv_now(fd_.get(), ack_.data() + ack_got_, kAckBytes - ack_got_, 0);
      } else {
        char probe = 0;  // nothing is due now: only a close or an error can arrive
        n = recv_now(fd_.get(), &probe, 1, MSG_PEEK);
        if (n > 0) return;
      }
      if (n == 0) {
        end(false, "the server closed the connection mid-flow", now);
        return;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        end(false, fmt::format("recv: {}", errno_text(errno)), now);
        return;
      }
      if (receive_left_ > 0) {
        receive_left_ -= static_cast<std::uint64_t>(n);
        if (receive_left_ == 0) {
          end(true, "", monotonic_ns());
          return;
        }
        turn += static_cast<std::size_t>(n);
        // Level-triggered: resumes next turn, or after the start.
        if (turn >= kTurnBytes || monotonic_ns() + kYieldNs >= owner_.next_due()) return;
        continue;
      }
      ack_got_ += static_cast<std::size_t>(n);
      if (ack_got_ == kAckBytes) {
        if (decode_ack(ack_) != flow_.id) {
          end(false, "acknowledgement for another flow", now);
        } else {
          end(true, "", now);
        }
        return;
      }
    }
  }

  Fd fd_;
  int family_;
  ChannelOwner& owner_;
  Poller& poller_;
  SendBuffer& buffer_;
  Closings& closings_;
  bool await_close_ = false;
  bool peer_closed_ = false;  // the server's FIN is in (EPOLLRDHUP): closing now leaves no TIME_WAIT here
  State state_ = State::connecting;
  std::uint32_t events_ = 0;
  int dscp_ = 0;
  std::uint64_t pacing_bps_ = 0;
  std::string congestion_control_;  // set by a flow; empty: the one the connection opened with
  FlowStart flow_;
  HeaderBytes header_{};
  std::size_t header_sent_ = 0;
  std::uint64_t payload_left_ = 0, receive_left_ = 0, stream_bytes_ = 0;
  AckBytes ack_{};
  std::size_t ack_got_ = 0;
};

class TcpClient final : public ClientTransport {
 public:
  TcpClient(const ChannelOptions& options, Poller& poller) : options_(options), poller_(poller), closings_(poller) {}

  std::unique_ptr<Channel> connect(const SocketAddress& server, ChannelOwner& owner, std::string* error) override {
    Fd fd = connect_tcp_nonblocking(server, error);
    if (!fd) return nullptr;
    set_nodelay(fd.get(), options_.nodelay);
    set_buffers(fd.get(), options_.send_buffer, options_.receive_buffer);
    if (!options_.congestion_control.empty()) set_congestion_control(fd.get(), options_.congestion_control);
    return std::make_unique<TcpChannel>(std::move(fd), server.family(), owner, poller_, buffer_, closings_);
  }

 private:
  ChannelOptions options_;
  Poller& poller_;
  SendBuffer buffer_;
  Closings closings_;  // the channels (gone before the transport) hand their last sockets here
};

}  // namespace

std::unique_ptr<ClientTransport> make_client(const ChannelOptions& options, Poller& poller) {
  return std::make_unique<TcpClient>(options, poller);
}

}  // namespace xtk::tcp
