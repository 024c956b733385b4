// All-gather (nccl-tests' all_gather_perf): each rank gives size/n elements
// and every rank ends with all n pieces in rank order. algbw counts the whole
// output; busbw = algbw x (n-1)/n, the share each rank receives from others.
#include "collective/collective.hpp"
#ifdef XTK_HAVE_NCCL
#include "collective/nccl_context.hpp"
#endif
#ifdef XTK_HAVE_GLOO
#include <gloo/allgather.h>

#include "collective/gloo_call.hpp"
#endif

namespace xtk::collective {
namespace {

class AllGather final : public Collective {
 public:
  std::string_view name() const override { return "all-gather"; }
  Counts counts(std::size_t count, std::uint32_t nranks, std::size_t element) const override {
    const std::size_t piece = aligned_share(count, nranks, element);
    return {.send = piece, .recv = piece * nranks, .param = piece, .send_in_place = piece, .recv_in_place = 0};
  }
  std::size_t algbw_elements(const Counts& c, std::uint32_t nranks) const override { return c.param * nranks; }
  double bus_factor(std::uint32_t nranks) const override { return (nranks - 1.0) / nranks; }
  std::string_view bus_factor_formula() const override { return "(n-1)/n"; }
  std::vector<Expected> expected(const Counts& c, std::uint32_t /*rank*/, std::uint32_t nranks,
                                 std::uint32_t /*root*/) const override {
    std::vector<Expected> out;
    for (std::uint32_t from = 0; from < nranks; ++from) {
      out.push_back({.at = from * c.param, .count = c.param, .from_rank = from, .first = 0});
    }
    return out;
  }
#ifdef XTK_HAVE_NCCL
  void nccl(const NcclCall& c) const override {
    check_nccl(ncclAllGather(c.send, c.recv, c.count, c.type, c.comm, c.stream), "ncclAllGather");
  }
#endif
#ifdef XTK_HAVE_GLOO
  void gloo(const GlooCall& c) const override {
    run_gloo_options<gloo::AllgatherOptions>(*this, c, [&](auto& o, auto t) {
      using T = decltype(t);
      // In place, this rank's piece already sits at its place in the output.
      if (!c.in_place) o.setInput(input_pointer<T>(c.send), c.counts.send);
      o.setOutput(static_cast<T*>(c.recv), c.counts.recv);
      gloo::allgather(o);
    });
  }
#endif
};

}  // namespace

const Collective& all_gather() {
  static const AllGather c;
  return c;
}

}  // namespace xtk::collective
