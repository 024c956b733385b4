// Send/receive around the ring (nccl-tests' sendrecv_perf): rank r sends its
// input to r+1 and receives r-1's. busbw = algbw: each link carries the data once.
#include "collective/collective.hpp"
#ifdef XTK_HAVE_NCCL
#include "collective/nccl_context.hpp"
#endif
#ifdef XTK_HAVE_GLOO
#include <gloo/types.h>

#include "collective/gloo_call.hpp"
#endif

namespace xtk::collective {
namespace {

class SendRecv final : public Collective {
 public:
  std::string_view name() const override { return "send-recv"; }
  Counts counts(std::size_t count, std::uint32_t /*nranks*/, std::size_t /*element*/) const override {
    return {.send = count, .recv = count, .param = count};
  }
  std::size_t algbw_elements(const Counts& c, std::uint32_t /*nranks*/) const override { return c.param; }
  double bus_factor(std::uint32_t /*nranks*/) const override { return 1.0; }
  // One buffer is overwritten while it is sent: timed in place as nccl-tests does, not checked.
  bool in_place_checked() const override { return false; }
  std::string_view bus_factor_formula() const override { return "1"; }
  std::vector<Expected> expected(const Counts& c, std::uint32_t rank, std::uint32_t nranks,
                                 std::uint32_t /*root*/) const override {
    return {{.at = 0, .count = c.recv, .from_rank = (rank + nranks - 1) % nranks, .first = 0}};
  }
#ifdef XTK_HAVE_NCCL
  void nccl(const NcclCall& c) const override {
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    check_nccl(ncclSend(c.send, c.count, c.type, (c.rank + 1) % c.nranks, c.comm, c.stream), "ncclSend");
    check_nccl(ncclRecv(c.recv, c.count, c.type, (c.rank + c.nranks - 1) % c.nranks, c.comm, c.stream), "ncclRecv");
    check_nccl(ncclGroupEnd(), "ncclGroupEnd (send-recv)");
  }
#endif
#ifdef XTK_HAVE_GLOO
  void gloo(const GlooCall& c) const override {
    // Above Gloo's own slot prefixes (gloo/types.h), so no collective's messages match these.
    constexpr std::uint8_t kSendRecvSlotPrefix = 0x40;
    run_gloo(*this, c, [&] {
      const std::size_t bytes = c.counts.param * c.element;
      auto out = c.context->createUnboundBuffer(const_cast<void*>(c.send), bytes);
      auto in = c.context->createUnboundBuffer(c.recv, bytes);
      const auto slot = gloo::Slot::build(kSendRecvSlotPrefix, c.tag);
      in->recv((c.rank + c.nranks - 1) % c.nranks, slot);
      out->send((c.rank + 1) % c.nranks, slot);
      if (!in->waitRecv(c.timeout) || !out->waitSend(c.timeout)) {
        throw std::runtime_error("timed out");
      }
    });
  }
#endif
};

}  // namespace

const Collective& send_recv() {
  static const SendRecv c;
  return c;
}

}  // namespace xtk::collective
