// All-reduce (nccl-tests' all_reduce_perf): every rank ends with the
// reduction of all ranks' inputs. busbw = algbw x 2(n-1)/n: in a ring each
// rank sends and receives 2(n-1)/n of the data.
#include "collective/collective.hpp"
#include "collective/sizes.hpp"
#ifdef XTK_HAVE_NCCL
#include "collective/nccl_context.hpp"
#endif
#ifdef XTK_HAVE_GLOO
#include <gloo/allreduce.h>

#include "collective/gloo_call.hpp"
#endif

namespace xtk::collective {
namespace {

class AllReduce final : public Collective {
 public:
  std::string_view name() const override { return "all-reduce"; }
  bool reduces() const override { return true; }
  Counts counts(std::size_t count, std::uint32_t /*nranks*/, std::size_t /*element*/) const override {
    return {.send = count, .recv = count, .param = count};
  }
  std::size_t algbw_elements(const Counts& c, std::uint32_t /*nranks*/) const override { return c.param; }
  double bus_factor(std::uint32_t nranks) const override { return all_reduce_bus_factor(nranks); }
  std::string_view bus_factor_formula() const override { return "2(n-1)/n"; }
  std::vector<Expected> expected(const Counts& c, std::uint32_t /*rank*/, std::uint32_t /*nranks*/,
                                 std::uint32_t /*root*/) const override {
    return {{.at = 0, .count = c.recv, .from_rank = std::nullopt, .first = 0}};
  }
#ifdef XTK_HAVE_NCCL
  void nccl(const NcclCall& c) const override {
    check_nccl(ncclAllReduce(c.send, c.recv, c.count, c.type, c.op, c.comm, c.stream), "ncclAllReduce");
  }
#endif
#ifdef XTK_HAVE_GLOO
  void gloo(const GlooCall& c) const override {
    run_gloo_options<gloo::AllreduceOptions>(*this, c, [&](auto& o, auto t) {
      using T = decltype(t);
      o.setAlgorithm(c.all_reduce_algorithm);
      if (!c.in_place) o.setInput(input_pointer<T>(c.send), c.counts.param);
      o.setOutput(static_cast<T*>(c.recv), c.counts.param);
      o.setReduceFunction(*c.reduce);
      gloo::allreduce(o);
    });
  }
#endif
};

}  // namespace

const Collective& all_reduce() {
  static const AllReduce c;
  return c;
}

}  // namespace xtk::collective
