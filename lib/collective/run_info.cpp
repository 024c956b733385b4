#include "collective/run_info.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "core/clock.hpp"

extern char** environ;

namespace xtk::collective {
namespace {

bool relevant(const std::string& name) {
  for (const char* prefix : {"NCCL_", "GLOO_", "CUDA_", "NVIDIA_VISIBLE_DEVICES", "TORCHELASTIC_"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  for (const char* exact : {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_JOB_ID",
                            "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_JOB_NODELIST",
                            "SLURM_STEP_NODELIST", "SLURMD_NODENAME", "OMP_NUM_THREADS"}) {
    if (name == exact) return true;
  }
  return false;
}

}  // namespace

Environment relevant_environment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* equals = std::strchr(*e, '=');
    if (equals == nullptr) continue;
    std::string name(*e, static_cast<std::size_t>(equals - *e));
    if (relevant(name)) env[name] = equals + 1;
  }
  return env;
}

nlohmann::json RunInfo::to_json() const {
  auto devices_json = nlohmann::json::array();
  for (const auto& d : devices) devices_json.push_back(d.to_json());
  return {{"command", command},
          {"argv", argv},
          {"start_realtime_ns", start_realtime_ns},
          {"backend", backend},
          {"versions", versions},
          {"world",
           {{"processes", world.world_size},
            {"ranks", nranks},
            {"ranks_per_process", ranks_per_process},
            {"source", world.source},
            {"master", fmt::format("{}:{}", world.master_host, world.master_port)}}},
          {"options", options},
          {"devices", devices_json},
          {"environment", environments}};
}

void RunInfo::print(std::ostream& out) const {
  out << fmt::format("# xtk-collective {} ({} backend)\n", command, backend);
  out << fmt::format("# command: {}\n", fmt::join(argv, " "));
  out << fmt::format("# versions: {}\n", versions.dump());
  out << fmt::format("# ranks: {} ({} process{} x {}), from the {}; rendezvous {}:{}\n", nranks, world.world_size,
                     world.world_size == 1 ? "" : "es", ranks_per_process, world.source, world.master_host,
                     world.master_port);
  out << fmt::format("# options: {}\n", options.dump());
  if (!environments.empty()) {
    const auto& root = environments.front();
    for (const auto& [name, value] : root) out << fmt::format("# env: {}={}\n", name, value);
    for (std::size_t r = 1; r < environments.size(); ++r) {
      for (const auto& [name, value] : environments[r]) {
        const auto it = root.find(name);
        if (it == root.end() || it->second != value) out << fmt::format("# env (rank {}): {}={}\n", r, name, value);
      }
      for (const auto& [name, value] : root) {
        if (!environments[r].contains(name)) out << fmt::format("# env (rank {}): {} unset\n", r, name);
      }
    }
  }
  out << "#\n# Using devices\n";
  for (const auto& d : devices) {
    out << fmt::format("#  Rank {:2} Group  0 Pid {:6} on {:>10} device {:2} [{}] {}\n", d.rank, d.pid, d.host,
                       d.device, d.bus_id.empty() ? "-" : d.bus_id, d.name);
  }
  out << "#\n";
}

RunInfo collect_run_info(const std::string& command, const std::vector<std::string>& argv,
                         const nlohmann::json& options, Backend& backend, Job& job) {
  RunInfo info;
  info.command = command;
  info.argv = argv;
  info.start_realtime_ns = realtime_ns();
  info.world = job.world();
  info.nranks = job.nranks();
  info.ranks_per_process = job.ranks_per_process();
  info.backend = backend.name();
  info.versions = backend.versions();
  info.versions["xtk"] = XTK_VERSION;
  info.options = options;
  auto mine = nlohmann::json::array();
  for (const auto& d : backend.local_devices()) mine.push_back(d.to_json());
  const nlohmann::json part{{"devices", mine}, {"env", relevant_environment()}};
  const auto parts = job.gather("the devices table", part.dump());
  if (!job.is_root()) {
    for (const auto& d : mine) info.devices.push_back(DeviceInfo::from_json(d));
    info.environments.push_back(relevant_environment());
    return info;
  }
  for (const auto& text : parts) {
    const auto j = nlohmann::json::parse(text);
    for (const auto& d : j.at("devices")) info.devices.push_back(DeviceInfo::from_json(d));
    info.environments.push_back(j.at("env").get<Environment>());
  }
  return info;
}

}  // namespace xtk::collective
