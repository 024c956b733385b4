// The CPUs this process may run on (its affinity mask, as taskset and
// cgroups leave it): what decides whether a second thread has a CPU of its own.
#pragma once

#include <string>
#include <vector>

namespace xtk {

std::vector<int> allowed_cpus();  // ascending; empty when the mask cannot be read

// "0-2,5" for {0, 1, 2, 5} (ascending), as the kernel writes CPU lists.
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace xtk
