// A bounded single-producer single-consumer queue: the client's feeder hands
// planned flows to each worker without locks on the worker's timing path.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <vector>

namespace xtk {

template <typename T>
class SpscRing {
 public:
  // Holds at least `capacity` elements. The slots are a power of two, so an
  // index wraps with a mask, not a division (several per flow on the worker's
  // path).
  explicit SpscRing(std::size_t capacity) : slots_(std::bit_ceil(capacity + 1)), mask_(slots_.size() - 1) {}

  bool push(const T& value) {
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    const std::size_t next = (tail + 1) & mask_;
    if (next == head_.load(std::memory_order_acquire)) return false;
    slots_[tail] = value;
    tail_.store(next, std::memory_order_release);
    return true;
  }

  // The oldest element, or nullptr when empty. Valid until pop().
  const T* front() const {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_acquire)) return nullptr;
    return &slots_[head];
  }

  // The k-th oldest element (0 = front), or nullptr when there are not that
  // many. Consumer side only; valid until that element is popped.
  const T* peek(std::size_t k) const {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    const std::size_t tail = tail_.load(std::memory_order_acquire);
    const std::size_t size = (tail - head) & mask_;
    return k < size ? &slots_[(head + k) & mask_] : nullptr;
  }

  void pop() { head_.store((head_.load(std::memory_order_relaxed) + 1) & mask_, std::memory_order_release); }

 private:
  std::vector<T> slots_;
  std::size_t mask_;
  alignas(64) std::atomic<std::size_t> head_{0};
  alignas(64) std::atomic<std::size_t> tail_{0};
};

}  // namespace xtk
