// All-to-all (nccl-tests' alltoall_perf): rank r's input holds n pieces, piece
// s for rank s; rank s's output holds every rank's piece for it, in rank
// order. algbw counts the whole buffer; busbw = algbw x (n-1)/n.
#include "collective/collective.hpp"
#ifdef XTK_HAVE_NCCL
#include "collective/nccl_context.hpp"
#endif
#ifdef XTK_HAVE_GLOO
#include <gloo/alltoall.h>

#include "collective/gloo_call.hpp"
#endif

namespace xtk::collective {
namespace {

class AllToAll final : public Collective {
 public:
  std::string_view name() const override { return "all-to-all"; }
  Counts counts(std::size_t count, std::uint32_t nranks, std::size_t element) const override {
    const std::size_t piece = aligned_share(count, nranks, element);
    return {.send = piece * nranks, .recv = piece * nranks, .param = piece};
  }
  std::size_t algbw_elements(const Counts& c, std::uint32_t nranks) const override { return c.param * nranks; }
  double bus_factor(std::uint32_t nranks) const override { return (nranks - 1.0) / nranks; }
  // One buffer is overwritten while it is sent (xtk found 0.2-20 % of the
  // elements wrong on 2 H100s): timed in place as nccl-tests does, not checked.
  bool in_place_checked() const override { return false; }
  std::string_view bus_factor_formula() const override { return "(n-1)/n"; }
  std::vector<Expected> expected(const Counts& c, std::uint32_t rank, std::uint32_t nranks,
                                 std::uint32_t /*root*/) const override {
    std::vector<Expected> out;
    for (std::uint32_t from = 0; from < nranks; ++from) {
      out.push_back({.at = from * c.param, .count = c.param, .from_rank = from, .first = rank * c.param});
    }
    return out;
  }
#ifdef XTK_HAVE_NCCL
  void nccl(const NcclCall& c) const override {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    check_nccl(ncclAlltoAll(c.send, c.recv, c.count, c.type, c.comm, c.stream), "ncclAlltoAll");
#else
    // Before NCCL 2.28: one send and one receive per peer, grouped.
    const std::size_t piece = c.count * c.element;
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int peer = 0; peer < c.nranks; ++peer) {
      check_nccl(ncclSend(static_cast<const char*>(c.send) + peer * piece, c.count, c.type, peer, c.comm, c.stream),
                 "ncclSend");
      check_nccl(ncclRecv(static_cast<char*>(c.recv) + peer * piece, c.count, c.type, peer, c.comm, c.stream),
                 "ncclRecv");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd (all-to-all)");
#endif
  }
#endif
#ifdef XTK_HAVE_GLOO
  void gloo(const GlooCall& c) const override {
    run_gloo_options<gloo::AlltoallOptions>(*this, c, [&](auto& o, auto t) {
      using T = decltype(t);
      o.setInput(input_pointer<T>(c.send), c.counts.send);
      o.setOutput(static_cast<T*>(c.recv), c.counts.recv);
      gloo::alltoall(o);
    });
  }
#endif
};

}  // namespace

const Collective& all_to_all() {
  static const AllToAll c;
  return c;
}

}  // namespace xtk::collective
