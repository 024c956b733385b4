// What the kernel reports in one-line files under /proc and /sys.
#pragma once

#include <string>

namespace xtk {

// The file's first line without its newline; empty when it cannot be read.
std::string read_first_line(const std::string& path);

}  // namespace xtk
