// The NCCL side shared by the sweep and the training engine: this process's
// GPUs (local_rank x g ... + g - 1), one communicator and one stream per GPU,
// and the bounded wait: streams are polled with ncclCommGetAsyncError, and a
// collective that does not finish in time aborts the communicators
// (ncclCommAbort) instead of hanging.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collective/dtype.hpp"

namespace xtk::collective {

class Job;

// Throws Error naming `what` and CUDA's message.
void check_cuda(cudaError_t status, const char* what);
// Throws CollectiveError for errors that involve other ranks (system, remote,
// internal), Error for the others.
void check_nccl(ncclResult_t status, const char* what);
ncclDataType_t nccl_type(DataType type);
ncclRedOp_t nccl_op(ReduceOp op);
// GPUs this process can see (0 when CUDA finds no driver or device).
int visible_gpus();

// One collective on one GPU (collective.hpp): buffers at their offsets,
// `count` as the library call takes it.
struct NcclCall {
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0, element = 4;  // element: bytes of `type`
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int root = 0, rank = 0, nranks = 1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

struct NcclContext {
  NcclContext(Job& job);  // creates the communicators (every rank must call it)
  ~NcclContext();
  NcclContext(const NcclContext&) = delete;
  NcclContext& operator=(const NcclContext&) = delete;

  // Waits until `streams` are idle; on an NCCL error, or when nothing
  // completed for the job's timeout, aborts the communicators and throws
  // CollectiveError. `milestones` (events in completion order, e.g. one per
  // collective) restart the timeout as each completes, so a long batch of
  // collectives is bounded per collective, not as a whole.
  void wait(const std::vector<cudaStream_t>& streams, const std::string& what,
            const std::vector<cudaEvent_t>& milestones = {});
  void abort();  // ncclCommAbort on every communicator, once (any thread)
  // A communicator for each of a replay's sub-groups (job ranks, in group-rank
  // order), split from the job's: every rank calls it with the same list, and
  // gets nullptr for the groups it is not in. One rank per process.
  void split(const std::vector<std::vector<std::uint32_t>>& groups);

  Job& job;
  std::vector<int> devices;
  std::vector<ncclComm_t> comms;
  std::vector<ncclComm_t> group_comms;  // split()'s, on the process's one GPU
  std::vector<cudaStream_t> streams;
  std::atomic<bool> aborted{false};
};

}  // namespace xtk::collective
