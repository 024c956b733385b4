// A queue that grows, kept in one ring of slots: the flows of a destination
// waiting for a connection. std::deque allocated and freed a block every five
// flows there, and a client behind its schedule queues every flow.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace xtk {

template <typename T>
class GrowingRing {
 public:
  bool empty() const { return head_ == tail_; }
  std::size_t size() const { return tail_ - head_; }
  const T& front() const { return slots_[head_ & mask()]; }  // not empty

  void push_back(const T& value) {
    if (size() == slots_.size()) grow();
    slots_[tail_++ & mask()] = value;
  }
  void push_front(const T& value) {
    if (size() == slots_.size()) grow();
    slots_[--head_ & mask()] = value;
  }
  void pop_front() { ++head_; }  // not empty
  void clear() { head_ = tail_ = 0; }

  // Calls f on each element, front first.
  template <typename F>
  void for_each(F f) const {
    for (std::size_t i = head_; i != tail_; ++i) f(slots_[i & mask()]);
  }

 private:
  std::size_t mask() const { return slots_.size() - 1; }
  // Twice the slots, a power of two, so an index wraps with a mask.
  void grow() {
    std::vector<T> bigger(std::max<std::size_t>(16, 2 * slots_.size()));
    const std::size_t n = size();
    for (std::size_t i = 0; i < n; ++i) bigger[i] = slots_[(head_ + i) & mask()];
    slots_.swap(bigger);
    head_ = 0;
    tail_ = n;
  }

  std::vector<T> slots_;
  // Counters that run on (wrapping around 2^64, by a power of two, leaves the
  // slot they name unchanged): tail - head is the size.
  std::size_t head_ = 0, tail_ = 0;
};

}  // namespace xtk
