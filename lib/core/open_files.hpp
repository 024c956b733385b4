// The process's open-file limit. Servers and clients with thousands of
// connections need more descriptors than the usual soft limit of 1024.
#pragma once

#include <cstdint>

namespace xtk {

// Raises the soft RLIMIT_NOFILE to the hard limit (what an unprivileged
// `ulimit -n` may do) and returns the soft limit now in force.
std::uint64_t raise_open_file_limit();

}  // namespace xtk
