// One process's part in a job: the rendezvous (rank 0 serves it, every rank
// connects), barriers and gathers over it, and the way out when anything goes
// wrong anywhere - every rank prints the same named cause and exits 1, never
// hangs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collective/control_client.hpp"
#include "collective/control_server.hpp"
#include "collective/progress.hpp"
#include "collective/world.hpp"
#include "core/error.hpp"

namespace xtk::collective {

// A wait on other ranks that ended in vain (timeout, a peer's connection
// lost): rank 0 finds out which rank is to blame before everyone exits.
class CollectiveError : public Error {
 public:
  using Error::Error;
};

class Job {
 public:
  // Joins the job (rank 0 first starts the rendezvous). `ranks_per_process`
  // is -g: the job's collective ranks are world_size x ranks_per_process.
  // `timeout_ns` bounds every wait: joining, barriers, gathers, collectives.
  Job(World world, std::uint32_t ranks_per_process, std::int64_t timeout_ns, std::string tool);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  const World& world() const { return world_; }
  bool is_root() const { return world_.rank == 0; }
  std::uint32_t nranks() const { return world_.world_size * ranks_per_process_; }
  std::uint32_t first_rank() const { return world_.rank * ranks_per_process_; }
  std::uint32_t ranks_per_process() const { return ranks_per_process_; }
  std::int64_t timeout_ns() const { return timeout_ns_; }
  std::int64_t deadline() const;  // now + timeout, CLOCK_MONOTONIC
  ControlClient& control() { return *client_; }
  // This process's clock offset from rank 0's, measured on joining: arrival
  // times in the collectives file are on rank 0's clock.
  const ClockOffset& clock() const { return clock_; }
  Progress& progress() { return progress_; }

  // Every process waits here; throws CollectiveError after the timeout.
  void barrier(const std::string& what);
  // Rank 0 receives every process's `value`, in rank order; the others get nothing.
  std::vector<std::string> gather(const std::string& what, const std::string& value);
  // Every process receives rank 0's `value`.
  std::string broadcast(const std::string& what, const std::string& value);

  // Run before exiting on an abort (e.g. ncclCommAbort), bounded by an alarm.
  void on_abort(std::function<void()> hook) {
    std::lock_guard lock(hook_mutex_);
    abort_hook_ = std::move(hook);
  }
  // Reports this rank's failure to rank 0 and exits with the job's verdict (any thread).
  [[noreturn]] void fail(FailKind kind, const std::string& reason);
  // The end of a run: a last barrier, then bye, so closing is not a failure.
  void finish();

 private:
  [[noreturn]] void die(const std::string& message);
  World world_;
  std::uint32_t ranks_per_process_;
  std::int64_t timeout_ns_;
  std::string tool_;
  Progress progress_;
  std::unique_ptr<ControlServer> server_;
  std::unique_ptr<ControlClient> client_;
  ClockOffset clock_;
  std::mutex hook_mutex_;  // the hook is set by the main thread, run by whichever thread aborts
  std::function<void()> abort_hook_;
  std::uint64_t sequence_ = 0;  // names barriers and gathers identically on every rank
};

}  // namespace xtk::collective
