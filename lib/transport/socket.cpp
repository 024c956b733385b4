#include "transport/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "core/error.hpp"
#include "core/kernel_files.hpp"

namespace xtk {

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string SocketAddress::to_string() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return fmt::format("{}:{}", host, ntohs(a->sin_port));
  }
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
  inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
  return fmt::format("[{}]:{}", host, ntohs(a->sin6_port));
}

namespace {

// Splits "host:port", "[v6]:port", "v6", "host" into host and port text.
std::pair<std::string, std::string> split_host_port(const std::string& text) {
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos) return {text, ""};
    std::string port = close + 1 < text.size() && text[close + 1] == ':' ? text.substr(close + 2) : "";
    return {text.substr(1, close - 1), port};
  }
  const auto colons = std::count(text.begin(), text.end(), ':');
  if (colons == 1) {
    const auto colon = text.find(':');
    return {text.substr(0, colon), text.substr(colon + 1)};
  }
  return {text, ""};  // a bare name, IPv4 or IPv6 address
}

}  // namespace

bool is_numeric_host(const std::string& text) {
  const auto host = split_host_port(text).first;
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 || inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

SocketAddress resolve_address(const std::string& text, std::uint16_t default_port, const std::string& what) {
  auto [host, port_text] = split_host_port(text);
  std::uint16_t port = default_port;
  if (!port_text.empty()) {
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size()) {
      throw UsageError(fmt::format("{}: port '{}' in '{}' is not a number 0-65535", what, port_text, text));
    }
  }
  if (host.empty() || host == "*") host = "::";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0 || result == nullptr) {
    throw UsageError(fmt::format("{}: cannot resolve '{}': {}", what, host, gai_strerror(rc)));
  }
  SocketAddress address;
  std::memcpy(&address.storage, result->ai_addr, result->ai_addrlen);
  address.length = result->ai_addrlen;
  freeaddrinfo(result);
  if (address.family() == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&address.storage)->sin_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in6*>(&address.storage)->sin6_port = htons(port);
  }
  return address;
}

ssize_t send_now(int fd, const void* bytes, std::size_t length, int flags) {
  return syscall(SYS_sendto, fd, bytes, length, flags, nullptr, 0);
}

ssize_t recv_now(int fd, void* bytes, std::size_t length, int flags) {
  return syscall(SYS_recvfrom, fd, bytes, length, flags, nullptr, nullptr);
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

void set_nodelay(int fd, bool on) {
  const int v = on ? 1 : 0;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v);
}

Fd listen_tcp(const SocketAddress& address, bool reuse_port, int backlog) {
  Fd fd(socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) throw Error(fmt::format("socket: {}", std::strerror(errno)));
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuse_port) setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (address.family() == AF_INET6) {
    const int zero = 0;  // "[::]" also takes IPv4
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  }
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
    throw Error(fmt::format("cannot listen on {}: {}", address.to_string(), std::strerror(errno)));
  }
  if (listen(fd.get(), backlog) != 0) {
    throw Error(fmt::format("listen on {}: {}", address.to_string(), std::strerror(errno)));
  }
  return fd;
}

Fd connect_tcp_nonblocking(const SocketAddress& address, int* error) {
  Fd fd(socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    *error = errno;
    return fd;
  }
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0 &&
      errno != EINPROGRESS) {
    *error = errno;
    return Fd();
  }
  *error = 0;
  return fd;
}

Fd connect_tcp_nonblocking(const SocketAddress& address, std::string* error) {
  int code = 0;
  Fd fd = connect_tcp_nonblocking(address, &code);
  if (!fd) *error = std::strerror(code);
  return fd;
}

int set_dscp(int fd, int family, int dscp) {
  const int tos = dscp << 2;
  if (setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos) != 0 && family == AF_INET) return errno;
  // An IPv6 socket needs both: IPV6_TCLASS for IPv6 peers, IP_TOS for
  // IPv4-mapped ones (a server on [::] serves IPv4 clients so).
  if (family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof tos) != 0) return errno;
  return 0;
}

int set_pacing_bps(int fd, std::uint64_t bps) {
  // The option takes bytes/s; ~0 means unlimited.
  const std::uint64_t bytes = bps == 0 ? ~std::uint64_t{0} : std::max<std::uint64_t>(1, bps / 8);
  return setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &bytes, sizeof bytes) == 0 ? 0 : errno;
}

int set_congestion_control(int fd, const std::string& name) {
  return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) == 0 ? 0 : errno;
}

void set_buffers(int fd, int send_bytes, int receive_bytes) {
  if (send_bytes > 0) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send_bytes, sizeof send_bytes);
  if (receive_bytes > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_bytes, sizeof receive_bytes);
}

int set_receive_low_water(int fd, std::size_t bytes) {
  const int v = static_cast<int>(bytes);
  return setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v) == 0 ? 0 : errno;
}

int socket_error(int fd) {
  int error = 0;
  socklen_t length = sizeof error;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
  return error;
}

std::string congestion_control_problem(const std::string& name) {
  const Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return fmt::format("cannot open a socket to try it: {}", std::strerror(errno));
  const int error = set_congestion_control(fd.get(), name);
  if (error == 0) return "";
  if (error == ENOENT) {
    const auto available = read_first_line("/proc/sys/net/ipv4/tcp_available_congestion_control");
    if (std::any_of(name.begin(), name.end(), [](unsigned char ch) { return std::isupper(ch) != 0; })) {
      return fmt::format("this kernel has no congestion control '{}': the names are lower case (available: {})", name,
                         available);
    }
    return fmt::format(
        "this kernel has no congestion control '{}' (available: {}; load its module, e.g. modprobe tcp_{})", name,
        available, name);
  }
  if (error == EPERM) {
    return fmt::format(
        "'{}' is not allowed for this process (net.ipv4.tcp_allowed_congestion_control = '{}'; "
        "add it there or run as root)",
        name, read_first_line("/proc/sys/net/ipv4/tcp_allowed_congestion_control"));
  }
  return fmt::format("'{}': {}", name, std::strerror(error));
}

std::string default_congestion_control() { return read_first_line("/proc/sys/net/ipv4/tcp_congestion_control"); }

}  // namespace xtk
