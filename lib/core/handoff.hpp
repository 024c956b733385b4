// Two stages of a stream on two threads: the first fills batches, the second
// takes them in order and gives them back emptied. A fixed set of batches
// circulates, so memory stays bounded and nothing is allocated per batch;
// a stage that runs ahead waits for the other.
#pragma once

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
  explicit Handoff(std::size_t batches) {
    for (std::size_t i = 0; i < batches; ++i) {
      storage_.push_back(std::make_unique<Batch>());
      empty_.push_back(storage_.back().get());
    }
  }

  // First stage: a batch to fill, waiting while every one is in flight;
  // nullptr once the second stage has stopped.
  Batch* take_empty() {
    std::unique_lock<std::mutex> lock(mutex_);
    empty_ready_.wait(lock, [&] { return stopped_ || !empty_.empty(); });
    if (stopped_) return nullptr;
    Batch* b = empty_.front();
    empty_.pop_front();
    return b;
  }
  void put_full(Batch* b) { put(full_, b, full_ready_); }
  // First stage: nothing more comes.
  void finish() { raise(finished_, full_ready_); }

  // Second stage: the next filled batch in order, or nullptr after finish()
  // once every batch is taken.
  Batch* take_full() {
    std::unique_lock<std::mutex> lock(mutex_);
    full_ready_.wait(lock, [&] { return finished_ || !full_.empty(); });
    if (full_.empty()) return nullptr;
    Batch* b = full_.front();
    full_.pop_front();
    return b;
  }
  void put_empty(Batch* b) { put(empty_, b, empty_ready_); }
  // Second stage (on an error): the first stage gets no more batches.
  void stop() { raise(stopped_, empty_ready_); }

 private:
  void put(std::deque<Batch*>& queue, Batch* b, std::condition_variable& ready) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue.push_back(b);
    }
    ready.notify_one();
  }
  void raise(bool& flag, std::condition_variable& ready) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      flag = true;
    }
    ready.notify_one();
  }

  std::vector<std::unique_ptr<Batch>> storage_;
  std::mutex mutex_;
  std::condition_variable empty_ready_, full_ready_;
  std::deque<Batch*> empty_, full_;
  bool finished_ = false, stopped_ = false;
};

}  // namespace xtk
