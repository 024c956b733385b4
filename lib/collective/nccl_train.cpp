// Compiled only when CMake found CUDA and NCCL; the guard lets tools that read
// every source (clang-tidy without a compile command) skip it elsewhere.
#ifdef XTK_HAVE_NCCL
#include "collective/nccl_train.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "collective/busy_kernel.hpp"
#include "collective/job.hpp"
#include "core/clock.hpp"

namespace xtk::collective {
namespace {

constexpr std::int64_t kCalibrationCycles = 20'000'000;  // ~10 ms at 2 GHz
// Compute goes out as kernels of about this length, like a layer's kernels in
// training: NCCL's kernel gets SMs at the next kernel boundary. One kernel per
// compute slice kept NCCL's blocks off the SMs for the whole slice (2 H200s:
// ResNet-50's buckets moved at 1.9 GB/s while overlapped).
constexpr double kChunkNs = 100'000;
constexpr int kCalibrationChunks = 50;

struct Gpu {
  int device = 0;
  int sms = 1;
  double cycles_per_ns = 1.0;  // SM clock
  std::int64_t chunk_cycles = 0;
  double chunk_ns = kChunkNs;  // a chunk's time in a stream of chunks, launch gaps included
  cudaStream_t compute = nullptr;
  char* gradients = nullptr;
  float* sink = nullptr;
  // origin: the iteration's first work, when the GPU was idle, so host
  // time then is the GPU's too; arrive (compute stream) and end per bucket.
  cudaEvent_t origin = nullptr, backward_end = nullptr;
  cudaEvent_t joined = nullptr;  // wait_issued: the comm stream so far
  std::vector<cudaEvent_t> arrive, start, end;
};

class NcclTrainEngine : public TrainEngine {
 public:
  NcclTrainEngine(NcclContext& context, TrainPlan plan) : context_(context), plan_(std::move(plan)) {
    if (!plan_.groups.empty()) context_.split(plan_.groups);
    for (int device : context_.devices) {
      Gpu g;
      g.device = device;
      check_cuda(cudaSetDevice(device), "cudaSetDevice");
      check_cuda(cudaDeviceGetAttribute(&g.sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
      check_cuda(cudaStreamCreateWithFlags(&g.compute, cudaStreamNonBlocking), "cudaStreamCreate");
      void* memory = nullptr;
      check_cuda(cudaMalloc(&memory, std::max<std::size_t>(plan_.gradient_bytes, 1)), "cudaMalloc (gradients)");
      g.gradients = static_cast<char*>(memory);
      check_cuda(cudaMemset(g.gradients, 0, plan_.gradient_bytes), "cudaMemset (gradients)");
      check_cuda(cudaMalloc(&memory, sizeof(float)), "cudaMalloc");
      g.sink = static_cast<float*>(memory);
      check_cuda(cudaEventCreate(&g.origin), "cudaEventCreate");
      check_cuda(cudaEventCreate(&g.backward_end), "cudaEventCreate");
      check_cuda(cudaEventCreateWithFlags(&g.joined, cudaEventDisableTiming), "cudaEventCreate");
      for (auto* events : {&g.arrive, &g.start, &g.end}) {
        events->resize(plan_.buckets.size());
        for (auto& e : *events) check_cuda(cudaEventCreate(&e), "cudaEventCreate");
      }
      calibrate(g);
      gpus_.push_back(g);
    }
  }

  ~NcclTrainEngine() override {
    for (auto& g : gpus_) {
      cudaSetDevice(g.device);
      cudaStreamSynchronize(g.compute);
      cudaStreamDestroy(g.compute);
      cudaFree(g.gradients);
      cudaFree(g.sink);
      cudaEventDestroy(g.origin);
      cudaEventDestroy(g.backward_end);
      cudaEventDestroy(g.joined);
      for (const auto* events : {&g.arrive, &g.start, &g.end}) {
        for (auto e : *events) cudaEventDestroy(e);
      }
    }
  }

  void compute(std::int64_t ns) override {
    if (ns <= 0) return;
    mark_origin();
    // The GPUs' chunks interleaved: a full launch queue on one GPU (about a
    // thousand kernels) blocks the host, and must not hold back the others.
    std::vector<std::int64_t> chunks;
    std::int64_t most = 0;
    for (const auto& g : gpus_) {
      chunks.push_back(static_cast<std::int64_t>(static_cast<double>(ns) / g.chunk_ns));
      most = std::max(most, chunks.back());
    }
    for (std::int64_t k = 0; k <= most; ++k) {
      for (std::size_t i = 0; i < gpus_.size(); ++i) {
        const auto& g = gpus_[i];
        std::int64_t cycles = g.chunk_cycles;
        if (k == chunks[i]) {  // the rest, shorter than a chunk
          const double rest_ns = static_cast<double>(ns) - static_cast<double>(chunks[i]) * g.chunk_ns;
          cycles = static_cast<std::int64_t>(std::llround(rest_ns * g.cycles_per_ns));
        }
        if (k > chunks[i] || cycles <= 0) continue;
        check_cuda(cudaSetDevice(g.device), "cudaSetDevice");
        check_cuda(launch_busy_kernel(g.compute, cycles, g.sms, g.sink), "the compute kernel");
      }
    }
  }

  void issue(std::size_t bucket) override {
    const Bucket& b = plan_.buckets[bucket];
    mark_origin();
    issued_.push_back(bucket);
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      auto& g = gpus_[i];
      check_cuda(cudaSetDevice(g.device), "cudaSetDevice");
      check_cuda(cudaEventRecord(g.arrive[bucket], g.compute), "cudaEventRecord");
      check_cuda(cudaStreamWaitEvent(context_.streams[i], g.arrive[bucket], 0), "cudaStreamWaitEvent");
      check_cuda(cudaEventRecord(g.start[bucket], context_.streams[i]), "cudaEventRecord");
    }
    context_.job.progress().advance();
    if (gpus_.size() > 1) check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      char* data = gpus_[i].gradients + b.offset_bytes;
      if (b.collective == nullptr) {
        check_nccl(
            ncclAllReduce(data, data, b.count(), nccl_type(b.type), ncclSum, context_.comms[i], context_.streams[i]),
            "ncclAllReduce");
        continue;
      }
      NcclCall c;
      c.element = data_type_size(b.type);
      c.send = data;
      c.recv = data + b.counts.send * c.element;
      c.count = b.counts.param;
      c.type = nccl_type(b.type);
      c.root = static_cast<int>(b.root);
      c.rank = static_cast<int>(context_.job.first_rank() + i);
      c.nranks = static_cast<int>(context_.job.nranks());
      c.comm = context_.comms[i];
      if (b.group != Bucket::kWholeJob) {  // one rank per process (NcclContext::split)
        const auto& ranks = plan_.groups[b.group];
        c.rank = static_cast<int>(std::find(ranks.begin(), ranks.end(), context_.job.first_rank()) - ranks.begin());
        c.nranks = static_cast<int>(ranks.size());
        c.comm = context_.group_comms[b.group];
      }
      c.stream = context_.streams[i];
      b.collective->nccl(c);
    }
    if (gpus_.size() > 1) check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      check_cuda(cudaEventRecord(gpus_[i].end[bucket], context_.streams[i]), "cudaEventRecord");
    }
  }

  void wait_issued() override {
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      auto& g = gpus_[i];
      check_cuda(cudaSetDevice(g.device), "cudaSetDevice");
      check_cuda(cudaEventRecord(g.joined, context_.streams[i]), "cudaEventRecord");
      check_cuda(cudaStreamWaitEvent(g.compute, g.joined, 0), "cudaStreamWaitEvent");
    }
  }

  IterationTiming finish_iteration() override {
    std::vector<cudaStream_t> streams = context_.streams;
    for (auto& g : gpus_) {
      check_cuda(cudaSetDevice(g.device), "cudaSetDevice");
      check_cuda(cudaEventRecord(g.backward_end, g.compute), "cudaEventRecord");
      streams.push_back(g.compute);
    }
    context_.wait(streams, "the iteration's bucket all-reduces", gpus_.front().end);
    IterationTiming t;
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      const Gpu& g = gpus_[i];
      const auto at = [&](cudaEvent_t e) {
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, g.origin, e), "cudaEventElapsedTime");
        return origin_realtime_ns_ + static_cast<std::int64_t>(std::llround(static_cast<double>(ms) * 1e6));
      };
      // Only this iteration's calls: a replay issues a different subset of
      // its buckets in each recorded iteration, and an event never recorded
      // has no time.
      double comm_ms = 0;
      for (std::size_t bucket : issued_) {
        t.calls.push_back(CallTiming{i, bucket, at(g.arrive[bucket]), at(g.end[bucket])});
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, g.start[bucket], g.end[bucket]), "cudaEventElapsedTime");
        comm_ms += ms;
      }
      float exposed = 0;
      if (!issued_.empty()) {
        check_cuda(cudaEventElapsedTime(&exposed, g.backward_end, g.end[issued_.back()]), "cudaEventElapsedTime");
      }
      t.comm_ns = std::max(t.comm_ns, static_cast<std::int64_t>(std::llround(comm_ms * 1e6)));
      t.exposed_ns = std::max(t.exposed_ns, static_cast<std::int64_t>(std::llround(std::max(0.0F, exposed) * 1e6)));
    }
    issued_.clear();
    origin_pending_ = true;
    return t;
  }

  void write_gradients(std::size_t local, std::size_t offset, const void* data, std::size_t bytes) override {
    check_cuda(cudaSetDevice(gpus_[local].device), "cudaSetDevice");
    // On the compute stream: the all-reduces that read it wait for that stream.
    check_cuda(
        cudaMemcpyAsync(gpus_[local].gradients + offset, data, bytes, cudaMemcpyHostToDevice, gpus_[local].compute),
        "cudaMemcpyAsync");
  }

  void read_gradients(std::size_t local, std::size_t offset, void* data, std::size_t bytes) override {
    check_cuda(cudaSetDevice(gpus_[local].device), "cudaSetDevice");
    check_cuda(cudaMemcpy(data, gpus_[local].gradients + offset, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

 private:
  void mark_origin() {
    if (!origin_pending_) return;
    origin_pending_ = false;
    origin_realtime_ns_ = realtime_ns();
    for (auto& g : gpus_) {
      check_cuda(cudaSetDevice(g.device), "cudaSetDevice");
      check_cuda(cudaEventRecord(g.origin, g.compute), "cudaEventRecord");
    }
  }

  // The SM clock (cycles per ns) from one long kernel, then what a chunk costs
  // among chunks: each the median of timed runs, after one to warm up.
  static void calibrate(Gpu& g) {
    cudaEvent_t a = nullptr, b = nullptr;
    check_cuda(cudaEventCreate(&a), "cudaEventCreate");
    check_cuda(cudaEventCreate(&b), "cudaEventCreate");
    const auto median_ns = [&](std::int64_t cycles, int kernels) {
      std::vector<double> times;
      for (int trial = 0; trial < 6; ++trial) {
        check_cuda(cudaEventRecord(a, g.compute), "cudaEventRecord");
        for (int k = 0; k < kernels; ++k) {
          check_cuda(launch_busy_kernel(g.compute, cycles, g.sms, g.sink), "the compute kernel");
        }
        check_cuda(cudaEventRecord(b, g.compute), "cudaEventRecord");
        check_cuda(cudaEventSynchronize(b), "cudaEventSynchronize");
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
        if (trial > 0) times.push_back(static_cast<double>(ms) * 1e6);
      }
      std::sort(times.begin(), times.end());
      return times[times.size() / 2];
    };
    const double long_ns = median_ns(kCalibrationCycles, 1);
    if (long_ns > 0) g.cycles_per_ns = static_cast<double>(kCalibrationCycles) / long_ns;
    g.chunk_cycles = std::max<std::int64_t>(1, std::llround(kChunkNs * g.cycles_per_ns));
    const double chunks_ns = median_ns(g.chunk_cycles, kCalibrationChunks);
    if (chunks_ns > 0) g.chunk_ns = chunks_ns / kCalibrationChunks;
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }

  NcclContext& context_;
  TrainPlan plan_;
  std::vector<Gpu> gpus_;
  bool origin_pending_ = true;
  std::int64_t origin_realtime_ns_ = 0;
  std::vector<std::size_t> issued_;  // this iteration's buckets, in order
};

}  // namespace

std::unique_ptr<TrainEngine> make_nccl_train_engine(NcclContext& context, const TrainPlan& plan) {
  return std::make_unique<NcclTrainEngine>(context, plan);
}

}  // namespace xtk::collective
#endif
