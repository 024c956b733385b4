// Two stages of a stream on two threads: the first fills batches, the second
// takes them in order and gives them back emptied. A fixed set of batches
// circulates, so memory stays bounded and nothing is allocated per batch;
// a stage that runs ahead waits for the other.
//
// A stage that has to wait sleeps until half the batches are ready for it
// (or the stream ends), not just one: when one stage is steadily faster, it
// then sleeps once per half of the set instead of once per batch, and each
// sleep and wake-up costs a system call on both sides.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace xtk {

template <typename Batch>
class Handoff {
 public:
  explicit Handoff(std::size_t batches) : wake_at_(std::max<std::size_t>(1, batches / 2)) {
    for (std::size_t i = 0; i < batches; ++i) {
      storage_.push_back(std::make_unique<Batch>());
      empty_.push_back(storage_.back().get());
    }
  }

  // First stage: a batch to fill, waiting while every one is in flight;
  // nullptr once the second stage has stopped.
  Batch* take_empty() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (empty_.empty())
      wait(lock, empty_ready_, waiting_for_empty_, [&] { return stopped_ || empty_.size() >= wake_at_; });
    if (stopped_) return nullptr;
    Batch* b = empty_.front();
    empty_.pop_front();
    return b;
  }
  void put_full(Batch* b) { put(full_, b, full_ready_, waiting_for_full_); }
  // First stage: nothing more comes.
  void finish() { raise(finished_, full_ready_); }

  // Second stage: the next filled batch in order, or nullptr after finish()
  // once every batch is taken.
  Batch* take_full() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (full_.empty())
      wait(lock, full_ready_, waiting_for_full_, [&] { return finished_ || full_.size() >= wake_at_; });
    if (full_.empty()) return nullptr;
    Batch* b = full_.front();
    full_.pop_front();
    return b;
  }
  void put_empty(Batch* b) { put(empty_, b, empty_ready_, waiting_for_empty_); }
  // Second stage (on an error): the first stage gets no more batches.
  void stop() { raise(stopped_, empty_ready_); }

  // Whether a stage sleeps in take_empty() or take_full() now: what a test
  // waits for before it checks what wakes it.
  bool first_stage_waits() const { return is_set(waiting_for_empty_); }
  bool second_stage_waits() const { return is_set(waiting_for_full_); }

 private:
  template <typename Ready>
  static void wait(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, bool& waiting, Ready ready) {
    waiting = true;
    cv.wait(lock, ready);
    waiting = false;
  }
  void put(std::deque<Batch*>& queue, Batch* b, std::condition_variable& ready, const bool& waiting) {
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue.push_back(b);
      wake = waiting && queue.size() >= wake_at_;
    }
    if (wake) ready.notify_one();
  }
  bool is_set(const bool& flag) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return flag;
  }
  void raise(bool& flag, std::condition_variable& ready) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      flag = true;
    }
    ready.notify_one();
  }

  std::size_t wake_at_;
  std::vector<std::unique_ptr<Batch>> storage_;
  mutable std::mutex mutex_;
  std::condition_variable empty_ready_, full_ready_;
  std::deque<Batch*> empty_, full_;
  bool finished_ = false, stopped_ = false;
  bool waiting_for_empty_ = false, waiting_for_full_ = false;
};

}  // namespace xtk
