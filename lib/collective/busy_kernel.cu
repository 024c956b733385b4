#include "collective/busy_kernel.hpp"

namespace xtk::collective {
namespace {

__global__ void busy(long long cycles, float* sink) {
  const long long start = clock64();
  float x = static_cast<float>(threadIdx.x) * 1e-3f;
  while (clock64() - start < cycles) {
    for (int i = 0; i < 16; ++i) x = fmaf(x, 0.9999f, 1.0f);  // converges to 10000: never the value below
  }
  if (x == -1.0f) *sink = x;  // a use of x, so the loop is not optimised away
}

}  // namespace

cudaError_t launch_busy_kernel(cudaStream_t stream, std::int64_t cycles, int blocks, float* sink) {
  busy<<<blocks, 256, 0, stream>>>(static_cast<long long>(cycles), sink);
  return cudaGetLastError();
}

}  // namespace xtk::collective
