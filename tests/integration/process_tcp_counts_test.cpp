// The process's own TCP counts (lib/transport/tcp/process_counts.hpp) over
// real loopback sockets: connections carrying data count none, and a SYN that
// a full listener drops is retransmitted after TCP's initial timeout, 1 s.
#include "transport/tcp/process_counts.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "transport/socket.hpp"

namespace xtk {
namespace {

using namespace std::chrono_literals;

// Linux 6.7 added tcpi_total_rto.
bool kernel_counts_timeouts() {
  utsname u{};
  if (uname(&u) != 0) return false;
  char* end = nullptr;
  const long major = std::strtol(u.release, &end, 10);
  const long minor = *end == '.' ? std::strtol(end + 1, nullptr, 10) : 0;
  return major > 6 || (major == 6 && minor >= 7);
}

SocketAddress listening_address(const Fd& listener) {
  SocketAddress a;
  a.length = sizeof(a.storage);
  EXPECT_EQ(getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a.storage), &a.length), 0);
  return a;
}

// A loopback connection, both ends (empty ones where it failed).
struct Connection {
  Fd listener, client, server;
};
Connection connect_over_loopback() {
  Connection c;
  c.listener = listen_tcp(resolve_address("127.0.0.1:0", 0, "test"), false);
  std::string error;
  c.client = connect_tcp_nonblocking(listening_address(c.listener), &error);
  EXPECT_TRUE(c.client) << error;
  for (int i = 0; i < 200 && c.client && !c.server; ++i) {
    c.server = Fd(accept(c.listener.get(), nullptr, nullptr));
    if (!c.server) std::this_thread::sleep_for(5ms);
  }
  return c;
}

TEST(ProcessTcpCounts, ConnectionsWithoutLossCountNone) {
  ProcessTcpCounts counts;
  const Connection c = connect_over_loopback();
  ASSERT_TRUE(c.client && c.server);
  char buffer[4096] = {};
  std::size_t got = 0;
  for (int i = 0; i < 200 && got < 1 << 20; ++i) {
    (void)send(c.client.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    const ssize_t n = recv(c.server.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  const TcpCounts n = counts.take();
  EXPECT_GE(n.connections, 3u);  // the listener, the client and the accepted end
  EXPECT_EQ(n.retransmits, 0u);
  if (kernel_counts_timeouts()) {
    EXPECT_EQ(n.timeouts, 0u);
  }
}

// Data it may not send: the peer reads nothing, so its window closes and the
// sender's time limited by it grows while it waits.
TEST(ProcessTcpCounts, AReceiverThatDoesNotReadLimitsTheSender) {
  const Connection c = connect_over_loopback();
  ASSERT_TRUE(c.client && c.server);
  ProcessTcpCounts counts;
  static char buffer[1 << 16];
  while (send(c.client.get(), buffer, sizeof(buffer), MSG_DONTWAIT) > 0) {
  }
  std::this_thread::sleep_for(300ms);
  const TcpCounts n = counts.take();
  EXPECT_GE(n.rwnd_limited_us, 200'000u);
  EXPECT_LE(n.rwnd_limited_us, 2'000'000u);
  EXPECT_LT(counts.take().rwnd_limited_us, 100'000u) << "counted once, from the last call on";
}

TEST(ProcessTcpCounts, ASynDroppedByAFullListenerIsRetransmittedOnTimeout) {
  // Backlog 0 takes one connection; the kernel drops the SYNs after it.
  const Fd listener = listen_tcp(resolve_address("127.0.0.1:0", 0, "test"), false, 0);
  const SocketAddress address = listening_address(listener);
  std::string error;
  const Fd first = connect_tcp_nonblocking(address, &error);
  ASSERT_TRUE(first) << error;
  std::this_thread::sleep_for(50ms);
  ProcessTcpCounts counts;
  const Fd second = connect_tcp_nonblocking(address, &error);
  ASSERT_TRUE(second) << error;
  std::uint64_t retransmits = 0, timeouts = 0;
  const auto deadline = std::chrono::steady_clock::now() + 4s;
  while (std::chrono::steady_clock::now() < deadline && retransmits == 0) {
    std::this_thread::sleep_for(100ms);
    const TcpCounts c = counts.take();
    retransmits += c.retransmits;
    timeouts += c.timeouts.value_or(0);
  }
  EXPECT_GE(retransmits, 1u) << "no SYN retransmitted within 4 s";
  if (kernel_counts_timeouts()) {
    EXPECT_GE(timeouts, 1u);
  } else {
    EXPECT_FALSE(counts.take().timeouts.has_value());
  }
}

}  // namespace
}  // namespace xtk
