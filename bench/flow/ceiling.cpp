// The small-flow ceiling of this machine: a minimal epoll client and server
// moving 1 KB flows, each answered by an 8-byte ack, with one flow in flight
// per connection, either over persistent connections or a new connection per
// flow. bench/flow/run.py compares xtk-client's flows/s against it.
//
//   xtk-bench-ceiling server PORT [per-flow] [wire]
//   xtk-bench-ceiling client PORT CONNECTIONS SECONDS persistent|per-flow [wire]
//
// A connection per flow goes as xtk's does (docs/wire.md, "Who closes a
// connection"): a non-blocking connect, and the server closes after its ack
// (`server PORT per-flow`), so TIME_WAIT stays on the server and the client
// never waits for a port.
//
// With `wire`, both ends speak xtk's flow wire (docs/wire.md, through
// lib/transport/wire.hpp): each flow is a 56-byte header and its 1,000 bytes,
// and its ack carries its flow id. The minimal client can then drive
// xtk-server and xtk-client can drive the minimal server, so run.py measures
// each side of xtk against its minimal counterpart.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "transport/wire.hpp"

namespace {

constexpr std::size_t kFlowBytes = 1000;
constexpr std::size_t kMaxDescriptors = 65536;

struct Mode {
  bool per_flow = false;
  bool wire = false;
  std::size_t header() const { return wire ? xtk::kFlowHeaderBytes : 0; }
  std::size_t message() const { return header() + kFlowBytes; }
};

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

// Per connection: the bytes of the current flow so far, and its header (wire).
struct Incoming {
  std::size_t got = 0;
  xtk::HeaderBytes header{};
};

int serve(int port, Mode mode) {
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
  std::vector<Incoming> incoming(kMaxDescriptors);
  std::vector<char> buffer(mode.message());
  epoll_event events[256];
  while (true) {
    const int n = epoll_wait(ep, events, 256, -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listener) {
        int c = 0;
        while ((c = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK)) >= 0) {
          nodelay(c);
          incoming[static_cast<std::size_t>(c)].got = 0;
          epoll_event e{EPOLLIN, {.fd = c}};
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &e);
        }
        continue;
      }
      const ssize_t r = recv(fd, buffer.data(), buffer.size(), 0);
      if (r <= 0) {
        close(fd);
        continue;
      }
      Incoming& in = incoming[static_cast<std::size_t>(fd)];
      bool closed = false;
      for (std::size_t at = 0; at < static_cast<std::size_t>(r) && !closed;) {
        const std::size_t take = std::min(static_cast<std::size_t>(r) - at, mode.message() - in.got);
        if (in.got < mode.header()) {
          const std::size_t h = std::min(take, mode.header() - in.got);
          std::memcpy(in.header.data() + in.got, buffer.data() + at, h);
        }
        in.got += take;
        at += take;
        if (in.got < mode.message()) break;
        in.got = 0;
        std::uint64_t id = 0;
        if (mode.wire) {
          const auto header = xtk::decode(in.header, nullptr);
          if (!header) {
            close(fd);
            closed = true;
            continue;
          }
          id = header->flow_id;
        }
        const xtk::AckBytes ack = xtk::encode_ack(id);
        send(fd, ack.data(), ack.size(), MSG_NOSIGNAL);
        if (mode.per_flow) {
          close(fd);
          closed = true;
        }
      }
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

int drive(int port, int connections, double seconds, Mode mode) {
  const int ep = epoll_create1(0);
  std::vector<char> flow(mode.message(), 0);
  xtk::AckBytes ack{};
  // Per-flow connections by descriptor: connecting, then awaiting the ack,
  // then the server's close.
  enum class State : std::uint8_t { connecting, awaiting_ack, closing };
  std::vector<State> state(kMaxDescriptors, State::awaiting_ack);
  std::vector<std::uint64_t> flow_id(kMaxDescriptors, 0);
  std::uint64_t next_id = 0;
  const auto start_flow = [&](int fd) {
    if (mode.wire) {
      xtk::FlowHeader h;
      h.flow_id = ++next_id;
      h.size_bytes = kFlowBytes;
      h.last = mode.per_flow;
      const xtk::HeaderBytes bytes = xtk::encode(h);
      std::memcpy(flow.data(), bytes.data(), bytes.size());
      flow_id[static_cast<std::size_t>(fd)] = h.flow_id;
    }
    send(fd, flow.data(), flow.size(), MSG_NOSIGNAL);
  };
  const auto open_for_flow = [&] {
    const int fd = open_connection(port, true);
    state[static_cast<std::size_t>(fd)] = State::connecting;
    epoll_event e{EPOLLOUT, {.fd = fd}};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
  };
  for (int i = 0; i < connections; ++i) {
    if (mode.per_flow) {
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
      if (recv(fd, ack.data(), ack.size(), MSG_WAITALL) != static_cast<ssize_t>(ack.size())) return 1;
      if (mode.wire && xtk::decode_ack(ack) != flow_id[static_cast<std::size_t>(fd)]) {
        std::fprintf(stderr, "acknowledgement for another flow\n");
        return 1;
      }
      ++flows;
      if (mode.per_flow) {
        s = State::closing;
      } else {
        start_flow(fd);
      }
    }
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.0f\n", static_cast<double>(flows) / elapsed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Mode mode;
  if (!args.empty() && args.back() == "wire") {
    mode.wire = true;
    args.pop_back();
  }
  if ((args.size() == 2 || (args.size() == 3 && args[2] == "per-flow")) && args[0] == "server") {
    mode.per_flow = args.size() == 3;
    return serve(std::atoi(args[1].c_str()), mode);
  }
  if (args.size() == 5 && args[0] == "client" && (args[4] == "persistent" || args[4] == "per-flow")) {
    mode.per_flow = args[4] == "per-flow";
    return drive(std::atoi(args[1].c_str()), std::atoi(args[2].c_str()), std::atof(args[3].c_str()), mode);
  }
  std::fprintf(stderr,
               "usage: %s server PORT [per-flow] [wire] | client PORT CONNECTIONS SECONDS persistent|per-flow [wire]\n",
               argv[0]);
  return 2;
}
