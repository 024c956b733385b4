// Compiled only when CMake found CUDA and NCCL; the guard lets tools that read
// every source (clang-tidy without a compile command) skip it elsewhere.
#ifdef XTK_HAVE_NCCL
#include "collective/nccl_backend.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "collective/job.hpp"
#include "collective/nccl_context.hpp"
#include "collective/nccl_train.hpp"
#include "core/clock.hpp"

namespace xtk::collective {
namespace {

std::string version_text(int code) {  // 22809 -> 2.28.9; CUDA's 13000 -> 13.0
  return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
}

class NcclBackend : public Backend {
 public:
  explicit NcclBackend(Job& job) : context_(job) {
    NcclContext* context = &context_;
    job.on_abort([context] { context->abort(); });
  }

  ~NcclBackend() override {
    context_.job.on_abort(nullptr);  // the context goes with this object
    for (std::size_t i = 0; i < send_.size(); ++i) {
      cudaSetDevice(context_.devices[i]);
      cudaFree(send_[i]);
      cudaFree(recv_[i]);
    }
  }

  std::string name() const override { return "nccl"; }

  nlohmann::json versions() const override {
    int nccl = 0, runtime = 0, driver = 0;
    ncclGetVersion(&nccl);
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    return {{"nccl", version_text(nccl)},
            {"nccl_headers", fmt::format("{}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)},
            {"cuda_runtime", fmt::format("{}.{}", runtime / 1000, runtime % 1000 / 10)},
            {"cuda_driver", fmt::format("{}.{}", driver / 1000, driver % 1000 / 10)}};
  }

  std::vector<DeviceInfo> local_devices() const override {
    std::vector<DeviceInfo> out;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    for (std::size_t i = 0; i < context_.devices.size(); ++i) {
      cudaDeviceProp prop{};
      cudaGetDeviceProperties(&prop, context_.devices[i]);
      DeviceInfo d;
      d.rank = context_.job.first_rank() + static_cast<std::uint32_t>(i);
      d.host = host;
      d.pid = static_cast<int>(getpid());
      d.device = context_.devices[i];
      d.bus_id = fmt::format("{:04x}:{:02x}:{:02x}", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
      d.name = prop.name;
      out.push_back(d);
    }
    return out;
  }

  void allocate(std::size_t bytes) override {
    capacity_ = bytes;
    for (std::size_t i = 0; i < context_.devices.size(); ++i) {
      check_cuda(cudaSetDevice(context_.devices[i]), "cudaSetDevice");
      void* send = nullptr;
      void* recv = nullptr;
      check_cuda(cudaMalloc(&send, std::max<std::size_t>(bytes, 1)), "cudaMalloc (send buffer)");
      check_cuda(cudaMalloc(&recv, std::max<std::size_t>(bytes, 1)), "cudaMalloc (receive buffer)");
      send_.push_back(static_cast<char*>(send));
      recv_.push_back(static_cast<char*>(recv));
    }
  }

  void write(std::size_t local, bool to_recv, std::size_t offset, const void* data, std::size_t bytes) override {
    check_cuda(cudaSetDevice(context_.devices[local]), "cudaSetDevice");
    // On the NCCL stream, so the next collective is ordered after the copy (a plain
    // cudaMemcpy from pageable memory may return before its DMA is done).
    check_cuda(cudaMemcpyAsync((to_recv ? recv_ : send_)[local] + offset, data, bytes, cudaMemcpyHostToDevice,
                               context_.streams[local]),
               "cudaMemcpyAsync (input)");
  }

  void poison(std::size_t local, unsigned char byte) override {
    check_cuda(cudaSetDevice(context_.devices[local]), "cudaSetDevice");
    check_cuda(cudaMemsetAsync(recv_[local], byte, capacity_, context_.streams[local]), "cudaMemsetAsync");
  }

  void read(std::size_t local, std::size_t offset, void* data, std::size_t bytes) override {
    check_cuda(cudaSetDevice(context_.devices[local]), "cudaSetDevice");
    check_cuda(cudaMemcpyAsync(data, recv_[local] + offset, bytes, cudaMemcpyDeviceToHost, context_.streams[local]),
               "cudaMemcpyAsync (output)");
    check_cuda(cudaStreamSynchronize(context_.streams[local]), "cudaStreamSynchronize");
  }

  TimedRun run(const CollectiveCall& call, int iterations, bool rotate, bool time_each) override {
    const Collective& collective = *call.collective;
    const std::size_t element = data_type_size(call.type);
    const std::uint32_t nranks = context_.job.nranks();
    const Counts counts = collective.counts(call.count, nranks, element);
    const std::size_t span = counts.span() * element;
    const std::size_t slices = rotate && span > 0 ? std::max<std::size_t>(1, capacity_ / span) : 1;
    const std::size_t gpus = context_.devices.size();
    NcclCall c;
    c.count = counts.param;
    c.element = element;
    c.type = nccl_type(call.type);
    c.op = nccl_op(call.op);
    c.root = static_cast<int>(call.root);
    c.nranks = static_cast<int>(nranks);
    // With time_each, events between the iterations time each one without a host sync.
    std::vector<std::vector<cudaEvent_t>> events(gpus);
    const auto record = [&](int k) {
      if (!time_each) return;
      for (std::size_t i = 0; i < gpus; ++i) {
        check_cuda(cudaEventRecord(events[i][static_cast<std::size_t>(k)], context_.streams[i]), "cudaEventRecord");
      }
    };
    if (time_each) {
      for (std::size_t i = 0; i < gpus; ++i) {
        check_cuda(cudaSetDevice(context_.devices[i]), "cudaSetDevice");
        events[i].resize(static_cast<std::size_t>(iterations) + 1);
        for (auto& e : events[i]) check_cuda(cudaEventCreate(&e), "cudaEventCreate");
      }
    }
    TimedRun result;
    const std::int64_t start = monotonic_ns();
    // The GPUs are idle here (every run ends waiting for its streams): the
    // host's clock now is the first event's time, to place the others.
    const std::int64_t origin_realtime = realtime_ns();
    record(0);
    for (int k = 0; k < iterations; ++k) {
      context_.job.progress().advance();
      const std::size_t offset = span * (static_cast<std::size_t>(k) % slices);
      if (gpus > 1) check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (std::size_t i = 0; i < gpus; ++i) {
        const std::size_t rank = context_.job.first_rank() + i;
        char* base = recv_[i] + offset;
        c.send = call.in_place ? base + counts.send_in_place * rank * element : send_[i] + offset;
        c.recv = call.in_place ? base + counts.recv_in_place * rank * element : base;
        c.rank = static_cast<int>(rank);
        c.comm = context_.comms[i];
        c.stream = context_.streams[i];
        collective.nccl(c);
      }
      if (gpus > 1) check_nccl(ncclGroupEnd(), "ncclGroupEnd (one collective on every local GPU)");
      record(k + 1);
    }
    context_.wait(context_.streams, fmt::format("{} of {} B", collective.name(), span),
                  time_each ? events[0] : std::vector<cudaEvent_t>{});
    result.wall_seconds = static_cast<double>(monotonic_ns() - start) / 1e9;
    if (!time_each) return result;
    result.iteration_seconds.assign(static_cast<std::size_t>(iterations), 0.0);
    result.bounds_ns.resize(gpus);
    for (std::size_t i = 0; i < gpus; ++i) {
      result.bounds_ns[i].push_back(origin_realtime);
      for (int k = 0; k < iterations; ++k) {
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, events[i][k], events[i][k + 1]), "cudaEventElapsedTime");
        auto& slot = result.iteration_seconds[static_cast<std::size_t>(k)];
        slot = std::max(slot, static_cast<double>(ms) / 1e3);
        float since = 0;
        check_cuda(cudaEventElapsedTime(&since, events[i][0], events[i][k + 1]), "cudaEventElapsedTime");
        result.bounds_ns[i].push_back(origin_realtime +
                                      static_cast<std::int64_t>(std::llround(static_cast<double>(since) * 1e6)));
      }
      for (auto& e : events[i]) cudaEventDestroy(e);
    }
    return result;
  }

  std::unique_ptr<TrainEngine> train_engine(const TrainPlan& plan) override {
    return make_nccl_train_engine(context_, plan);
  }

 private:
  NcclContext context_;
  std::size_t capacity_ = 0;
  std::vector<char*> send_, recv_;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(const BackendOptions& /*options*/, Job& job) {
  return std::make_unique<NcclBackend>(job);
}

int nccl_visible_gpus() { return visible_gpus(); }

}  // namespace xtk::collective
#endif
