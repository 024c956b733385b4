#include "collective/gloo_backend.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstring>

#include "collective/gloo_reduce.hpp"
#include "collective/gloo_store.hpp"
#include "collective/host_train.hpp"
#include "collective/job.hpp"
#include "core/clock.hpp"
#include "core/units.hpp"

namespace xtk::collective {
namespace {

class GlooBackend : public Backend {
 public:
  GlooBackend(const BackendOptions& options, Job& job) : job_(job), options_(options) {
    if (job.ranks_per_process() != 1) {
      throw UsageError("-g: the Gloo backend runs one rank per process; start one process per rank");
    }
    if (options.gloo_algorithm == "ring") {
      algorithm_ = gloo::AllreduceOptions::Algorithm::RING;
    } else if (options.gloo_algorithm == "bcube") {
      algorithm_ = gloo::AllreduceOptions::Algorithm::BCUBE;
    } else {
      throw UsageError(fmt::format("--gloo-algorithm: '{}' is neither ring nor bcube", options.gloo_algorithm));
    }
    gloo::transport::tcp::attr attr;
    // The address this rank reached rank 0 from is one the other ranks can reach.
    if (!options.gloo_iface.empty()) {
      attr.iface = options.gloo_iface;
    } else {
      attr.hostname = job.control().local_ip();
    }
    job.progress().set_where("connecting Gloo's full mesh");
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      context_ = std::make_shared<gloo::rendezvous::Context>(static_cast<int>(job.world().rank),
                                                             static_cast<int>(job.nranks()));
      context_->setTimeout(std::chrono::milliseconds(job.timeout_ns() / 1'000'000));
      ControlStore store(job, "gloo/");
      context_->connectFullMesh(store, device_);
    } catch (const CollectiveError&) {
      throw;
    } catch (const std::exception& e) {
      throw CollectiveError(fmt::format("Gloo could not connect the ranks: {}", e.what()));
    }
    address_ = device_->str();
  }

  std::string name() const override { return "gloo"; }

  nlohmann::json versions() const override {
    return {{"gloo", fmt::format("{}.{}.{}", GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH)},
            {"gloo_transport", "tcp"},
            {"gloo_algorithm", options_.gloo_algorithm}};
  }

  std::vector<DeviceInfo> local_devices() const override {
    DeviceInfo d;
    d.rank = job_.first_rank();
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    d.host = host;
    d.pid = static_cast<int>(getpid());
    d.name = fmt::format("cpu (gloo {})", address_);
    return {d};
  }

  void allocate(std::size_t bytes) override {
    send_.assign(bytes, 0);
    recv_.assign(bytes, 0);
  }

  void write_input(std::size_t /*local*/, const void* data, std::size_t bytes, bool in_place) override {
    std::memcpy(in_place ? recv_.data() : send_.data(), data, bytes);
  }

  void read_output(std::size_t /*local*/, void* data, std::size_t bytes) override {
    std::memcpy(data, recv_.data(), bytes);
  }

  TimedRun run(const AllReduceCall& call, int iterations, bool rotate) override {
    const std::size_t bytes = call.count * data_type_size(call.type);
    const std::size_t slices = rotate && bytes > 0 ? std::max<std::size_t>(1, recv_.size() / bytes) : 1;
    const auto reduce = gloo_reduce_function(call.type, call.op);
    TimedRun result;
    result.iteration_seconds.reserve(static_cast<std::size_t>(iterations));
    const std::int64_t start = monotonic_ns();
    for (int k = 0; k < iterations; ++k) {
      const std::size_t offset = bytes * (static_cast<std::size_t>(k) % slices);
      const std::int64_t t0 = monotonic_ns();
      all_reduce(call.in_place ? nullptr : send_.data() + offset, recv_.data() + offset, call.count, call.type, reduce);
      result.iteration_seconds.push_back(static_cast<double>(monotonic_ns() - t0) / 1e9);
    }
    result.wall_seconds = static_cast<double>(monotonic_ns() - start) / 1e9;
    return result;
  }

  std::unique_ptr<TrainEngine> train_engine(const TrainPlan& plan) override {
    return std::make_unique<HostTrainEngine>(
        plan, options_.compute, job_.timeout_ns(), [this](void* data, std::size_t count, DataType type) {
          all_reduce(nullptr, static_cast<char*>(data), count, type, gloo_reduce_function(type, ReduceOp::sum));
        });
  }

 private:
  // One all-reduce: in place when `input` is null. Gloo's errors (a peer's
  // connection lost, its timeout) become CollectiveError.
  void all_reduce(const char* input, char* output, std::size_t count, DataType type, const ReduceFn& reduce) {
    job_.progress().advance();
    gloo::AllreduceOptions opts(context_);
    opts.setAlgorithm(algorithm_);
    opts.setTimeout(std::chrono::milliseconds(job_.timeout_ns() / 1'000'000));
    opts.setTag(tag_++);
    opts.setReduceFunction(reduce);
    const std::size_t element = data_type_size(type);
    // Gloo only needs the element size; any type of that size carries the bytes.
    const auto bind = [&](auto* typed_output, const auto* typed_input) {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(typed_output)>>;
      if (typed_input != nullptr) opts.setInput(const_cast<T*>(typed_input), count);  // Gloo does not write it
      opts.setOutput(typed_output, count);
    };
    switch (element) {
      case 1:
        bind(reinterpret_cast<std::uint8_t*>(output), reinterpret_cast<const std::uint8_t*>(input));
        break;
      case 2:
        bind(reinterpret_cast<std::uint16_t*>(output), reinterpret_cast<const std::uint16_t*>(input));
        break;
      case 4:
        bind(reinterpret_cast<std::uint32_t*>(output), reinterpret_cast<const std::uint32_t*>(input));
        break;
      default:
        bind(reinterpret_cast<std::uint64_t*>(output), reinterpret_cast<const std::uint64_t*>(input));
        break;
    }
    try {
      gloo::allreduce(opts);
    } catch (const std::exception& e) {
      throw CollectiveError(fmt::format("Gloo all-reduce of {} failed: {}",
                                        format_bytes(static_cast<double>(count * element)), e.what()));
    }
  }

  Job& job_;
  BackendOptions options_;
  gloo::AllreduceOptions::Algorithm algorithm_ = gloo::AllreduceOptions::Algorithm::RING;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::string address_;
  std::vector<char> send_, recv_;
  std::uint32_t tag_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_gloo_backend(const BackendOptions& options, Job& job) {
  return std::make_unique<GlooBackend>(options, job);
}

}  // namespace xtk::collective
