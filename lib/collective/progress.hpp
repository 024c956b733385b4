// Where this process is in the run, for rank 0's diagnosis when a rank waits
// in vain: a step counter that every rank advances identically (one per
// collective or barrier) and a short description, updated at coarse points.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace xtk::collective {

class Progress {
 public:
  void advance() { step_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t step() const { return step_.load(std::memory_order_relaxed); }
  void set_where(std::string where) {
    std::lock_guard lock(mutex_);
    where_ = std::move(where);
  }
  std::string where() const {
    std::lock_guard lock(mutex_);
    return where_;
  }

 private:
  std::atomic<std::uint64_t> step_{0};
  mutable std::mutex mutex_;
  std::string where_ = "starting";
};

}  // namespace xtk::collective
