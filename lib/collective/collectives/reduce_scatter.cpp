// Reduce-scatter (nccl-tests' reduce_scatter_perf): the reduction of all
// ranks' inputs, split in n pieces, piece r to rank r. algbw counts the whole
// input; busbw = algbw x (n-1)/n. Gloo's collective functions include none.
#include "collective/collective.hpp"
#ifdef XTK_HAVE_NCCL
#include "collective/nccl_context.hpp"
#endif

namespace xtk::collective {
namespace {

class ReduceScatter final : public Collective {
 public:
  std::string_view name() const override { return "reduce-scatter"; }
  bool reduces() const override { return true; }
  Counts counts(std::size_t count, std::uint32_t nranks, std::size_t element) const override {
    const std::size_t piece = aligned_share(count, nranks, element);
    return {.send = piece * nranks, .recv = piece, .param = piece, .send_in_place = 0, .recv_in_place = piece};
  }
  std::size_t algbw_elements(const Counts& c, std::uint32_t nranks) const override { return c.param * nranks; }
  double bus_factor(std::uint32_t nranks) const override { return (nranks - 1.0) / nranks; }
  std::string_view bus_factor_formula() const override { return "(n-1)/n"; }
  std::vector<Expected> expected(const Counts& c, std::uint32_t rank, std::uint32_t /*nranks*/,
                                 std::uint32_t /*root*/) const override {
    return {{.at = 0, .count = c.recv, .from_rank = std::nullopt, .first = rank * c.param}};
  }
  std::string gloo_lacks() const override {
    return "Gloo has no reduce-scatter among its collective functions: use --backend nccl";
  }
#ifdef XTK_HAVE_NCCL
  void nccl(const NcclCall& c) const override {
    check_nccl(ncclReduceScatter(c.send, c.recv, c.count, c.type, c.op, c.comm, c.stream), "ncclReduceScatter");
  }
#endif
};

}  // namespace

const Collective& reduce_scatter() {
  static const ReduceScatter c;
  return c;
}

}  // namespace xtk::collective
