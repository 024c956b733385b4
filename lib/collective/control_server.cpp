#include "collective/control_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "collective/control_wire.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"

namespace xtk::collective {
namespace {

constexpr int kSendTimeoutMs = 1000;  // a rank that does not read its messages for this long is gone

struct Conn {
  Fd fd;
  MessageDecoder decoder;
  std::string address;  // the peer's IP as rank 0 sees it
  int rank = -1;        // set by hello
  std::string host;
  std::uint64_t pid = 0;
  bool bye = false;
  bool open = true;
};

std::string peer_ip(const sockaddr_storage& s) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (s.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&s)->sin_addr, text, sizeof text);
  } else {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&s);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], text, sizeof text);
    } else {
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    }
  }
  return text;
}

}  // namespace

// Everything the loop knows; touched by the server thread only.
class ControlServer::State {
 public:
  State(std::uint32_t world_size, ServerTimes times)
      : world_size_(world_size),
        times_(times),
        by_rank_(world_size, nullptr),
        join_deadline_(monotonic_ns() + times.join_ns) {}

  std::vector<std::unique_ptr<Conn>> conns;

  void accepted(Fd fd, const std::string& address) {
    auto conn = std::make_unique<Conn>();
    conn->fd = std::move(fd);
    conn->address = address;
    conns.push_back(std::move(conn));
  }

  void received(Conn& c, const Message& m) {
    switch (m.type) {
      case MessageType::hello:
        return hello(c, m);
      case MessageType::set:
        return set(m.key, m.value);
      case MessageType::get:
        return get(c, m);
      case MessageType::barrier:
        return barrier(c, m);
      case MessageType::fail:
        return fail(c, static_cast<FailKind>(m.number), m.value);
      case MessageType::pong:
        return pong(c, m);
      case MessageType::bye:
        c.bye = true;
        return;
      case MessageType::clock:
        return send(c, Message{MessageType::value, m.id, static_cast<std::uint64_t>(realtime_ns()), "", ""});
      default:
        throw Error(fmt::format("unexpected control message type {}", static_cast<int>(m.type)));
    }
  }

  void closed(Conn& c) {
    if (!c.open) return;
    c.open = false;
    c.fd.reset();
    if (c.rank >= 0 && !c.bye) {
      abort(
          fmt::format("{} left the job: its connection to rank 0 closed before it finished (the process ended "
                      "or was killed, or its host went away)",
                      describe(c.rank)));
    }
  }

  // Timers: join deadline, failure diagnosis. Returns the poll timeout in ms.
  int tick() {
    const auto now = monotonic_ns();
    if (!aborted_ && joined_ < world_size_ && now >= join_deadline_) abort(missing_ranks());
    if (diagnosis_ && !aborted_) {
      if (!diagnosis_->pinged && now >= diagnosis_->ping_at) ping();
      if (diagnosis_->pinged && now >= diagnosis_->decide_at) decide();
    }
    std::int64_t next = now + 1'000'000'000;
    if (!aborted_ && joined_ < world_size_) next = std::min(next, join_deadline_);
    if (diagnosis_ && !aborted_)
      next = std::min(next, diagnosis_->pinged ? diagnosis_->decide_at : diagnosis_->ping_at);
    if (aborted_) next = std::min(next, abort_deadline_);
    return static_cast<int>(std::max<std::int64_t>(0, (next - now + 999'999) / 1'000'000));
  }

  bool finished() const {
    std::uint32_t byes = 0;
    bool any_open = false;
    for (const auto& c : conns) {
      if (c->rank >= 0 && c->bye) ++byes;
      if (c->open && c->rank >= 0) any_open = true;
    }
    if (byes == world_size_) return true;
    return aborted_ && (!any_open || monotonic_ns() >= abort_deadline_);
  }

 private:
  std::string describe(int rank) const {
    const Conn* c = by_rank_[static_cast<std::size_t>(rank)];
    if (c == nullptr) return fmt::format("rank {}", rank);
    if (c->host == c->address) return fmt::format("rank {} ({}, pid {})", rank, c->host, c->pid);
    return fmt::format("rank {} ({}, {}, pid {})", rank, c->host, c->address, c->pid);
  }

  void send(Conn& c, const Message& m) {
    if (!c.open) return;
    if (!send_all(c.fd.get(), encode_message(m), kSendTimeoutMs)) closed(c);
  }

  void abort(const std::string& reason) {
    if (aborted_) return;
    aborted_ = true;
    abort_deadline_ = monotonic_ns() + times_.linger_ns;
    Message m{MessageType::abort, 0, 0, "", reason};
    // Rank 0's own connection last: its process exits as soon as it reads this.
    for (auto& c : conns) {
      if (c->rank != 0) send(*c, m);
    }
    for (auto& c : conns) {
      if (c->rank == 0) send(*c, m);
    }
  }

  std::string missing_ranks() const {
    std::vector<std::string> missing;
    for (std::uint32_t r = 0; r < world_size_; ++r) {
      if (by_rank_[r] == nullptr) missing.push_back(std::to_string(r));
    }
    return fmt::format(
        "rank{} {} never joined within {:.0f} s: check that every rank was started, with the same world size, and "
        "can reach rank 0",
        missing.size() > 1 ? "s" : "", fmt::join(missing, ", "), static_cast<double>(times_.join_ns) / 1e9);
  }

  void hello(Conn& c, const Message& m) {
    const auto rank = m.id;
    c.host = m.key;
    c.pid = m.number >> 32;
    const auto size = m.number & 0xFFFFFFFFU;
    if (size != world_size_) {
      c.rank = static_cast<int>(std::min<std::uint64_t>(rank, world_size_ - 1));
      return abort(fmt::format("rank {} ({}, {}) was started for a job of {} processes, rank 0 for {}", rank, c.host,
                               c.address, size, world_size_));
    }
    if (rank >= world_size_) return;  // cannot happen: the size matched and clients check rank < size
    if (by_rank_[rank] != nullptr && by_rank_[rank]->open) {
      const Conn& first = *by_rank_[rank];
      return abort(
          fmt::format("rank {} joined twice: from {} ({}, pid {}) and {} ({}, pid {}); check RANK / "
                      "SLURM_PROCID",
                      rank, first.host, first.address, first.pid, c.host, c.address, c.pid));
    }
    if (by_rank_[rank] == nullptr) ++joined_;
    by_rank_[rank] = &c;
    c.rank = static_cast<int>(rank);
    if (aborted_) send(c, Message{MessageType::abort, 0, 0, "", "the job was aborted before this rank joined"});
  }

  void set(const std::string& key, const std::string& value) {
    kv_[key] = value;
    auto range = gets_.equal_range(key);
    bool erased = false;
    for (auto it = range.first; it != range.second;) {
      if (erased) {
        ++it;
        continue;
      }
      send(*it->second.conn, Message{MessageType::value, it->second.request, 0, "", value});
      if (it->second.erase) {
        kv_.erase(key);
        erased = true;
      }
      it = gets_.erase(it);
    }
  }

  void get(Conn& c, const Message& m) {
    const auto it = kv_.find(m.key);
    if (it == kv_.end()) {
      gets_.emplace(m.key, PendingGet{&c, m.id, m.number == 1});
      return;
    }
    send(c, Message{MessageType::value, m.id, 0, "", it->second});
    if (m.number == 1) kv_.erase(it);
  }

  void barrier(Conn& c, const Message& m) {
    auto& arrived = barriers_[m.key];
    arrived.emplace_back(&c, m.id);
    if (arrived.size() < world_size_) return;
    for (auto& [conn, request] : arrived) send(*conn, Message{MessageType::released, request, 0, "", ""});
    barriers_.erase(m.key);
  }

  void fail(Conn& c, FailKind kind, const std::string& reason) {
    if (aborted_ || c.rank < 0) return;
    if (kind == FailKind::local) return abort(fmt::format("{} failed: {}", describe(c.rank), reason));
    if (diagnosis_) return;  // the first report drives the diagnosis
    diagnosis_ = Diagnosis{};
    diagnosis_->rank = c.rank;
    diagnosis_->reason = reason;
    diagnosis_->ping_at = monotonic_ns() + times_.grace_ns;
  }

  void ping() {
    diagnosis_->pinged = true;
    diagnosis_->decide_at = monotonic_ns() + times_.ping_ns;
    ++round_;
    for (auto& c : conns) {
      if (c->rank >= 0 && c->open && !c->bye) send(*c, Message{MessageType::ping, round_, 0, "", ""});
    }
  }

  void pong(Conn& c, const Message& m) {
    if (!diagnosis_ || m.id != round_ || c.rank < 0) return;
    diagnosis_->answers[c.rank] = {m.number, m.value};
    std::size_t expected = 0;
    for (const auto& conn : conns) expected += conn->rank >= 0 && conn->open && !conn->bye ? 1 : 0;
    if (diagnosis_->answers.size() >= expected) decide();
  }

  void decide() {
    const auto& d = *diagnosis_;
    const std::string who = fmt::format("{}: {}", describe(d.rank), d.reason);
    std::vector<std::string> silent;
    for (std::uint32_t r = 0; r < world_size_; ++r) {
      const Conn* c = by_rank_[r];
      if (c != nullptr && c->bye) continue;
      if (!d.answers.contains(static_cast<int>(r))) silent.push_back(describe(static_cast<int>(r)));
    }
    if (!silent.empty()) {
      return abort(
          fmt::format("{}; {} did not answer rank 0 within {:.0f} s (stopped, hung, or cut off from the "
                      "network)",
                      who, fmt::join(silent, ", "), static_cast<double>(times_.ping_ns) / 1e9));
    }
    std::uint64_t low = UINT64_MAX, high = 0;
    for (const auto& [rank, answer] : d.answers) {
      low = std::min(low, answer.first);
      high = std::max(high, answer.first);
    }
    if (low < high) {
      std::vector<std::string> behind;
      for (const auto& [rank, answer] : d.answers) {
        if (answer.first == low) behind.push_back(fmt::format("{} is behind, {}", describe(rank), answer.second));
      }
      return abort(
          fmt::format("{}; {} (step {}; the furthest rank is at step {})", who, fmt::join(behind, "; "), low, high));
    }
    abort(
        fmt::format("{}; every rank answered and is at the same step ({}): none is missing or behind, so the "
                    "network between the ranks did not deliver",
                    who, d.answers.empty() ? std::string("-") : d.answers.begin()->second.second));
  }

  struct PendingGet {
    Conn* conn;
    std::uint64_t request;
    bool erase;
  };
  struct Diagnosis {
    int rank = -1;
    std::string reason;
    std::int64_t ping_at = 0, decide_at = 0;
    bool pinged = false;
    std::map<int, std::pair<std::uint64_t, std::string>> answers;  // rank -> (step, where)
  };

  std::uint32_t world_size_;
  ServerTimes times_;
  std::vector<Conn*> by_rank_;
  std::uint32_t joined_ = 0;
  std::int64_t join_deadline_;
  std::map<std::string, std::string> kv_;
  std::multimap<std::string, PendingGet> gets_;
  std::map<std::string, std::vector<std::pair<Conn*, std::uint64_t>>> barriers_;
  bool aborted_ = false;
  std::int64_t abort_deadline_ = 0;
  std::optional<Diagnosis> diagnosis_;
  std::uint64_t round_ = 0;
};

ControlServer::ControlServer(std::uint32_t world_size, std::uint16_t port, ServerTimes times)
    : state_(std::make_unique<State>(world_size, times)) {
  try {
    try {
      listener_ = listen_tcp(resolve_address("[::]", port, "rendezvous"), false, 1024);
    } catch (const Error&) {  // no IPv6 here
      listener_ = listen_tcp(resolve_address("0.0.0.0", port, "rendezvous"), false, 1024);
    }
  } catch (const Error& e) {
    throw Error(
        fmt::format("rank 0 cannot serve the rendezvous: {} (another job's port? choose one with "
                    "--master-port or MASTER_PORT)",
                    e.what()));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&bound), &length);
  port_ = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                           : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  wakeup_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  thread_ = std::thread([this] { run(); });
}

ControlServer::~ControlServer() {
  stop_ = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wakeup_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

bool ControlServer::wait_done(std::int64_t timeout_ns) {
  const auto deadline = monotonic_ns() + timeout_ns;
  while (!done_ && monotonic_ns() < deadline) {
    timespec pause{0, 5'000'000};
    nanosleep(&pause, nullptr);
  }
  return done_;
}

void ControlServer::run() {
  auto& s = *state_;
  std::vector<pollfd> fds;
  std::vector<Conn*> polled;
  char buffer[65536];
  while (!stop_) {
    const int timeout_ms = s.tick();
    if (s.finished()) break;
    fds.assign({{listener_.get(), POLLIN, 0}, {wakeup_.get(), POLLIN, 0}});
    polled.clear();
    for (auto& c : s.conns) {
      if (!c->open) continue;
      fds.push_back({c->fd.get(), POLLIN, 0});
      polled.push_back(c.get());
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if ((fds[0].revents & POLLIN) != 0) {
      for (;;) {
        sockaddr_storage peer{};
        socklen_t length = sizeof peer;
        const int fd =
            ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        set_nodelay(fd, true);
        set_keep_alive(fd);
        s.accepted(Fd(fd), peer_ip(peer));
      }
    }
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if (fds[i + 2].revents == 0) continue;
      Conn& c = *polled[i];
      const ssize_t n = ::recv(c.fd.get(), buffer, sizeof buffer, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        s.closed(c);
        continue;
      }
      if (n < 0) continue;
      try {
        c.decoder.feed(buffer, static_cast<std::size_t>(n));
        while (c.open) {
          auto m = c.decoder.next();
          if (!m) break;
          s.received(c, *m);
        }
      } catch (const Error&) {
        s.closed(c);  // not one of ours: drop it
      }
    }
  }
  done_ = true;
}

}  // namespace xtk::collective
