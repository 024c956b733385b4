// The small-flow ceiling of this machine: a minimal epoll client and server
// moving 1 KB flows, each answered by an 8-byte ack, with one flow in flight
// per connection, either over persistent connections or a new connection per
// flow. bench/flow/run.sh compares xtk-client's flows/s against it.
//
//   xtk-bench-ceiling server PORT
//   xtk-bench-ceiling client PORT CONNECTIONS SECONDS persistent|per-flow
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
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

int serve(int port) {
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
    }
  }
}

int open_connection(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
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
  std::vector<int> fds;
  const auto start_flow = [&](int fd) { send(fd, flow, kFlowBytes, MSG_NOSIGNAL); };
  for (int i = 0; i < connections; ++i) {
    const int fd = open_connection(port);
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
      int fd = events[i].data.fd;
      if (recv(fd, ack, kAckBytes, MSG_WAITALL) != kAckBytes) return 1;
      ++flows;
      if (!persistent) {
        close(fd);
        fd = open_connection(port);
        epoll_event e{EPOLLIN, {.fd = fd}};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
      }
      start_flow(fd);
    }
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.0f\n", static_cast<double>(flows) / elapsed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "server") return serve(std::atoi(argv[2]));
  if (argc == 6 && std::string(argv[1]) == "client") {
    return drive(std::atoi(argv[2]), std::atoi(argv[3]), std::atof(argv[4]), std::string(argv[5]) == "persistent");
  }
  std::fprintf(stderr, "usage: %s server PORT | client PORT CONNECTIONS SECONDS persistent|per-flow\n", argv[0]);
  return 2;
}
