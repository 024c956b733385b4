#include "collective/host_train.hpp"

#include <time.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "collective/job.hpp"
#include "core/clock.hpp"

namespace xtk::collective {

void host_compute(ComputeMode mode, std::int64_t ns) {
  if (ns <= 0) return;
  const std::int64_t until = monotonic_ns() + ns;
  if (mode == ComputeMode::busy) {
    while (monotonic_ns() < until) {
    }
    return;
  }
  const timespec t = to_timespec(until);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) != 0) {
  }
}

HostTrainEngine::HostTrainEngine(TrainPlan plan, ComputeMode mode, std::int64_t timeout_ns, CallFn call)
    : plan_(std::move(plan)),
      mode_(mode),
      timeout_ns_(timeout_ns),
      call_(std::move(call)),
      gradients_(plan_.gradient_bytes),
      thread_([this] { comm_loop(); }) {}

HostTrainEngine::~HostTrainEngine() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void HostTrainEngine::compute(std::int64_t ns) { host_compute(mode_, ns); }

void HostTrainEngine::issue(std::size_t bucket) {
  {
    std::lock_guard lock(mutex_);
    calls_.push_back(CallTiming{0, bucket, realtime_ns(), 0});
    queue_.push_back(bucket);
    ++pending_;
  }
  changed_.notify_all();
}

void HostTrainEngine::wait_issued() {
  std::unique_lock lock(mutex_);
  // Gloo's own timeout fires first per call; this bounds the whole queue.
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns_) +
                     std::chrono::nanoseconds(timeout_ns_) * static_cast<std::int64_t>(queue_.size());
  changed_.wait_until(lock, until, [&] { return pending_ == 0 || error_ != nullptr; });
  if (error_) std::rethrow_exception(error_);
  if (pending_ != 0) {
    throw CollectiveError(
        fmt::format("{} collective(s) still running after {:.0f} s", pending_, static_cast<double>(timeout_ns_) / 1e9));
  }
}

IterationTiming HostTrainEngine::finish_iteration() {
  const std::int64_t backward_end = monotonic_ns();
  wait_issued();
  std::lock_guard lock(mutex_);
  IterationTiming t;
  t.comm_ns = comm_ns_;
  t.exposed_ns = std::max<std::int64_t>(0, last_end_ns_ - backward_end);
  t.calls = std::move(calls_);
  calls_.clear();
  comm_ns_ = 0;
  return t;
}

void HostTrainEngine::write_gradients(std::size_t /*local*/, std::size_t offset, const void* data, std::size_t bytes) {
  std::memcpy(gradients_.data() + offset, data, bytes);
}

void HostTrainEngine::read_gradients(std::size_t /*local*/, std::size_t offset, void* data, std::size_t bytes) {
  std::memcpy(data, gradients_.data() + offset, bytes);
}

void HostTrainEngine::comm_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const std::size_t index = queue_.front();
    queue_.pop_front();
    const Bucket& bucket = plan_.buckets[index];
    lock.unlock();
    const std::int64_t start = monotonic_ns();
    std::exception_ptr error;
    try {
      call_(bucket, gradients_.data());
    } catch (...) {
      error = std::current_exception();
    }
    const std::int64_t end = monotonic_ns(), end_realtime = realtime_ns();
    lock.lock();
    for (auto& call : calls_) {
      if (call.bucket == index && call.end_ns == 0) {
        call.end_ns = end_realtime;
        break;
      }
    }
    comm_ns_ += end - start;
    last_end_ns_ = end;
    --pending_;
    if (error && !error_) error_ = error;
    changed_.notify_all();
  }
}

}  // namespace xtk::collective
