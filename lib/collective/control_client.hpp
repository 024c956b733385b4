// A rank's connection to rank 0's rendezvous (control_server.hpp), kept for
// the whole run. Requests (set, get, barrier) block the caller until answered
// or a deadline; a reader thread receives answers, answers pings with this
// rank's progress, and hands an abort from rank 0 - or the loss of rank 0 -
// to the abort handler (which, in the tool, prints it and exits).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "collective/control_wire.hpp"
#include "collective/progress.hpp"
#include "transport/socket.hpp"

namespace xtk::collective {

struct ClockOffset {
  std::int64_t offset_ns = 0;  // rank 0's clock minus this one's
  std::int64_t rtt_ns = 0;     // the round trip it came from: the offset is good to half of it
};

class ControlClient {
 public:
  using AbortHandler = std::function<void(const std::string& reason)>;

  // Connects to `master` ("host:port", retrying while rank 0 is not up yet, up
  // to `connect_timeout_ns`) and joins as `rank` of `world_size`. Throws Error
  // naming rank 0's address when it cannot.
  ControlClient(const std::string& master, std::uint32_t rank, std::uint32_t world_size,
                std::int64_t connect_timeout_ns, Progress& progress, AbortHandler on_abort);
  ~ControlClient();
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  void set(const std::string& key, const std::string& value);
  // The key's value once some rank sets it; nullopt at the deadline (CLOCK_MONOTONIC ns).
  // `take` removes the key from the store. Throws Error once the job aborted.
  std::optional<std::string> get(const std::string& key, std::int64_t deadline_ns, bool take = false);
  // True once every rank reached barrier `name`; false at the deadline.
  bool barrier(const std::string& name, std::int64_t deadline_ns);
  void fail(FailKind kind, const std::string& reason);
  // This rank is done: closing the connection is no longer a failure.
  void bye();
  // This process's CLOCK_REALTIME offset from rank 0's: add it to a local
  // time to place it on rank 0's clock. The round trip with the shortest time
  // of `rounds` (NTP's estimate: rank 0 read its clock halfway through it).
  // Throws Error when rank 0 does not answer by the deadline.
  ClockOffset clock_offset(int rounds, std::int64_t deadline_ns);

  // The local IP this rank reached rank 0 from: routable to the other ranks.
  const std::string& local_ip() const { return local_ip_; }

 private:
  std::uint64_t request(Message m);  // sends with a fresh id, returns it
  std::optional<Message> await(std::uint64_t id, std::int64_t deadline_ns);
  void send(const Message& m);
  void read_loop();
  void aborted(const std::string& reason);

  Fd fd_;
  std::string master_, local_ip_;
  Progress& progress_;
  AbortHandler on_abort_;
  std::mutex send_mutex_;
  std::mutex mutex_;
  std::condition_variable answered_;
  std::map<std::uint64_t, Message> answers_;
  std::uint64_t next_id_ = 1;
  std::optional<std::string> abort_reason_;
  bool said_bye_ = false;
  std::thread reader_;
};

}  // namespace xtk::collective
