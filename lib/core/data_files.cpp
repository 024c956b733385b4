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

std::vector<std::string> shipped_data_dirs() {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  if (*XTK_CONFIG_DIR) dirs.emplace_back(XTK_CONFIG_DIR);
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back((self.parent_path().parent_path() / "share" / "xtk").string());
  if (*XTK_INSTALL_CONFIG_DIR) dirs.emplace_back(XTK_INSTALL_CONFIG_DIR);
  return dirs;
}

std::string find_shipped_file(const std::string& relative) {
  for (const auto& dir : shipped_data_dirs()) {
    const auto candidate = std::filesystem::path(dir) / relative;
    if (std::filesystem::is_regular_file(candidate)) return candidate.string();
  }
  return "";
}

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
  for (const auto& base : shipped_data_dirs()) dirs.push_back(base + "/" + kind.subdir);
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
