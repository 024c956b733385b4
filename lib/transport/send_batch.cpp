#include "transport/send_batch.hpp"

#ifdef XTK_HAVE_LIBURING
#include <liburing.h>
#else
struct io_uring {};  // built without liburing (lib/transport/CMakeLists.txt): no batch ever opens
#endif
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "transport/socket.hpp"
#include "transport/transport.hpp"

namespace xtk {

#ifdef XTK_HAVE_LIBURING

namespace {

constexpr std::int64_t kNoResult = INT64_MIN;

}  // namespace

std::unique_ptr<SendBatch> SendBatch::open() {
  auto ring = std::make_unique<io_uring>();
  if (io_uring_queue_init(kSlots, ring.get(), 0) != 0) return nullptr;
  // IORING_OP_SEND came in Linux 5.6, after io_uring itself (5.1).
  io_uring_probe* probe = io_uring_get_probe_ring(ring.get());
  const bool sends = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_SEND) != 0;
  if (probe != nullptr) io_uring_free_probe(probe);
  if (!sends) {
    io_uring_queue_exit(ring.get());
    return nullptr;
  }
  return std::unique_ptr<SendBatch>(new SendBatch(std::move(ring)));
}

SendBatch::SendBatch(std::unique_ptr<io_uring> ring) : ring_(std::move(ring)) { slots_.reserve(kSlots); }

SendBatch::~SendBatch() { io_uring_queue_exit(ring_.get()); }

char* SendBatch::reserve(int fd, std::size_t bytes, EventSource& source) {
  if (broken_ || flushing_ || bytes > kSlotBytes || slots_.size() >= kSlots) return nullptr;
  char* room = room_.data() + slots_.size() * kSlotBytes;
  slots_.push_back({fd, bytes, &source, 0, kNoResult});
  return room;
}

void SendBatch::forget(const EventSource& source) {
  for (Slot& slot : slots_) {
    if (slot.source == &source) slot.source = nullptr;
  }
}

void SendBatch::send_at_once(std::size_t i) {
  Slot& slot = slots_[i];
  const ssize_t n = send_now(slot.fd, room_.data() + i * kSlotBytes, slot.bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
  slot.result = n >= 0 ? n : -errno;
}

void SendBatch::flush(std::int64_t now) {
  flushing_ = true;
  // A lone send goes by send(): one system call either way, and the ring's
  // entry and completion cost more than they save. A connection per flow
  // starts about one flow a wait (docs/flow-engine.md#send-batching).
  const auto live = std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.source != nullptr; });
  unsigned queued = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.source == nullptr) continue;
    if (live == 1) {
      send_at_once(i);
      continue;
    }
    slot.order = queued;
    io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());  // never null: the ring has a slot's entry each
    // MSG_DONTWAIT: a full socket answers -EAGAIN, as send() would, and the
    // source waits for EPOLLOUT; without it io_uring would wait in the kernel.
    io_uring_prep_send(sqe, slot.fd, room_.data() + i * kSlotBytes, slot.bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    io_uring_sqe_set_data64(sqe, i);
    ++queued;
  }
  int submitted = 0;
  if (queued > 0) {
    do {
      submitted = io_uring_submit(ring_.get());
    } while (submitted == -EINTR);
  }
  // Non-blocking sends complete within the submission; the wait is only a check.
  for (int got = 0; got < submitted;) {
    io_uring_cqe* cqe = nullptr;
    const int error = io_uring_wait_cqe(ring_.get(), &cqe);
    if (error == -EINTR) continue;
    if (error != 0) break;
    slots_[io_uring_cqe_get_data64(cqe)].result = cqe->res;
    io_uring_cqe_seen(ring_.get(), cqe);
    ++got;
  }
  // Never expected: io_uring took fewer entries than queued (it takes them in
  // order), or its answer failed to come. The ring is not used again (entries
  // left in it would go out with a later batch); what it did not take goes by
  // send() now, and what it took without answering fails (sent again, its
  // bytes could reach the peer twice).
  bool answered = true;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.source == nullptr || slot.result != kNoResult) continue;
    answered = false;
    if (static_cast<int>(slot.order) < submitted) {
      slot.result = -EIO;
      continue;
    }
    send_at_once(i);
  }
  if (!answered) broken_ = true;
  // A source's answer may end its flow, start another, or close other
  // sources: those are dropped from the slots as they go.
  for (Slot& slot : slots_) {
    EventSource* source = slot.source;
    if (source == nullptr) continue;
    slot.source = nullptr;
    source->on_sent(slot.result, now);
  }
  slots_.clear();
  flushing_ = false;
}

#else

std::unique_ptr<SendBatch> SendBatch::open() { return nullptr; }
SendBatch::SendBatch(std::unique_ptr<io_uring> ring) : ring_(std::move(ring)) {}
SendBatch::~SendBatch() = default;
char* SendBatch::reserve(int /*fd*/, std::size_t /*bytes*/, EventSource& /*source*/) { return nullptr; }
void SendBatch::forget(const EventSource& /*source*/) {}
void SendBatch::flush(std::int64_t /*now*/) {}

#endif

}  // namespace xtk
