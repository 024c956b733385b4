// Where this process is in the run, for rank 0's diagnosis when a rank waits
// in vain: a step counter that every rank advances identically (one per
// collective or barrier) and a short description, updated at coarse points.
// It also tells the job's watchdog when this process last showed progress.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/clock.hpp"

namespace xtk::collective {

class Progress {
 public:
  void advance() {
    step_.fetch_add(1, std::memory_order_relaxed);
    touch();
  }
  // Progress that is not a step (a long wait whose parts complete).
  void touch() { last_ns_.store(monotonic_ns(), std::memory_order_relaxed); }
  // Idle by design until `ns` (waiting for --start-at): not a hang.
  void idle_until(std::int64_t ns) { idle_until_ns_.store(ns, std::memory_order_relaxed); }
  // How long this process has shown no progress at `now`; 0 while idle by design.
  std::int64_t quiet_ns(std::int64_t now) const {
    if (now < idle_until_ns_.load(std::memory_order_relaxed)) return 0;
    return now - std::max(last_ns_.load(std::memory_order_relaxed), idle_until_ns_.load(std::memory_order_relaxed));
  }
  std::uint64_t step() const { return step_.load(std::memory_order_relaxed); }
  void set_where(std::string where) {
    touch();
    std::lock_guard lock(mutex_);
    where_ = std::move(where);
  }
  std::string where() const {
    std::lock_guard lock(mutex_);
    return where_;
  }

 private:
  std::atomic<std::uint64_t> step_{0};
  std::atomic<std::int64_t> last_ns_{monotonic_ns()};
  std::atomic<std::int64_t> idle_until_ns_{0};
  mutable std::mutex mutex_;
  std::string where_ = "starting";
};

}  // namespace xtk::collective
