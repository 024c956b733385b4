#include "core/data_files.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "core/error.hpp"

#ifndef XTK_CONFIG_DIR
#define XTK_CONFIG_DIR ""
#endif
#ifndef XTK_INSTALL_CONFIG_DIR
#define XTK_INSTALL_CONFIG_DIR ""
#endif

namespace xtk {

std::string find_data_file(const std::string& name_or_path, const DataKind& kind) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(name_or_path)) return name_or_path;
  std::vector<std::string> dirs;
  if (const char* env = std::getenv(kind.env)) {  // NOLINT(concurrency-mt-unsafe): read before threads start
    std::stringstream list(env);
    for (std::string dir; std::getline(list, dir, ':');) {
      if (!dir.empty()) dirs.push_back(dir);
    }
  }
  for (const char* base : {XTK_CONFIG_DIR, XTK_INSTALL_CONFIG_DIR}) {
    if (*base) dirs.push_back(std::string(base) + "/" + kind.subdir);
  }
  const std::string file = name_or_path + kind.extension;
  for (const auto& dir : dirs) {
    const fs::path candidate = fs::path(dir) / file;
    if (fs::is_regular_file(candidate)) return candidate.string();
  }
  std::string searched;
  for (const auto& dir : dirs) searched += "\n  " + dir;
  throw UsageError(fmt::format("{} '{}': no such file, and no {} in:{}", kind.flag, name_or_path, file, searched));
}

}  // namespace xtk
