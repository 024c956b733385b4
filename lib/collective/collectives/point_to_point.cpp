// A traced job's send and recv (torch.distributed.send/recv, as pipeline
// parallelism moves activations between stages), for the replay only: a sweep
// times them as send-recv. The call's root is the peer, its rank in the group.
// The bytes a rank sends: the sender's count, the receiver's none.
#include "collective/collective.hpp"
#ifdef XTK_HAVE_NCCL
#include "collective/nccl_context.hpp"
#endif
#ifdef XTK_HAVE_GLOO
#include <gloo/types.h>

#include <stdexcept>

#include "collective/gloo_call.hpp"
#endif

namespace xtk::collective {
namespace {

#ifdef XTK_HAVE_GLOO
// Above Gloo's own slot prefixes (gloo/types.h) and send-recv's.
constexpr std::uint8_t kPeerSlotPrefix = 0x41;
#endif

class PointToPoint : public Collective {
 public:
  explicit PointToPoint(bool sends) : sends_(sends) {}
  std::string_view name() const override { return sends_ ? "send" : "recv"; }
  bool point_to_point() const override { return true; }
  Counts counts(std::size_t count, std::uint32_t /*nranks*/, std::size_t /*element*/) const override {
    return sends_ ? Counts{.send = count, .recv = 0, .param = count} : Counts{.send = 0, .recv = count, .param = count};
  }
  std::size_t algbw_elements(const Counts& c, std::uint32_t /*nranks*/) const override { return c.param; }
  double bus_factor(std::uint32_t /*nranks*/) const override { return sends_ ? 1.0 : 0.0; }
  std::string_view bus_factor_formula() const override { return sends_ ? "1" : "0"; }
  std::vector<Expected> expected(const Counts& c, std::uint32_t /*rank*/, std::uint32_t /*nranks*/,
                                 std::uint32_t peer) const override {
    if (sends_) return {};
    return {{.at = 0, .count = c.recv, .from_rank = peer, .first = 0}};
  }
#ifdef XTK_HAVE_NCCL
  void nccl(const NcclCall& c) const override {
    if (sends_) {
      check_nccl(ncclSend(c.send, c.count, c.type, c.root, c.comm, c.stream), "ncclSend");
    } else {
      check_nccl(ncclRecv(c.recv, c.count, c.type, c.root, c.comm, c.stream), "ncclRecv");
    }
  }
#endif
#ifdef XTK_HAVE_GLOO
  // The tag counts the calls between this pair in this direction, so the
  // n-th send meets the peer's n-th recv whatever else each rank runs.
  void gloo(const GlooCall& c) const override {
    run_gloo(*this, c, [&] {
      const std::size_t bytes = c.counts.param * c.element;
      const auto slot = gloo::Slot::build(kPeerSlotPrefix, c.tag);
      if (sends_) {
        auto out = c.context->createUnboundBuffer(const_cast<void*>(c.send), bytes);
        out->send(c.root, slot);
        if (!out->waitSend(c.timeout)) throw std::runtime_error("timed out");
      } else {
        auto in = c.context->createUnboundBuffer(c.recv, bytes);
        in->recv(c.root, slot);
        if (!in->waitRecv(c.timeout)) throw std::runtime_error("timed out");
      }
    });
  }
#endif

 private:
  bool sends_;
};

}  // namespace

const Collective& send() {
  static const PointToPoint c(true);
  return c;
}

const Collective& recv() {
  static const PointToPoint c(false);
  return c;
}

}  // namespace xtk::collective
