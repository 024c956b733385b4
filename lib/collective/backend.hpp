// The interface every collective library sits behind (Gloo on CPU, NCCL on
// GPU), as the sweep and the training emulator use it. A process drives one
// rank, or several with -g (one per GPU): its "local ranks".
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collective/collective.hpp"
#include "collective/dtype.hpp"
#include "collective/train_engine.hpp"

namespace xtk::collective {

class Job;

struct DeviceInfo {
  std::uint32_t rank = 0;  // collective rank
  std::string host;
  int pid = 0;
  int device = -1;     // GPU index on its host; -1 for a CPU rank
  std::string bus_id;  // PCI address of the GPU, e.g. 0000:04:00.0
  std::string name;    // "NVIDIA H100 80GB HBM3", or the CPU rank's transport address
  nlohmann::json to_json() const;
  static DeviceInfo from_json(const nlohmann::json& j);
};

// One collective as the sweep runs it.
struct CollectiveCall {
  const Collective* collective = nullptr;
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  std::size_t count = 0;  // elements of the sweep's size (Collective::counts)
  std::uint32_t root = 0;
  bool in_place = false;
};

struct TimedRun {
  double wall_seconds = 0;                // all iterations, host clock (nccl-tests' time x iterations)
  std::vector<double> iteration_seconds;  // each one (the slowest local rank); empty unless timed each
  // Timed each: per local rank, the CLOCK_REALTIME (this process's) of every
  // iteration's start and of the last one's end (iterations + 1 values).
  std::vector<std::vector<std::int64_t>> bounds_ns;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual nlohmann::json versions() const = 0;                // library versions, for the run's echo
  virtual std::vector<DeviceInfo> local_devices() const = 0;  // one per local rank

  // Send and receive buffers of `bytes` for each local rank.
  virtual void allocate(std::size_t bytes) = 0;
  // Host data into local rank `local`'s send or receive buffer at `offset` bytes.
  virtual void write(std::size_t local, bool to_recv, std::size_t offset, const void* data, std::size_t bytes) = 0;
  // Fills local rank `local`'s receive buffer with `byte`, so a result not written stays wrong.
  virtual void poison(std::size_t local, unsigned char byte) = 0;
  virtual void read(std::size_t local, std::size_t offset, void* data, std::size_t bytes) = 0;
  // `iterations` collectives back to back, waited for. With `rotate`, iteration
  // k uses the k-th slice of the allocation (as nccl-tests does) so small sizes
  // are not served from cache. With `time_each`, every iteration is timed
  // (CUDA events between the calls on GPUs, which cost NCCL a few percent at
  // tens of megabytes; the host clock on CPUs). Throws CollectiveError when
  // they do not finish within the job's timeout, UsageError for a collective
  // the backend lacks.
  virtual TimedRun run(const CollectiveCall& call, int iterations, bool rotate, bool time_each) = 0;

  virtual std::unique_ptr<TrainEngine> train_engine(const TrainPlan& plan) = 0;
};

struct BackendOptions {
  std::string name = "gloo";
  std::string gloo_algorithm = "ring";  // ring or bcube
  std::string gloo_iface;               // GLOO_SOCKET_IFNAME: bind to this interface
  std::uint32_t gloo_connections = 1;   // per pair of ranks; whole-job all-reduces split over them
  ComputeMode compute = ComputeMode::sleep;
};

// The backends compiled into this build ("gloo", "nccl").
std::vector<std::string> available_backends();
// "auto" -> nccl when built and a GPU is visible, else gloo; other names are
// checked against the built backends. Throws UsageError.
std::string resolve_backend_name(const std::string& name);
// Connects this process's rank(s) to the others. Throws UsageError for a
// backend that is not built, Error/CollectiveError when the connection fails.
std::unique_ptr<Backend> make_backend(const BackendOptions& options, Job& job);

}  // namespace xtk::collective
