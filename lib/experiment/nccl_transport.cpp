#include "experiment/nccl_transport.hpp"

#include <fmt/format.h>

#include <regex>

namespace xtk {

std::vector<NcclConnection> parse_nccl_connections(std::string_view log) {
  // "Channel 00/0 : 0[0] -> 1[1] [send] via X" (NCCL 2.1x+), "Ring 00 : 0 -> 1 via X" (older).
  static const std::regex line(
      R"((?:Channel|Ring) \d+(?:/\d+)? : (\d+)(?:\[[^\]]*\])? -> (\d+)(?:\[[^\]]*\])?(?: \[\w+\])? via (\S+))");
  std::vector<NcclConnection> out;
  std::size_t begin = 0;
  while (begin < log.size()) {
    const std::size_t end = std::min(log.find('\n', begin), log.size());
    const std::string text(log.substr(begin, end - begin));
    begin = end + 1;
    if (text.find("NCCL INFO") == std::string::npos) continue;
    std::smatch m;
    if (!std::regex_search(text, m, line)) continue;
    out.push_back(
        {static_cast<unsigned>(std::stoul(m[1].str())), static_cast<unsigned>(std::stoul(m[2].str())), m[3].str()});
  }
  return out;
}

std::optional<std::string> nccl_bypass(std::string_view log, const std::string& source,
                                       const std::string& network_prefix, bool connections_required) {
  const auto connections = parse_nccl_connections(log);
  if (connections.empty()) {
    if (!connections_required) return std::nullopt;
    return fmt::format(
        "{} has no NCCL connection lines ('NCCL INFO Channel ... via ...'): keep NCCL_DEBUG=INFO so the step can "
        "check that the traffic crossed the network",
        source);
  }
  for (const auto& c : connections) {
    if (c.via.rfind(network_prefix, 0) != 0) {
      return fmt::format(
          "{}: NCCL connects rank {} to rank {} via {}, not {} (leave NCCL_P2P_DISABLE, "
          "NCCL_SHM_DISABLE and NCCL_IB_DISABLE as xtk-run sets them)",
          source, c.from, c.to, c.via, network_prefix);
    }
  }
  return std::nullopt;
}

}  // namespace xtk
