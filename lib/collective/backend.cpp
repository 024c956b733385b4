#include "collective/backend.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.hpp"
#ifdef XTK_HAVE_GLOO
#include "collective/gloo_backend.hpp"
#endif
#ifdef XTK_HAVE_NCCL
#include "collective/nccl_backend.hpp"
#endif

namespace xtk::collective {

nlohmann::json DeviceInfo::to_json() const {
  return {{"rank", rank}, {"host", host}, {"pid", pid}, {"device", device}, {"bus_id", bus_id}, {"name", name}};
}

DeviceInfo DeviceInfo::from_json(const nlohmann::json& j) {
  DeviceInfo d;
  d.rank = j.at("rank").get<std::uint32_t>();
  d.host = j.at("host").get<std::string>();
  d.pid = j.at("pid").get<int>();
  d.device = j.at("device").get<int>();
  d.bus_id = j.at("bus_id").get<std::string>();
  d.name = j.at("name").get<std::string>();
  return d;
}

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
#ifdef XTK_HAVE_GLOO
  names.emplace_back("gloo");
#endif
#ifdef XTK_HAVE_NCCL
  names.emplace_back("nccl");
#endif
  return names;
}

std::string resolve_backend_name(const std::string& name) {
  const auto built = available_backends();
  if (name == "auto") {
#ifdef XTK_HAVE_NCCL
    if (nccl_visible_gpus() > 0) return "nccl";
#endif
    if (std::find(built.begin(), built.end(), "gloo") != built.end()) return "gloo";
    throw UsageError("--backend auto: no GPU is visible and Gloo is not built in");
  }
  if (std::find(built.begin(), built.end(), name) == built.end()) {
    throw UsageError(fmt::format("--backend {}: not built into this xtk-collective (built: {})", name,
                                 built.empty() ? std::string("none") : fmt::format("{}", fmt::join(built, ", "))));
  }
  return name;
}

std::unique_ptr<Backend> make_backend([[maybe_unused]] const BackendOptions& options, [[maybe_unused]] Job& job) {
#ifdef XTK_HAVE_GLOO
  if (options.name == "gloo") return make_gloo_backend(options, job);
#endif
#ifdef XTK_HAVE_NCCL
  if (options.name == "nccl") return make_nccl_backend(options, job);
#endif
  resolve_backend_name(options.name);  // names the backends that are built
  throw UsageError(fmt::format("--backend {}: resolve the name first", options.name));
}

}  // namespace xtk::collective
