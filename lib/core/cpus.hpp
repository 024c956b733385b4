// The CPUs this process may run on (its affinity mask, as taskset and
// cgroups leave it): what decides whether a second thread has a CPU of its own.
#pragma once

#include <vector>

namespace xtk {

std::vector<int> allowed_cpus();  // ascending; empty when the mask cannot be read

}  // namespace xtk
