#include "collective/control_client.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace xtk::collective {
namespace {

constexpr std::uint16_t kDefaultPort = 29500;

std::string local_ip_of(int fd) {
  sockaddr_storage s{};
  socklen_t length = sizeof s;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&s), &length) != 0) return "";
  char text[INET6_ADDRSTRLEN] = "";
  if (s.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&s)->sin_addr, text, sizeof text);
  } else {
    const auto* a = reinterpret_cast<sockaddr_in6*>(&s);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], text, sizeof text);
    } else {
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    }
  }
  return text;
}

// One connection attempt, bounded by `timeout_ms`; an invalid Fd and errno on failure.
Fd try_connect(const SocketAddress& address, int timeout_ms, int* error) {
  Fd fd = connect_tcp_nonblocking(address, error);
  if (!fd) return fd;
  pollfd p{fd.get(), POLLOUT, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) {
    *error = ETIMEDOUT;
    return Fd();
  }
  *error = socket_error(fd.get());
  if (*error != 0) return Fd();
  return fd;
}

}  // namespace

ControlClient::ControlClient(const std::string& master, std::uint32_t rank, std::uint32_t world_size,
                             std::int64_t connect_timeout_ns, Progress& progress, AbortHandler on_abort)
    : master_(master), progress_(progress), on_abort_(std::move(on_abort)) {
  const SocketAddress address = resolve_address(master, kDefaultPort, "--master");
  const auto deadline = monotonic_ns() + connect_timeout_ns;
  int error = 0;
  for (;;) {
    fd_ = try_connect(address, 1000, &error);
    if (fd_ || monotonic_ns() >= deadline) break;
    timespec pause{0, 100'000'000};  // rank 0 may not listen yet
    nanosleep(&pause, nullptr);
  }
  if (!fd_) {
    throw Error(fmt::format("rank {}: cannot reach rank 0's rendezvous at {} within {:.0f} s: {}", rank,
                            address.to_string(), static_cast<double>(connect_timeout_ns) / 1e9, std::strerror(error)));
  }
  fcntl(fd_.get(), F_SETFL, fcntl(fd_.get(), F_GETFL, 0) & ~O_NONBLOCK);
  set_nodelay(fd_.get(), true);
  set_keep_alive(fd_.get());
  local_ip_ = local_ip_of(fd_.get());
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  const auto pid = static_cast<std::uint64_t>(::getpid());
  send(Message{MessageType::hello, rank, (pid << 32) | world_size, host, ""});
  reader_ = std::thread([this] { read_loop(); });
}

ControlClient::~ControlClient() {
  {
    std::lock_guard lock(mutex_);
    said_bye_ = true;  // closing on purpose: the reader must not report rank 0 as lost
  }
  ::shutdown(fd_.get(), SHUT_RDWR);
  if (reader_.joinable()) reader_.join();
}

void ControlClient::send(const Message& m) {
  std::lock_guard lock(send_mutex_);
  send_all(fd_.get(), encode_message(m), 60'000);  // a lost rank 0 shows up in the reader
}

std::uint64_t ControlClient::request(Message m) {
  {
    std::lock_guard lock(mutex_);
    if (abort_reason_) throw Error(*abort_reason_);
    m.id = next_id_++;
  }
  send(m);
  return m.id;
}

std::optional<Message> ControlClient::await(std::uint64_t id, std::int64_t deadline_ns) {
  std::unique_lock lock(mutex_);
  const auto until = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns));
  answered_.wait_until(lock, until, [&] { return answers_.contains(id) || abort_reason_.has_value(); });
  if (abort_reason_) throw Error(*abort_reason_);
  const auto it = answers_.find(id);
  if (it == answers_.end()) return std::nullopt;
  Message m = std::move(it->second);
  answers_.erase(it);
  return m;
}

void ControlClient::set(const std::string& key, const std::string& value) {
  send(Message{MessageType::set, 0, 0, key, value});
}

std::optional<std::string> ControlClient::get(const std::string& key, std::int64_t deadline_ns, bool take) {
  const auto id = request(Message{MessageType::get, 0, take ? 1U : 0U, key, ""});
  auto m = await(id, deadline_ns);
  if (!m) return std::nullopt;
  return std::move(m->value);
}

bool ControlClient::barrier(const std::string& name, std::int64_t deadline_ns) {
  const auto id = request(Message{MessageType::barrier, 0, 0, name, ""});
  return await(id, deadline_ns).has_value();
}

ClockOffset ControlClient::clock_offset(int rounds, std::int64_t deadline_ns) {
  ClockOffset best{0, -1};
  for (int k = 0; k < rounds; ++k) {
    const std::int64_t sent = realtime_ns();
    const auto id = request(Message{MessageType::clock, 0, 0, "", ""});
    const auto answer = await(id, deadline_ns);
    const std::int64_t received = realtime_ns();
    if (!answer) throw Error(fmt::format("rank 0 at {} did not answer a clock request in time", master_));
    const std::int64_t rtt = received - sent;
    if (best.rtt_ns < 0 || rtt < best.rtt_ns) {
      best.rtt_ns = rtt;
      best.offset_ns = static_cast<std::int64_t>(answer->number) - (sent + rtt / 2);
    }
  }
  return best;
}

void ControlClient::fail(FailKind kind, const std::string& reason) {
  send(Message{MessageType::fail, 0, static_cast<std::uint64_t>(kind), "", reason});
}

void ControlClient::bye() {
  {
    std::lock_guard lock(mutex_);
    said_bye_ = true;
  }
  send(Message{MessageType::bye, 0, 0, "", ""});
}

void ControlClient::aborted(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (abort_reason_) return;
    abort_reason_ = reason;
  }
  answered_.notify_all();
  on_abort_(reason);
}

void ControlClient::read_loop() {
  MessageDecoder decoder;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    try {
      decoder.feed(buffer, static_cast<std::size_t>(n));
      while (auto m = decoder.next()) {
        switch (m->type) {
          case MessageType::value:
          case MessageType::released: {
            std::lock_guard lock(mutex_);
            answers_[m->id] = std::move(*m);
            answered_.notify_all();
            break;
          }
          case MessageType::abort:
            aborted(m->value);
            return;
          case MessageType::ping:
            send(Message{MessageType::pong, m->id, progress_.step(), "", progress_.where()});
            break;
          default:
            break;  // nothing else is sent to ranks
        }
      }
    } catch (const Error& e) {
      aborted(fmt::format("the connection to rank 0 at {} broke: {}", master_, e.what()));
      return;
    }
  }
  bool expected = false;
  {
    std::lock_guard lock(mutex_);
    expected = said_bye_;
  }
  if (!expected) {
    aborted(
        fmt::format("rank 0 (the rendezvous at {}) closed the connection: its process ended or was killed, or "
                    "its host went away",
                    master_));
  }
}

}  // namespace xtk::collective
