// Reduce (nccl-tests' reduce_perf): the reduction of all ranks' inputs, at
// the root only (the others' outputs are not checked). busbw = algbw.
#include "collective/collective.hpp"
#ifdef XTK_HAVE_NCCL
#include "collective/nccl_context.hpp"
#endif
#ifdef XTK_HAVE_GLOO
#include <gloo/reduce.h>

#include "collective/gloo_call.hpp"
#endif

namespace xtk::collective {
namespace {

class Reduce final : public Collective {
 public:
  std::string_view name() const override { return "reduce"; }
  bool reduces() const override { return true; }
  bool rooted() const override { return true; }
  Counts counts(std::size_t count, std::uint32_t /*nranks*/, std::size_t /*element*/) const override {
    return {.send = count, .recv = count, .param = count};
  }
  std::size_t algbw_elements(const Counts& c, std::uint32_t /*nranks*/) const override { return c.param; }
  double bus_factor(std::uint32_t /*nranks*/) const override { return 1.0; }
  std::string_view bus_factor_formula() const override { return "1"; }
  std::vector<Expected> expected(const Counts& c, std::uint32_t rank, std::uint32_t /*nranks*/,
                                 std::uint32_t root) const override {
    if (rank != root) return {};
    return {{.at = 0, .count = c.recv, .from_rank = std::nullopt, .first = 0}};
  }
#ifdef XTK_HAVE_NCCL
  void nccl(const NcclCall& c) const override {
    check_nccl(ncclReduce(c.send, c.recv, c.count, c.type, c.op, c.root, c.comm, c.stream), "ncclReduce");
  }
#endif
#ifdef XTK_HAVE_GLOO
  void gloo(const GlooCall& c) const override {
    run_gloo_options<gloo::ReduceOptions>(*this, c, [&](auto& o, auto t) {
      using T = decltype(t);
      o.setRoot(c.root);
      if (!c.in_place) o.setInput(input_pointer<T>(c.send), c.counts.param);
      o.setOutput(static_cast<T*>(c.recv), c.counts.param);
      o.setReduceFunction(*c.reduce);
      gloo::reduce(o);
    });
  }
#endif
};

}  // namespace

const Collective& reduce() {
  static const Reduce c;
  return c;
}

}  // namespace xtk::collective
