// Compiled only when CMake found CUDA and NCCL; the guard lets tools that read
// every source (clang-tidy without a compile command) skip it elsewhere.
#ifdef XTK_HAVE_NCCL
#include "collective/nccl_context.hpp"

#include <sched.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <exception>

#include "collective/job.hpp"
#include "core/clock.hpp"

namespace xtk::collective {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(fmt::format("{}: CUDA error: {}", what, cudaGetErrorString(status)));
}

void check_nccl(ncclResult_t status, const char* what) {
  if (status == ncclSuccess) return;
  const auto message =
      fmt::format("{}: NCCL error: {} ({})", what, ncclGetErrorString(status), ncclGetLastError(nullptr));
  if (status == ncclSystemError || status == ncclRemoteError || status == ncclInternalError) {
    throw CollectiveError(message);
  }
  throw Error(message);
}

ncclDataType_t nccl_type(DataType type) {
  switch (type) {
    case DataType::int8:
      return ncclInt8;
    case DataType::uint8:
      return ncclUint8;
    case DataType::int32:
      return ncclInt32;
    case DataType::uint32:
      return ncclUint32;
    case DataType::int64:
      return ncclInt64;
    case DataType::uint64:
      return ncclUint64;
    case DataType::float16:
      return ncclFloat16;
    case DataType::float32:
      return ncclFloat32;
    case DataType::float64:
      return ncclFloat64;
    case DataType::bfloat16:
      return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::prod:
      return ncclProd;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::avg:
      return ncclAvg;
  }
  return ncclSum;
}

int visible_gpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

NcclContext::NcclContext(Job& job_) : job(job_) {
  const std::uint32_t g = job.ranks_per_process();
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  // GPU = local rank, unless the launcher already bound this process to its own
  // GPUs (srun --gpus-per-task, CUDA_VISIBLE_DEVICES per rank): then those.
  const int first = count == static_cast<int>(g) ? 0 : static_cast<int>(job.world().local_rank * g);
  if (status != cudaSuccess || count < first + static_cast<int>(g)) {
    throw Error(fmt::format("local rank {} needs GPU{} {}{}, but this host shows {} ({})", job.world().local_rank,
                            g > 1 ? "s" : "", first, g > 1 ? fmt::format("-{}", first + static_cast<int>(g) - 1) : "",
                            status == cudaSuccess ? count : 0,
                            status == cudaSuccess ? "check CUDA_VISIBLE_DEVICES and -g" : cudaGetErrorString(status)));
  }
  for (std::uint32_t i = 0; i < g; ++i) {
    devices.push_back(first + static_cast<int>(i));
    check_cuda(cudaSetDevice(devices.back()), "cudaSetDevice");
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    streams.push_back(stream);
  }
  ncclUniqueId id{};
  if (job.is_root()) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  const auto shared = job.broadcast("NCCL's unique id", std::string(id.internal, sizeof id.internal));
  std::memcpy(id.internal, shared.data(), sizeof id.internal);
  job.progress().set_where("creating the NCCL communicators");
  comms.assign(g, nullptr);
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (std::uint32_t i = 0; i < g; ++i) {
    check_cuda(cudaSetDevice(devices[i]), "cudaSetDevice");
    check_nccl(ncclCommInitRank(&comms[i], static_cast<int>(job.nranks()), id, static_cast<int>(job.first_rank() + i)),
               "ncclCommInitRank");
  }
  check_nccl(ncclGroupEnd(), "ncclCommInitRank (group)");
}

void NcclContext::split(const std::vector<std::vector<std::uint32_t>>& groups) {
  if (comms.size() != 1) throw UsageError("-g: process groups other than the whole job need one rank per process");
  check_cuda(cudaSetDevice(devices.front()), "cudaSetDevice");
  const auto rank = job.first_rank();
  for (const auto& ranks : groups) {
    job.progress().set_where(fmt::format("creating the NCCL communicator of ranks {}", fmt::join(ranks, ", ")));
    const bool member = std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
    ncclComm_t comm = nullptr;
    check_nccl(ncclCommSplit(comms.front(), member ? 0 : NCCL_SPLIT_NOCOLOR, static_cast<int>(rank), &comm, nullptr),
               "ncclCommSplit");
    group_comms.push_back(comm);
  }
}

NcclContext::~NcclContext() {
  // Leaving on an error: the peers may be gone, and destroying would wait for them.
  if (std::uncaught_exceptions() > 0) abort();
  if (!aborted && !devices.empty()) {
    cudaSetDevice(devices.front());
    for (auto comm : group_comms) {
      if (comm != nullptr) ncclCommDestroy(comm);
    }
  }
  for (std::size_t i = 0; i < comms.size(); ++i) {
    if (comms[i] == nullptr) continue;
    cudaSetDevice(devices[i]);
    if (!aborted) ncclCommDestroy(comms[i]);
  }
  for (std::size_t i = 0; i < streams.size(); ++i) {
    cudaSetDevice(devices[i]);
    cudaStreamDestroy(streams[i]);
  }
}

void NcclContext::abort() {
  if (aborted.exchange(true)) return;
  for (auto comm : group_comms) {
    if (comm != nullptr) ncclCommAbort(comm);
  }
  for (auto comm : comms) {
    if (comm != nullptr) ncclCommAbort(comm);
  }
}

void NcclContext::wait(const std::vector<cudaStream_t>& to_wait, const std::string& what,
                       const std::vector<cudaEvent_t>& milestones) {
  std::int64_t deadline = job.deadline();
  std::size_t reached = 0;
  std::vector<bool> done(to_wait.size(), false);
  std::size_t remaining = to_wait.size();
  std::vector<ncclComm_t> all_comms = comms;
  for (auto comm : group_comms) {
    if (comm != nullptr) all_comms.push_back(comm);
  }
  while (remaining > 0) {
    bool idle = true;
    for (std::size_t i = 0; i < to_wait.size(); ++i) {
      if (done[i]) continue;
      const cudaError_t status = cudaStreamQuery(to_wait[i]);
      if (status == cudaSuccess) {
        done[i] = true;
        --remaining;
        idle = false;
        continue;
      }
      if (status != cudaErrorNotReady) check_cuda(status, what.c_str());
    }
    for (auto comm : all_comms) {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        const auto message =
            fmt::format("{}: NCCL error: {} ({})", what, ncclGetErrorString(async), ncclGetLastError(comm));
        abort();
        throw CollectiveError(message);
      }
    }
    while (reached < milestones.size() && cudaEventQuery(milestones[reached]) == cudaSuccess) {
      ++reached;
      deadline = job.deadline();
    }
    if (remaining > 0 && monotonic_ns() >= deadline) {
      abort();
      throw CollectiveError(fmt::format("{}: no progress for {:.0f} s: communicators aborted (ncclCommAbort)", what,
                                        static_cast<double>(job.timeout_ns()) / 1e9));
    }
    if (idle) sched_yield();  // leave the core to NCCL's proxy threads
  }
}

}  // namespace xtk::collective
#endif
