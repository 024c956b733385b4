// A flow's bytes as RDMA messages: at most `message_bytes` each, at most
// `window` posted and not yet completed. The sender asks for the next message
// while the window has room and counts completions back; the flow is done when
// every byte was posted and completed (a stream: after stop(), when what was
// posted completed).
#pragma once

#include <cstdint>

namespace xtk::rdma {

class MessagePlan {
 public:
  MessagePlan() = default;
  MessagePlan(std::uint64_t size_bytes, std::uint32_t message_bytes, std::uint32_t window, bool stream);
  // The size of the next message to post, marking it posted; 0 when the
  // window is full or everything is posted.
  std::uint32_t next();
  // A send completion of `bytes` (a message posted before).
  void completed(std::uint32_t bytes);
  void stop() { stopped_ = true; }  // a stream: post nothing more
  bool done() const { return in_flight_ == 0 && (stream_ ? stopped_ : posted_ == size_); }
  std::uint32_t in_flight() const { return in_flight_; }
  std::uint64_t completed_bytes() const { return completed_; }

 private:
  std::uint64_t size_ = 0, posted_ = 0, completed_ = 0;
  std::uint32_t message_ = 1, window_ = 1, in_flight_ = 0;
  bool stream_ = false, stopped_ = false;
};

}  // namespace xtk::rdma
