#include "transport/rdma/messages.hpp"

#include <algorithm>

namespace xtk::rdma {

MessagePlan::MessagePlan(std::uint64_t size_bytes, std::uint32_t message_bytes, std::uint32_t window, bool stream)
    : size_(size_bytes),
      message_(std::max<std::uint32_t>(message_bytes, 1)),
      window_(std::max<std::uint32_t>(window, 1)),
      stream_(stream) {}

std::uint32_t MessagePlan::next() {
  if (in_flight_ >= window_) return 0;
  std::uint64_t bytes = message_;
  if (stream_) {
    if (stopped_) return 0;
  } else {
    if (posted_ >= size_) return 0;
    bytes = std::min<std::uint64_t>(message_, size_ - posted_);
  }
  posted_ += bytes;
  ++in_flight_;
  return static_cast<std::uint32_t>(bytes);
}

void MessagePlan::completed(std::uint32_t bytes) {
  if (in_flight_ > 0) --in_flight_;
  completed_ += bytes;
}

}  // namespace xtk::rdma
