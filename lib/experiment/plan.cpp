#include "experiment/plan.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/data_files.hpp"
#include "core/error.hpp"

namespace xtk {

std::vector<StepPlan> plan_steps(const ExperimentConfig& config, const std::string& experiment_dir) {
  std::vector<StepPlan> steps;
  std::uint32_t seed = static_cast<std::uint32_t>(config.seed);
  for (const auto& model : config.training.models) {
    const std::string name = read_model_totals(model).name;
    // One zero-load baseline per model opens every profile's series.
    steps.push_back({model, "none", 0, 0.0, fmt::format("{}/{}/none/step00", experiment_dir, name), seed++});
    for (const auto& profile : config.cross_traffic.profiles) {
      std::uint32_t index = 0;
      for (double load : config.cross_traffic.loads) {
        if (load <= 0) continue;  // the baseline already covers it
        ++index;
        steps.push_back({model, profile, index, load,
                         fmt::format("{}/{}/{}/step{:02}", experiment_dir, name, profile, index), seed++});
      }
    }
  }
  return steps;
}

ModelTotals read_model_totals(const std::string& model) {
  namespace fs = std::filesystem;
  const std::string path = find_data_file(model, kModelProfiles);
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot read the model profile", path));
  ModelTotals totals;
  totals.name = fs::path(path).stem().string();
  double bytes = 0;
  std::uint64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.rfind("# model=", 0) == 0) totals.name = line.substr(8);
    if (line.rfind("# compute_ms=", 0) == 0) {
      try {
        totals.compute_ms = std::stod(line.substr(13));
      } catch (const std::exception&) {
        throw InputError(path, line_no, fmt::format("compute_ms '{}' is not a number", line.substr(13)));
      }
    }
    if (line.empty() || line[0] == '#' || line.rfind("name,", 0) == 0) continue;
    std::istringstream fields(line);
    std::string name, numel, dtype;
    std::getline(fields, name, ',');
    std::getline(fields, numel, ',');
    std::getline(fields, dtype, ',');
    double count = 0;
    try {
      count = std::stod(numel);
    } catch (const std::exception&) {
      throw InputError(path, line_no, fmt::format("numel '{}' is not a number", numel));
    }
    const double size = dtype == "float16" || dtype == "bfloat16" ? 2 : dtype == "float64" ? 8 : 4;
    totals.params += count;
    bytes += count * size;
  }
  if (totals.params <= 0) throw InputError(path, 0, "no parameter tensors");
  totals.bytes_per_param = bytes / totals.params;
  return totals;
}

std::string find_tool(const std::string& name) {
  namespace fs = std::filesystem;
  if (const char* dir = std::getenv("XTK_BIN_DIR")) {
    const fs::path p = fs::path(dir) / name;
    if (fs::exists(p)) return p.string();
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& p : {self.parent_path() / name, self.parent_path().parent_path() / name / name}) {
      if (fs::exists(p)) return p.string();
    }
  }
  if (const char* path = std::getenv("PATH")) {
    std::string list(path);
    for (std::size_t start = 0; start <= list.size();) {
      const auto end = std::min(list.find(':', start), list.size());
      const fs::path p = fs::path(list.substr(start, end - start)) / name;
      if (!p.empty() && ::access(p.c_str(), X_OK) == 0) return p.string();
      start = end + 1;
    }
  }
  throw Error(fmt::format("cannot find the tool '{}': build xtk (scripts/build.sh) or set XTK_BIN_DIR", name));
}

}  // namespace xtk
