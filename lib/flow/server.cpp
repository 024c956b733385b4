#include "flow/server.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "transport/wire.hpp"

namespace xtk {

nlohmann::json ServerCounters::to_json() const {
  return {{"bytes_received", bytes_received},
          {"bytes_sent", bytes_sent},
          {"push_flows", push_flows},
          {"pull_flows", pull_flows},
          {"streams", streams},
          {"connections_accepted", accepted},
          {"connections_rejected_full", rejected_full},
          {"connections_rejected_fd_limit", rejected_fd_limit},
          {"connections_open", open},
          {"bad_headers", bad_headers},
          {"unauthenticated", unauthenticated},
          {"too_large", too_large},
          {"header_timeouts", header_timeouts},
          {"idle_timeouts", idle_timeouts},
          {"aborted_flows", aborted_flows}};
}

namespace {

constexpr std::size_t kChunk = 1 << 18;
// A header read also takes the payload of small flows with it.
constexpr std::size_t kHeaderRead = 1 << 16;
constexpr std::int64_t kSweepNs = 100'000'000;

enum class State { header, push_body, push_stream, ack, pull_body };

struct Connection {
  Fd fd;
  State state = State::header;
  HeaderBytes header{};
  std::size_t header_got = 0;
  std::uint64_t left = 0;
  AckBytes ack{};
  std::size_t ack_sent = 0;
  std::int64_t last_activity_ns = 0;
  bool writing = false;  // EPOLLOUT registered
};

// Relaxed counters: each worker writes its own; snapshots add them up.
struct Counters {
  std::atomic<std::uint64_t> bytes_received{0}, bytes_sent{0}, push_flows{0}, pull_flows{0}, streams{0};
  std::atomic<std::uint64_t> accepted{0}, rejected_full{0}, rejected_fd_limit{0};
  std::atomic<std::uint64_t> bad_headers{0}, unauthenticated{0}, too_large{0};
  std::atomic<std::uint64_t> header_timeouts{0}, idle_timeouts{0}, aborted_flows{0};
};

void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

}  // namespace

struct Server::Worker {
  Server& server;
  Fd epoll;
  std::vector<Fd> listeners;
  // Held in reserve: at the open-file limit it is given up for a moment to
  // accept and close a waiting connection. Left in the queue, that connection
  // would wake the worker again at once, and it would spin until a descriptor
  // came free.
  Fd spare;
  std::unordered_map<int, std::unique_ptr<Connection>> connections;
  Counters counters;
  std::vector<char> buffer = std::vector<char>(kChunk);
  std::thread thread;

  explicit Worker(Server& s)
      : server(s), epoll(epoll_create1(EPOLL_CLOEXEC)), spare(open("/dev/null", O_RDONLY | O_CLOEXEC)) {
    if (!epoll) throw Error(fmt::format("epoll_create1: {}", std::strerror(errno)));
    if (!spare) throw Error(fmt::format("open /dev/null: {}", std::strerror(errno)));
  }

  void watch(int fd, std::uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(epoll.get(), op, fd, &ev);
  }

  void close_connection(int fd) {
    epoll_ctl(epoll.get(), EPOLL_CTL_DEL, fd, nullptr);
    if (connections.erase(fd) > 0) server.open_.fetch_sub(1, std::memory_order_relaxed);
  }

  void accept_all(int listener) {
    while (true) {
      const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if ((errno == EMFILE || errno == ENFILE) && refuse_one(listener)) continue;
        return;  // EAGAIN, or a transient error: the next wake-up retries
      }
      if (server.open_.load(std::memory_order_relaxed) >= server.options_.max_connections) {
        ::close(fd);
        bump(counters.rejected_full);
        continue;
      }
      server.open_.fetch_add(1, std::memory_order_relaxed);
      bump(counters.accepted);
      set_nodelay(fd, true);
      set_buffers(fd, server.options_.send_buffer, server.options_.receive_buffer);
      auto c = std::make_unique<Connection>();
      c->fd = Fd(fd);
      c->last_activity_ns = monotonic_ns();
      connections.emplace(fd, std::move(c));
      watch(fd, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
    }
  }

  // At the open-file limit: closes the connection waiting first, through the spare descriptor.
  bool refuse_one(int listener) {
    if (!spare) return false;
    spare.reset();
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      bump(counters.rejected_fd_limit);
    }
    spare = Fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
    return fd >= 0;
  }

  void set_writing(Connection& c, bool on) {
    if (c.writing == on) return;
    c.writing = on;
    watch(c.fd.get(), EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0U), EPOLL_CTL_MOD);
  }

  // Validates a complete header and moves to the flow's state; false closes.
  bool begin_flow(Connection& c) {
    std::string reason;
    auto header = decode(c.header, &reason);
    if (!header) {
      bump(counters.bad_headers);
      return false;
    }
    if (server.options_.token != 0 && header->token != server.options_.token) {
      bump(counters.unauthenticated);
      return false;
    }
    c.header_got = 0;
    if (header->stream) {
      if (header->direction != Direction::push) {
        bump(counters.bad_headers);  // streams are push-only
        return false;
      }
      c.state = State::push_stream;
      return true;
    }
    if (header->size_bytes > server.options_.max_flow_bytes) {
      bump(counters.too_large);
      return false;
    }
    c.left = header->size_bytes;
    if (header->direction == Direction::push) {
      c.ack = encode_ack(header->flow_id);
      c.ack_sent = 0;
      c.state = c.left == 0 ? State::ack : State::push_body;
    } else {
      c.state = State::pull_body;
      set_writing(c, true);
    }
    return true;
  }

  // Takes flow bytes from `data` (header bytes, payload) in the connection's
  // state; false when the connection is to be closed. Small flows thus cost one
  // recv: header and payload arrive together.
  bool consume(Connection& c, const char* data, std::size_t length) {
    while (length > 0) {
      if (c.state == State::header) {
        const std::size_t take = std::min(length, kFlowHeaderBytes - c.header_got);
        std::memcpy(c.header.data() + c.header_got, data, take);
        c.header_got += take;
        data += take;
        length -= take;
        if (c.header_got < kFlowHeaderBytes) return true;
        if (!begin_flow(c)) return false;
        if (c.state == State::ack && !on_writable(c)) return false;
      } else if (c.state == State::push_stream) {
        return true;
      } else if (c.state == State::push_body) {
        const std::uint64_t take = std::min<std::uint64_t>(length, c.left);
        c.left -= take;
        data += take;
        length -= static_cast<std::size_t>(take);
        if (c.left == 0) {
          c.state = State::ack;
          if (!on_writable(c)) return false;
        }
      } else {
        // A peer that sends during its ack or pull: a protocol error.
        bump(counters.bad_headers);
        return false;
      }
    }
    return true;
  }

  // Reads what is there; false when the connection is to be closed.
  bool on_readable(Connection& c) {
    while (true) {
      if (c.state == State::push_body || c.state == State::push_stream) {
        const std::size_t want = c.state == State::push_stream ? kChunk : std::min<std::uint64_t>(c.left, kChunk);
        // MSG_TRUNC: TCP discards the bytes without copying them out.
        const ssize_t n = recv(c.fd.get(), buffer.data(), want, MSG_TRUNC);
        if (n == 0) {
          bump(c.state == State::push_stream ? counters.streams : counters.aborted_flows);
          return false;
        }
        if (n < 0) {
          if (errno == EAGAIN || errno == EINTR) return true;
          bump(counters.aborted_flows);  // a reset mid-flow
          return false;
        }
        bump(counters.bytes_received, static_cast<std::uint64_t>(n));
        if (c.state == State::push_stream) continue;
        c.left -= static_cast<std::uint64_t>(n);
        if (c.left == 0) {
          c.state = State::ack;
          return on_writable(c);
        }
        continue;
      }
      if (c.state == State::header) {
        const ssize_t n = recv(c.fd.get(), buffer.data(), kHeaderRead, 0);
        if (n == 0) {
          if (c.header_got > 0) bump(counters.aborted_flows);
          return false;
        }
        if (n < 0) return errno == EAGAIN || errno == EINTR;
        bump(counters.bytes_received, static_cast<std::uint64_t>(n));
        if (!consume(c, buffer.data(), static_cast<std::size_t>(n))) return false;
        if (c.state == State::header && static_cast<std::size_t>(n) < kHeaderRead) return true;  // drained
        continue;
      }
      // ack or pull_body: nothing may arrive now. Data is a protocol error
      // (level-triggered epoll would otherwise report it again and again).
      char probe = 0;
      const ssize_t n = recv(c.fd.get(), &probe, 1, MSG_PEEK);
      if (n > 0) bump(counters.bad_headers);
      if (n >= 0 || (errno != EAGAIN && errno != EINTR)) {
        if (n <= 0) bump(counters.aborted_flows);
        return false;
      }
      return true;
    }
  }

  bool on_writable(Connection& c) {
    if (c.state == State::ack) {
      const ssize_t n = send(c.fd.get(), c.ack.data() + c.ack_sent, kAckBytes - c.ack_sent, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno != EAGAIN && errno != EINTR) return false;
        set_writing(c, true);
        return true;
      }
      c.ack_sent += static_cast<std::size_t>(n);
      if (c.ack_sent < kAckBytes) {
        set_writing(c, true);
        return true;
      }
      bump(counters.push_flows);
      c.state = State::header;
      set_writing(c, false);
      return true;
    }
    if (c.state == State::pull_body) {
      while (c.left > 0) {
        const ssize_t n = send(c.fd.get(), buffer.data(), std::min<std::uint64_t>(c.left, kChunk), MSG_NOSIGNAL);
        if (n < 0) {
          if (errno == EAGAIN || errno == EINTR) return true;
          bump(counters.aborted_flows);
          return false;
        }
        bump(counters.bytes_sent, static_cast<std::uint64_t>(n));
        c.left -= static_cast<std::uint64_t>(n);
      }
      bump(counters.pull_flows);
      c.state = State::header;
      set_writing(c, false);
      return true;
    }
    set_writing(c, false);
    return true;
  }

  void sweep(std::int64_t now) {
    std::vector<int> expired;
    for (auto& [fd, c] : connections) {
      const std::int64_t quiet = now - c->last_activity_ns;
      if (c->state == State::header && c->header_got > 0 && quiet > server.options_.header_timeout_ns) {
        bump(counters.header_timeouts);
        expired.push_back(fd);
      } else if (quiet > server.options_.idle_timeout_ns) {
        bump(counters.idle_timeouts);
        expired.push_back(fd);
      }
    }
    for (int fd : expired) close_connection(fd);
  }

  void run() {
    std::vector<epoll_event> events(256);
    std::int64_t next_sweep = monotonic_ns() + kSweepNs;
    while (!server.stopping_.load(std::memory_order_relaxed)) {
      const int n = epoll_wait(epoll.get(), events.data(), static_cast<int>(events.size()), 50);
      const std::int64_t now = monotonic_ns();
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        bool is_listener = false;
        for (const auto& l : listeners) is_listener = is_listener || l.get() == fd;
        if (is_listener) {
          accept_all(fd);
          continue;
        }
        auto it = connections.find(fd);
        if (it == connections.end()) continue;
        Connection& c = *it->second;
        c.last_activity_ns = now;
        bool keep = true;
        if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) keep = on_readable(c);
        if (keep && (events[i].events & EPOLLOUT)) keep = on_writable(c);
        if (keep && (events[i].events & EPOLLERR)) keep = false;
        if (!keep) close_connection(fd);
      }
      if (now >= next_sweep) {
        sweep(now);
        next_sweep = now + kSweepNs;
      }
    }
  }
};

std::uint64_t descriptors_needed(const ServerOptions& o) {
  constexpr std::uint64_t kProcess = 16;  // standard streams, the output file, libraries' own
  return o.max_connections + std::uint64_t{o.threads} * (o.listen.size() + 2) + kProcess;
}

Server::Server(ServerOptions options) : options_(std::move(options)) {
  if (options_.threads == 0) throw UsageError("--threads must be at least 1");
  if (options_.listen.empty()) throw UsageError("--listen: at least one address");
  for (unsigned t = 0; t < options_.threads; ++t) workers_.push_back(std::make_unique<Worker>(*this));
  for (const auto& text : options_.listen) {
    SocketAddress address = resolve_address(text, 7000, "--listen");
    for (auto& worker : workers_) {
      Fd listener = listen_tcp(address, options_.threads > 1);
      if (&worker == &workers_.front()) {
        // Port 0: every worker's listener shares the port the kernel chose.
        getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address.storage), &address.length);
        addresses_.push_back(address);
      }
      worker->watch(listener.get(), EPOLLIN, EPOLL_CTL_ADD);
      worker->listeners.push_back(std::move(listener));
    }
  }
}

Server::~Server() { stop(); }

void Server::start() {
  for (auto& worker : workers_) {
    Worker* w = worker.get();
    w->thread = std::thread([w] { w->run(); });
  }
}

void Server::stop() {
  stopping_.store(true);
  for (auto& worker : workers_) {
    if (worker->thread.joinable()) worker->thread.join();
  }
}

ServerCounters Server::counters() const {
  ServerCounters total;
  for (const auto& w : workers_) {
    const auto& c = w->counters;
    const auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    total.bytes_received += get(c.bytes_received);
    total.bytes_sent += get(c.bytes_sent);
    total.push_flows += get(c.push_flows);
    total.pull_flows += get(c.pull_flows);
    total.streams += get(c.streams);
    total.accepted += get(c.accepted);
    total.rejected_full += get(c.rejected_full);
    total.rejected_fd_limit += get(c.rejected_fd_limit);
    total.bad_headers += get(c.bad_headers);
    total.unauthenticated += get(c.unauthenticated);
    total.too_large += get(c.too_large);
    total.header_timeouts += get(c.header_timeouts);
    total.idle_timeouts += get(c.idle_timeouts);
    total.aborted_flows += get(c.aborted_flows);
  }
  total.open = open_.load(std::memory_order_relaxed);
  return total;
}

}  // namespace xtk
