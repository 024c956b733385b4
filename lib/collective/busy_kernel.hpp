// The calibrated compute kernel of the training emulator on GPUs: one block
// per SM doing FMAs for a given number of SM clock cycles, so compute occupies
// the GPU as training kernels do. The engine launches it in short kernels, so
// NCCL's blocks get SMs between them (real overlap); calibration turns
// nanoseconds into cycles.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace xtk::collective {

// Enqueues the kernel on `stream`: `blocks` blocks of 256 threads, each busy
// for `cycles` clock cycles. `sink` is a device float nothing reads.
cudaError_t launch_busy_kernel(cudaStream_t stream, std::int64_t cycles, int blocks, float* sink);

}  // namespace xtk::collective
