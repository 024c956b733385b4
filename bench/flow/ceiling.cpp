// The small-flow ceiling of this machine: a minimal epoll client and server
// moving 1 KB flows, each answered by an 8-byte ack, with one flow in flight
// per connection, either over persistent connections or a new connection per
// flow. bench/flow/run.py compares xtk-client's flows/s against it.
//
//   xtk-bench-ceiling server PORT [per-flow]
//   xtk-bench-ceiling client PORT CONNECTIONS SECONDS persistent|per-flow
//
// A connection per flow goes as xtk's does (docs/wire.md, "Who closes a
// connection"): a non-blocking connect, and the server closes after its ack
// (`server PORT per-flow`), so TIME_WAIT stays on the server and the client
// never waits for a port.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kFlowBytes = 1000;
constexpr int kAckBytes = 8;

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

void nodelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int serve(int port, bool close_after_ack) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = loopback(port);
  if (bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(listener, 4096) != 0) {
    std::perror("listen");
    return 1;
  }
  const int ep = epoll_create1(0);
  epoll_event ev{EPOLLIN, {.fd = listener}};
  epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
  std::vector<int> got(65536, 0);
  char buffer[kFlowBytes];
  const char ack[kAckBytes] = {};
  epoll_event events[256];
  while (true) {
    const int n = epoll_wait(ep, events, 256, -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listener) {
        int c = 0;
        while ((c = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK)) >= 0) {
          nodelay(c);
          got[static_cast<std::size_t>(c)] = 0;
          epoll_event e{EPOLLIN, {.fd = c}};
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &e);
        }
        continue;
      }
      const ssize_t r = recv(fd, buffer, sizeof buffer, 0);
      if (r <= 0) {
        close(fd);
        continue;
      }
      int& have = got[static_cast<std::size_t>(fd)];
      have += static_cast<int>(r);
      while (have >= kFlowBytes) {
        have -= kFlowBytes;
        send(fd, ack, kAckBytes, MSG_NOSIGNAL);
      }
      if (close_after_ack && have == 0) close(fd);
    }
  }
}

int open_connection(int port, bool nonblocking) {
  const int fd = socket(AF_INET, SOCK_STREAM | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  sockaddr_in a = loopback(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    std::perror("connect");
    std::exit(1);
  }
  nodelay(fd);
  return fd;
}

int drive(int port, int connections, double seconds, bool persistent) {
  const int ep = epoll_create1(0);
  const char flow[kFlowBytes] = {};
  char ack[kAckBytes];
  // Per-flow connections by descriptor: connecting, then awaiting the ack,
  // then the server's close.
  enum class State : std::uint8_t { connecting, awaiting_ack, closing };
  std::vector<State> state(65536, State::awaiting_ack);
  const auto start_flow = [&](int fd) { send(fd, flow, kFlowBytes, MSG_NOSIGNAL); };
  const auto open_for_flow = [&] {
    const int fd = open_connection(port, true);
    state[static_cast<std::size_t>(fd)] = State::connecting;
    epoll_event e{EPOLLOUT, {.fd = fd}};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
  };
  for (int i = 0; i < connections; ++i) {
    if (!persistent) {
      open_for_flow();
      continue;
    }
    const int fd = open_connection(port, false);
    epoll_event e{EPOLLIN, {.fd = fd}};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
    start_flow(fd);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  long flows = 0;
  epoll_event events[256];
  while (std::chrono::steady_clock::now() < end) {
    const int n = epoll_wait(ep, events, 256, 100);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      State& s = state[static_cast<std::size_t>(fd)];
      if (s == State::connecting) {
        s = State::awaiting_ack;
        epoll_event e{EPOLLIN, {.fd = fd}};
        epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e);
        start_flow(fd);
        continue;
      }
      if (s == State::closing) {  // the server's close
        close(fd);
        open_for_flow();
        continue;
      }
      if (recv(fd, ack, kAckBytes, MSG_WAITALL) != kAckBytes) return 1;
      ++flows;
      if (persistent) {
        start_flow(fd);
      } else {
        s = State::closing;
      }
    }
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.0f\n", static_cast<double>(flows) / elapsed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 3 || (argc == 4 && std::string(argv[3]) == "per-flow")) && std::string(argv[1]) == "server") {
    return serve(std::atoi(argv[2]), argc == 4);
  }
  if (argc == 6 && std::string(argv[1]) == "client") {
    return drive(std::atoi(argv[2]), std::atoi(argv[3]), std::atof(argv[4]), std::string(argv[5]) == "persistent");
  }
  std::fprintf(stderr, "usage: %s server PORT [per-flow] | client PORT CONNECTIONS SECONDS persistent|per-flow\n",
               argv[0]);
  return 2;
}
