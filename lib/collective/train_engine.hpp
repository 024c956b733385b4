// What the training emulator and the trace replay ask of a backend each
// iteration: compute (a calibrated kernel on a GPU, sleep or a busy loop on a
// CPU) and collectives issued behind it, overlapping, as PyTorch DDP does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collective/collective.hpp"
#include "collective/dtype.hpp"

namespace xtk::collective {

enum class ComputeMode { sleep, busy };  // how a CPU rank spends its compute time

// A gradient bucket: a contiguous slice of the flat gradient buffer of one
// type, all-reduced in place. A replayed call names its collective instead:
// its input at offset_bytes, its output right after it.
struct Bucket {
  std::size_t offset_bytes = 0;
  std::size_t bytes = 0;
  DataType type = DataType::float32;
  std::size_t first_tensor = 0, last_tensor = 0;  // indices into the profile, backward order
  const Collective* collective = nullptr;         // nullptr: the bucket's all-reduce
  Counts counts;                                  // with a collective: its elements per rank
  std::uint32_t root = 0;                         // or the peer of a send or recv: its rank in the group
  std::size_t group = kWholeJob;                  // an index into TrainPlan::groups
  std::size_t count() const { return bytes / data_type_size(type); }
  static constexpr std::size_t kWholeJob = SIZE_MAX;
};

struct TrainPlan {
  std::vector<Bucket> buckets;  // in the order they become ready in the backward pass
  std::size_t gradient_bytes = 0;
  // A replay's sub-groups (tensor or pipeline parallel), each its job ranks in
  // group-rank order: the same list, in the same order, on every rank, so that
  // the backends can create their communicators together.
  std::vector<std::vector<std::uint32_t>> groups;
};

// One bucket's collective on one of this process's ranks, on this process's
// CLOCK_REALTIME: when the rank's gradients were ready, and when it finished.
struct CallTiming {
  std::size_t local = 0;  // the process's rank (-g), 0 for one rank per process
  std::size_t bucket = 0;
  std::int64_t arrive_ns = 0, end_ns = 0;
};

struct IterationTiming {
  std::int64_t comm_ns = 0;     // time some bucket's all-reduce was running
  std::int64_t exposed_ns = 0;  // communication after the backward compute ended: not overlapped
  std::vector<CallTiming> calls;
};

class TrainEngine {
 public:
  virtual ~TrainEngine() = default;
  // Compute of `ns` nanoseconds after everything issued so far (forward, or the
  // backward slice that fills the next bucket).
  virtual void compute(std::int64_t ns) = 0;
  // The collective of `bucket` as soon as the compute issued so far is done.
  virtual void issue(std::size_t bucket) = 0;
  // Compute issued from now on waits for every collective issued so far (a
  // `wait()` on their work handles in PyTorch).
  virtual void wait_issued() = 0;
  // Waits for everything issued this iteration. Throws CollectiveError after the timeout.
  virtual IterationTiming finish_iteration() = 0;

  // Gradient data of local rank `local`, for the data check after the run.
  virtual void write_gradients(std::size_t local, std::size_t offset, const void* data, std::size_t bytes) = 0;
  virtual void read_gradients(std::size_t local, std::size_t offset, void* data, std::size_t bytes) = 0;
};

}  // namespace xtk::collective
