// The transports built in: one line each.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>

#include "core/error.hpp"
#include "transport/rdma/rdma.hpp"
#include "transport/tcp/tcp.hpp"

namespace xtk {
namespace {

struct Entry {
  const char* name;
  std::function<std::unique_ptr<ClientTransport>(const ChannelOptions&, Poller&)> client;
  std::function<std::unique_ptr<ServerTransport>(const ServerContext&, Poller&)> server;
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries{
      {"tcp", tcp::make_client, tcp::make_server},
      {"rdma", rdma::make_client, rdma::make_server},
  };
  return entries;
}

const Entry& find(const std::string& name) {
  for (const auto& e : registry()) {
    if (name == e.name) return e;
  }
  throw UsageError(
      fmt::format("--transport: '{}' is not a transport of this build ({})", name, fmt::join(transport_names(), ", ")));
}

}  // namespace

std::vector<std::string> transport_names() {
  std::vector<std::string> names;
  for (const auto& e : registry()) names.emplace_back(e.name);
  return names;
}

std::unique_ptr<ClientTransport> make_client_transport(const std::string& name, const ChannelOptions& options,
                                                       Poller& poller) {
  return find(name).client(options, poller);
}

std::unique_ptr<ServerTransport> make_server_transport(const std::string& name, const ServerContext& context,
                                                       Poller& poller) {
  return find(name).server(context, poller);
}

}  // namespace xtk
