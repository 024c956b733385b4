// The training engine of a CPU backend: compute runs in the calling thread
// (sleep, or a busy loop to load the core), and a communication thread runs
// the collectives one after the other as they are issued, like the comm
// stream of a GPU.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "collective/train_engine.hpp"

namespace xtk::collective {

// Sleeps or spins for `ns` from now.
void host_compute(ComputeMode mode, std::int64_t ns);

class HostTrainEngine : public TrainEngine {
 public:
  // Runs `bucket`'s collective (blocking) on its slice of `buffer`; throws CollectiveError.
  using CallFn = std::function<void(const Bucket& bucket, char* buffer)>;
  HostTrainEngine(TrainPlan plan, ComputeMode mode, std::int64_t timeout_ns, CallFn call);
  ~HostTrainEngine() override;

  void compute(std::int64_t ns) override;
  void issue(std::size_t bucket) override;
  void wait_issued() override;
  IterationTiming finish_iteration() override;
  void write_gradients(std::size_t local, std::size_t offset, const void* data, std::size_t bytes) override;
  void read_gradients(std::size_t local, std::size_t offset, void* data, std::size_t bytes) override;

 private:
  void comm_loop();
  TrainPlan plan_;
  ComputeMode mode_;
  std::int64_t timeout_ns_;
  CallFn call_;
  std::vector<char> gradients_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::size_t> queue_;
  std::size_t pending_ = 0;  // queued or running
  bool stop_ = false;
  std::exception_ptr error_;
  std::int64_t comm_ns_ = 0, last_end_ns_ = 0;
  std::vector<CallTiming> calls_;  // this iteration's, in the order issued
  std::thread thread_;
};

}  // namespace xtk::collective
