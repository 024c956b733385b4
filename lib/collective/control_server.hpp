// Rank 0's rendezvous: a small TCP server (one thread) that every rank,
// rank 0 included, connects to for the whole run. It keeps the key-value
// store the backends bootstrap from (Gloo's addresses, NCCL's unique id),
// runs barriers, and turns any rank's trouble into one abort message for all:
//
// - a rank that never joins within the join timeout,
// - a rank whose connection closes before it said bye (died, killed, host gone),
// - a rank that reports a failure of its own, or one that waited in vain:
//   then rank 0 asks every rank where it is (ping) and names the one that
//   does not answer, is behind the others, or says the network is at fault.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "transport/socket.hpp"

namespace xtk::collective {

struct ServerTimes {
  std::int64_t join_ns = 30'000'000'000;   // every rank must have joined by then
  std::int64_t grace_ns = 500'000'000;     // after a failure report: time for a disconnect to arrive first
  std::int64_t ping_ns = 2'000'000'000;    // how long ranks have to answer a ping
  std::int64_t linger_ns = 5'000'000'000;  // after an abort: time for the ranks to read it
};

class ControlServer {
 public:
  // Listens on every address at `port` (0 = any free port) for `world_size` ranks.
  ControlServer(std::uint32_t world_size, std::uint16_t port, ServerTimes times);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  std::uint16_t port() const { return port_; }
  // Waits until every rank said bye, or the job aborted and its ranks left; false after `timeout_ns`.
  bool wait_done(std::int64_t timeout_ns);

 private:
  class State;
  void run();
  Fd listener_;
  Fd wakeup_;  // eventfd: tells the loop to stop
  std::uint16_t port_ = 0;
  std::unique_ptr<State> state_;
  std::atomic<bool> stop_{false}, done_{false};
  std::thread thread_;
};

}  // namespace xtk::collective
