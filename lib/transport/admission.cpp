#include "transport/transport.hpp"

namespace xtk {

std::optional<FlowHeader> admit_flow(const HeaderBytes& bytes, const ServerContext& context) {
  std::string reason;
  auto header = decode(bytes, &reason);
  if (!header) {
    bump(context.stats.bad_headers);
    return std::nullopt;
  }
  if (context.settings.token != 0 && header->token != context.settings.token) {
    bump(context.stats.unauthenticated);
    return std::nullopt;
  }
  if (header->stream && header->direction != Direction::push) {
    bump(context.stats.bad_headers);  // streams are push-only
    return std::nullopt;
  }
  if (!header->stream && header->size_bytes > context.settings.max_flow_bytes) {
    bump(context.stats.too_large);
    return std::nullopt;
  }
  return header;
}

}  // namespace xtk
