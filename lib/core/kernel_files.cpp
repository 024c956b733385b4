#include "core/kernel_files.hpp"

#include <fstream>

namespace xtk {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace xtk
