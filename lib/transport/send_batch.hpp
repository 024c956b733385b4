// The small sends that one wait's events make, submitted together: one
// io_uring_enter for all of them, where a send() each is a system call. A
// system call costs about 1 us on these VMs, and 1 KB flows flat out make two a
// flow on each side (the flow, its ack); the sends they start on connections
// that became ready together then leave in one call. The Poller owns one and
// flushes it before each wait returns (transport.hpp, Poller::send_later).
// Internal to lib/transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

struct io_uring;

namespace xtk {

class EventSource;

class SendBatch {
 public:
  // Sends larger than this go out at once (a write of a long flow is one
  // system call among many copies anyway).
  static constexpr std::size_t kSlotBytes = 4096;
  static constexpr unsigned kSlots = 64;

  // Null where the kernel refuses io_uring (before Linux 5.6, a container's
  // seccomp profile, kernel.io_uring_disabled): every send then goes at once.
  static std::unique_ptr<SendBatch> open();
  ~SendBatch();
  SendBatch(const SendBatch&) = delete;
  SendBatch& operator=(const SendBatch&) = delete;

  // Room for `bytes` to `fd`, to fill before the flush; null when the batch
  // is full or the send too large.
  char* reserve(int fd, std::size_t bytes, EventSource& source);
  // `source` is going away: its sends are dropped (its descriptor may be
  // closed, and its number reused, before the flush).
  void forget(const EventSource& source);
  bool empty() const { return slots_.empty(); }
  // Sends what is queued (non-blocking: MSG_DONTWAIT; one send alone by
  // send(), the rest in one io_uring_enter) and hands each source its result,
  // the bytes sent or -errno (EventSource::on_sent).
  void flush(std::int64_t now);

 private:
  explicit SendBatch(std::unique_ptr<io_uring> ring);
  // Slot i by send(), its result stored.
  void send_at_once(std::size_t i);
  struct Slot {
    int fd = -1;
    std::size_t bytes = 0;
    EventSource* source = nullptr;  // null: dropped
    unsigned order = 0;             // its place among the entries submitted
    std::int64_t result = 0;
  };
  std::unique_ptr<io_uring> ring_;
  bool broken_ = false;    // io_uring failed a submission: every send goes at once from then on
  bool flushing_ = false;  // sources answered now send at once
  std::vector<Slot> slots_;
  std::vector<char> room_ = std::vector<char>(static_cast<std::size_t>(kSlots) * kSlotBytes);
};

}  // namespace xtk
