// TCP sockets for the flow engine: addresses, non-blocking connect/listen and
// the per-flow options (DSCP, pacing, congestion control, buffers).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace xtk {

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const { return storage.ss_family; }
  std::string to_string() const;  // "10.0.0.2:7000", "[fd77::2]:7000"
};

// "10.0.0.2:7000", "[fd77::2]:7000", "host:7000", or an address without a
// port (then `default_port`). Names are resolved now (getaddrinfo): never on a
// hot path. Throws UsageError naming `what`.
SocketAddress resolve_address(const std::string& text, std::uint16_t default_port, const std::string& what);
// True when `text` is a numeric IPv4 or IPv6 address (with or without brackets/port).
bool is_numeric_host(const std::string& text);

// A listening socket (SO_REUSEADDR, and SO_REUSEPORT so each worker can own one).
Fd listen_tcp(const SocketAddress& address, bool reuse_port, int backlog = 4096);
// A non-blocking connect started; the socket becomes writable when it completes.
Fd connect_tcp_nonblocking(const SocketAddress& address, int* error);
// The same, a failure known at once given as its text ("Network is unreachable").
Fd connect_tcp_nonblocking(const SocketAddress& address, std::string* error);

// send(2) and recv(2) for the flows' hot paths, made straight to the kernel.
// glibc's wrappers are cancellation points: in a process with threads each
// call also switches asynchronous cancellation on and off (two atomic
// operations), 80 ns per 1 KB flow flat out here. xtk never cancels a thread.
ssize_t send_now(int fd, const void* bytes, std::size_t length, int flags);
ssize_t recv_now(int fd, void* bytes, std::size_t length, int flags);

void set_nonblocking(int fd);
void set_nodelay(int fd, bool on);
// DSCP (0-63) into IP_TOS, and IPV6_TCLASS on an IPv6 socket (the ECN bits
// left 0). Returns errno, 0 on success.
int set_dscp(int fd, int family, int dscp);
// SO_MAX_PACING_RATE in bits/s, 0 = none. Returns errno, 0 on success.
int set_pacing_bps(int fd, std::uint64_t bps);
int set_congestion_control(int fd, const std::string& name);
void set_buffers(int fd, int send_bytes, int receive_bytes);  // 0 = leave the kernel's autotuning
// SO_RCVLOWAT: readable (and woken) only once `bytes` are queued, or at a FIN
// or an error. Returns errno, 0 on success.
int set_receive_low_water(int fd, std::size_t bytes);
// The socket's pending error (SO_ERROR), e.g. after a non-blocking connect.
int socket_error(int fd);

// Why a socket of this process cannot use the congestion control `name`
// (tried on a fresh socket, so the kernel decides: loaded or loadable
// modules, net.ipv4.tcp_allowed_congestion_control for unprivileged
// processes), with what to do about it; empty when it can.
std::string congestion_control_problem(const std::string& name);
// The kernel's default congestion control (net.ipv4.tcp_congestion_control).
std::string default_congestion_control();

}  // namespace xtk
