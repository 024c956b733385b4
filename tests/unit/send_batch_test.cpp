// The poller's batched sends (transport.hpp, Poller::send_later), over real
// loopback TCP connections: the sends made while a wait's events are handled
// leave together after the last event (a lone one by send()), each source
// hears what its send did, and a source that goes away first sends nothing.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "transport/socket.hpp"
#include "transport/transport.hpp"

namespace xtk {
namespace {

// A connected pair over loopback: `near` in the poller, `far` the peer.
struct Pair {
  Fd near, far;
};

Pair connected_pair() {
  const SocketAddress any = resolve_address("127.0.0.1:0", 0, "test");
  Fd listener = listen_tcp(any, false);
  SocketAddress bound;
  bound.length = sizeof bound.storage;
  getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound.storage), &bound.length);
  Fd far(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(connect(far.get(), reinterpret_cast<const sockaddr*>(&bound.storage), bound.length), 0);
  Fd near(accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  EXPECT_TRUE(near);
  return {std::move(near), std::move(far)};
}

// A source in `poller` for the input of its socket, while it lives.
struct Registered : EventSource {
  Registered(Poller& p, Fd s) : poller(p), fd(std::move(s)) { poller.add(fd.get(), *this, EPOLLIN); }
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;
  Poller& poller;
  Fd fd;

 protected:
  ~Registered() { poller.forget(*this); }
};

// Answers each byte the peer sends with `reply`, through send_later.
struct Echo final : Registered {
  Echo(Poller& p, Fd s, std::string r) : Registered(p, std::move(s)), reply(std::move(r)) {}
  void on_events(std::uint32_t, std::int64_t) override {
    char byte = 0;
    ASSERT_EQ(recv(fd.get(), &byte, 1, 0), 1);
    if (char* room = poller.send_later(fd.get(), reply.size(), *this)) {
      std::memcpy(room, reply.data(), reply.size());
      ++batched;
    } else {
      ASSERT_EQ(send(fd.get(), reply.data(), reply.size(), MSG_NOSIGNAL), static_cast<ssize_t>(reply.size()));
    }
  }
  void on_sent(std::int64_t result, std::int64_t) override { results.push_back(result); }
  std::string reply;
  int batched = 0;
  std::vector<std::int64_t> results;
};

std::string read_all(int fd, std::size_t bytes) {
  std::string got(bytes, '\0');
  std::size_t at = 0;
  while (at < bytes) {
    const ssize_t n = recv(fd, got.data() + at, bytes - at, 0);
    if (n <= 0) break;
    at += static_cast<std::size_t>(n);
  }
  got.resize(at);
  return got;
}

bool readable_now(int fd) {
  char byte = 0;
  return recv(fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK) > 0;
}

TEST(SendBatch, AWaitsSendsLeaveTogetherAfterItsEvents) {
  Poller poller(true);
  if (!poller.batches_sends()) GTEST_SKIP() << "the kernel refuses io_uring here: sends go at once";
  std::vector<std::unique_ptr<Echo>> echoes;
  std::vector<Fd> peers;
  for (int i = 0; i < 3; ++i) {
    Pair p = connected_pair();
    echoes.push_back(std::make_unique<Echo>(poller, std::move(p.near), "reply " + std::to_string(i)));
    peers.push_back(std::move(p.far));
  }
  for (auto& peer : peers) ASSERT_EQ(send(peer.get(), "x", 1, 0), 1);
  const timespec wait{1, 0};
  int handled = 0;
  bool nothing_sent_meanwhile = true;
  poller.dispatch(&wait, [&]() -> std::int64_t {
    // Before each event: no earlier event's reply has left yet.
    for (auto& peer : peers) nothing_sent_meanwhile = nothing_sent_meanwhile && !readable_now(peer.get());
    ++handled;
    return 1;
  });
  ASSERT_EQ(handled, 3);
  EXPECT_TRUE(nothing_sent_meanwhile);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(echoes[i]->batched, 1);
    EXPECT_EQ(read_all(peers[i].get(), echoes[i]->reply.size()), echoes[i]->reply);
    EXPECT_EQ(echoes[i]->results, (std::vector<std::int64_t>{static_cast<std::int64_t>(echoes[i]->reply.size())}));
  }
}

TEST(SendBatch, ALoneSendLeavesAndItsSourceHearsWhatItDid) {
  Poller poller(true);
  if (!poller.batches_sends()) GTEST_SKIP() << "the kernel refuses io_uring here: sends go at once";
  Pair p = connected_pair();
  Echo echo(poller, std::move(p.near), "alone");
  ASSERT_EQ(send(p.far.get(), "x", 1, 0), 1);
  const timespec wait{1, 0};
  poller.dispatch(&wait, [] { return std::int64_t{1}; });
  EXPECT_EQ(echo.batched, 1);
  EXPECT_EQ(echo.results, (std::vector<std::int64_t>{5}));
  EXPECT_EQ(read_all(p.far.get(), 5), "alone");
}

TEST(SendBatch, NothingIsBatchedOutsideADispatchOrWhenTurnedOff) {
  Poller batching(true), plain(false);
  EXPECT_FALSE(plain.batches_sends());
  Pair p = connected_pair();
  Echo echo(plain, std::move(p.near), "at once");
  EXPECT_EQ(batching.send_later(echo.fd.get(), 4, echo), nullptr);  // not inside dispatch
  ASSERT_EQ(send(p.far.get(), "x", 1, 0), 1);
  const timespec wait{1, 0};
  plain.dispatch(&wait, [] { return std::int64_t{1}; });
  EXPECT_EQ(echo.batched, 0);
  EXPECT_EQ(read_all(p.far.get(), 7), "at once");
}

TEST(SendBatch, ASourceThatGoesAwayBeforeTheFlushSendsNothing) {
  Poller poller(true);
  if (!poller.batches_sends()) GTEST_SKIP() << "the kernel refuses io_uring here: sends go at once";
  Pair first = connected_pair(), second = connected_pair();
  auto doomed = std::make_unique<Echo>(poller, std::move(first.near), "never");
  // The second source's event closes the first after its send was queued.
  struct Closer final : Registered {
    Closer(Poller& p, Fd s, std::unique_ptr<Echo>& v) : Registered(p, std::move(s)), victim(v) {}
    void on_events(std::uint32_t, std::int64_t) override {
      char byte = 0;
      ASSERT_EQ(recv(fd.get(), &byte, 1, 0), 1);
      victim.reset();
    }
    std::unique_ptr<Echo>& victim;
  } closer(poller, std::move(second.near), doomed);
  ASSERT_EQ(send(first.far.get(), "x", 1, 0), 1);
  const timespec wait{1, 0};
  poller.dispatch(&wait, [] { return std::int64_t{1}; });  // the doomed echo queues its reply
  ASSERT_TRUE(doomed);
  // Queued again in a dispatch where the closer's event comes next (epoll
  // reports in the order they became ready): the reply must not leave, its
  // descriptor closed with its source.
  ASSERT_EQ(read_all(first.far.get(), 5), "never");
  ASSERT_EQ(send(first.far.get(), "x", 1, 0), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(send(second.far.get(), "x", 1, 0), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  int handled = 0;
  while (handled < 2 && doomed) {
    poller.dispatch(&wait, [&] {
      ++handled;
      return std::int64_t{1};
    });
  }
  EXPECT_EQ(handled, 2);
  EXPECT_FALSE(doomed);
  EXPECT_EQ(read_all(first.far.get(), 5), "");  // the end of the stream, and no second reply
}

}  // namespace
}  // namespace xtk
