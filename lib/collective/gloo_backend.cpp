#include "collective/gloo_backend.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <future>
#include <map>
#include <tuple>

#include "collective/gloo_call.hpp"
#include "collective/gloo_reduce.hpp"
#include "collective/gloo_store.hpp"
#include "collective/host_train.hpp"
#include "collective/job.hpp"
#include "core/clock.hpp"

namespace xtk::collective {
namespace {

class GlooBackend : public Backend {
 public:
  GlooBackend(const BackendOptions& options, Job& job) : job_(job), options_(options) {
    if (job.ranks_per_process() != 1) {
      throw UsageError("-g: the Gloo backend runs one rank per process; start one process per rank");
    }
    // to_backend_options took ring or bcube only.
    algorithm_ = options.gloo_algorithm == "bcube" ? gloo::AllreduceOptions::Algorithm::BCUBE
                                                   : gloo::AllreduceOptions::Algorithm::RING;
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
      const auto rank = static_cast<int>(job.world().rank), nranks = static_cast<int>(job.nranks());
      context_ = connect_context(rank, nranks, "gloo/");
      lanes_.push_back(context_);
      for (std::uint32_t k = 1; k < options.gloo_connections; ++k) {
        job.progress().set_where(fmt::format("connecting Gloo's connection {} of {}", k + 1, options.gloo_connections));
        lanes_.push_back(connect_context(rank, nranks, fmt::format("gloo/connection/{}/", k)));
      }
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
            {"gloo_algorithm", options_.gloo_algorithm},
            {"gloo_connections", options_.gloo_connections}};
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

  void write(std::size_t /*local*/, bool to_recv, std::size_t offset, const void* data, std::size_t bytes) override {
    std::memcpy((to_recv ? recv_ : send_).data() + offset, data, bytes);
  }

  void poison(std::size_t /*local*/, unsigned char byte) override { std::fill(recv_.begin(), recv_.end(), byte); }

  void read(std::size_t /*local*/, std::size_t offset, void* data, std::size_t bytes) override {
    std::memcpy(data, recv_.data() + offset, bytes);
  }

  TimedRun run(const CollectiveCall& call, int iterations, bool rotate, bool time_each) override {
    const Collective& collective = *call.collective;
    const std::size_t element = data_type_size(call.type);
    const auto rank = static_cast<std::size_t>(job_.world().rank);
    GlooCall c = gloo_call(call.type);
    c.counts = collective.counts(call.count, job_.nranks(), element);
    c.in_place = call.in_place;
    c.root = static_cast<int>(call.root);
    const ReduceFn reduce = collective.reduces() ? gloo_reduce_function(call.type, call.op) : ReduceFn{};
    c.reduce = &reduce;
    const std::size_t span = c.counts.span() * element;
    const std::size_t slices = rotate && span > 0 ? std::max<std::size_t>(1, recv_.size() / span) : 1;
    TimedRun result;
    const std::int64_t start = monotonic_ns();
    if (time_each) result.bounds_ns.assign(1, {realtime_ns()});
    for (int k = 0; k < iterations; ++k) {
      const std::size_t offset = span * (static_cast<std::size_t>(k) % slices);
      char* base = recv_.data() + offset;
      c.send = call.in_place ? base + c.counts.send_in_place * rank * element : send_.data() + offset;
      c.recv = call.in_place ? base + c.counts.recv_in_place * rank * element : base;
      c.tag = tag_++;
      job_.progress().advance();
      const std::int64_t t0 = time_each ? monotonic_ns() : 0;
      call_on_connections(collective, c);
      if (time_each) {
        result.iteration_seconds.push_back(static_cast<double>(monotonic_ns() - t0) / 1e9);
        result.bounds_ns.front().push_back(realtime_ns());
      }
    }
    result.wall_seconds = static_cast<double>(monotonic_ns() - start) / 1e9;
    return result;
  }

  std::unique_ptr<TrainEngine> train_engine(const TrainPlan& plan) override {
    connect_groups(plan.groups);
    return std::make_unique<HostTrainEngine>(
        plan, options_.compute, job_.timeout_ns(), [this](const Bucket& b, char* buffer) {
          const Collective& collective = b.collective != nullptr ? *b.collective : find_collective("all-reduce");
          const ReduceFn reduce = collective.reduces() ? gloo_reduce_function(b.type, ReduceOp::sum) : ReduceFn{};
          GlooCall c = gloo_call(b.type);
          if (b.group != Bucket::kWholeJob) {
            const Group& g = groups_.at(b.group);
            c.context = g.context;
            c.rank = g.rank;
            c.nranks = g.context->size;
          }
          char* data = buffer + b.offset_bytes;
          if (b.collective == nullptr) {
            c.counts = {.send = b.count(), .recv = b.count(), .param = b.count()};
            c.send = data;
            c.recv = data;
            c.in_place = true;
          } else {
            c.counts = b.counts;
            c.send = data;
            c.recv = data + b.counts.send * c.element;
            c.root = static_cast<int>(b.root);
          }
          c.reduce = &reduce;
          // Tags must agree between the ranks that meet in a call: a group's
          // members run its collectives in one order, a pair its sends in one.
          if (collective.point_to_point()) {
            c.tag = peer_tags_[{b.group, collective.name() == "send", b.root}]++;
          } else {
            c.tag = b.group == Bucket::kWholeJob ? tag_++ : groups_.at(b.group).tag++;
          }
          job_.progress().advance();
          call_on_connections(collective, c);
        });
  }

 private:
  // What every call on this rank shares.
  GlooCall gloo_call(DataType type) {
    GlooCall c;
    c.element = data_type_size(type);
    c.rank = static_cast<int>(job_.world().rank);
    c.nranks = static_cast<int>(job_.nranks());
    c.context = context_;
    c.timeout = std::chrono::milliseconds(job_.timeout_ns() / 1'000'000);
    c.all_reduce_algorithm = algorithm_;
    return c;
  }

  // A context of `size` ranks with its own connection to each, met through
  // the control store under `prefix`.
  std::shared_ptr<gloo::rendezvous::Context> connect_context(int rank, int size, const std::string& prefix) {
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(std::chrono::milliseconds(job_.timeout_ns() / 1'000'000));
    ControlStore store(job_, prefix);
    context->connectFullMesh(store, device_);
    return context;
  }

  // A whole-job all-reduce over several connections: one contiguous part per
  // connection, all at once, since every element reduces on its own. Other
  // collectives (and sub-groups) keep to the first connection.
  void call_on_connections(const Collective& collective, const GlooCall& c) {
    const std::size_t count = c.counts.param;
    const std::size_t parts = std::min<std::size_t>(lanes_.size(), count);
    if (parts <= 1 || collective.name() != "all-reduce" || c.context != context_) {
      collective.gloo(c);
      return;
    }
    const auto part = [&](std::size_t k) {
      const std::size_t begin = count * k / parts, end = count * (k + 1) / parts;
      GlooCall p = c;
      p.context = lanes_[k];
      p.counts = {.send = end - begin, .recv = end - begin, .param = end - begin};
      p.send = static_cast<const char*>(c.send) + begin * c.element;
      p.recv = static_cast<char*>(c.recv) + begin * c.element;
      collective.gloo(p);
    };
    std::vector<std::future<void>> others;
    for (std::size_t k = 1; k < parts; ++k) others.push_back(std::async(std::launch::async, part, k));
    std::exception_ptr error;
    try {
      part(0);
    } catch (...) {
      error = std::current_exception();
    }
    for (auto& f : others) {
      try {
        f.get();
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
  }

  // A context for each sub-group this rank is in (none for the others), made
  // in the plan's order on every rank: a member waits in connectFullMesh for
  // the group's other members, who reach it in the same order.
  void connect_groups(const std::vector<std::vector<std::uint32_t>>& groups) {
    groups_.assign(groups.size(), Group{});
    for (std::size_t i = 0; i < groups.size(); ++i) {
      const auto& ranks = groups[i];
      const auto me = std::find(ranks.begin(), ranks.end(), job_.world().rank);
      if (me == ranks.end()) continue;
      Group& g = groups_[i];
      g.rank = static_cast<int>(me - ranks.begin());
      job_.progress().set_where(fmt::format("connecting Gloo's process group of ranks {}", fmt::join(ranks, ", ")));
      try {
        g.context = connect_context(g.rank, static_cast<int>(ranks.size()),
                                    fmt::format("gloo/group/{}/", fmt::join(ranks, ".")));
      } catch (const CollectiveError&) {
        throw;
      } catch (const std::exception& e) {
        throw CollectiveError(
            fmt::format("Gloo could not connect the process group of ranks {}: {}", fmt::join(ranks, ", "), e.what()));
      }
    }
  }

  struct Group {
    std::shared_ptr<gloo::rendezvous::Context> context;  // null where this rank is not a member
    int rank = 0;                                        // this rank's in the group
    std::uint32_t tag = 0;
  };

  Job& job_;
  BackendOptions options_;
  gloo::AllreduceOptions::Algorithm algorithm_ = gloo::AllreduceOptions::Algorithm::RING;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::vector<std::shared_ptr<gloo::Context>> lanes_;  // one per connection; the first is context_
  std::string address_;
  std::vector<char> send_, recv_;
  std::uint32_t tag_ = 0;
  std::vector<Group> groups_;
  std::map<std::tuple<std::size_t, bool, std::uint32_t>, std::uint32_t> peer_tags_;  // (group, sends, peer)
};

}  // namespace

std::unique_ptr<Backend> make_gloo_backend(const BackendOptions& options, Job& job) {
  return std::make_unique<GlooBackend>(options, job);
}

}  // namespace xtk::collective
