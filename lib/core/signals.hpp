// SIGINT/SIGTERM as a flag that long-running loops poll, so a stop ends the
// run cleanly (records written, summary printed) instead of killing it.
#pragma once

#include <atomic>

namespace xtk {

// The flag the handlers set; installs them on the first call.
const std::atomic<bool>& stop_requested();

}  // namespace xtk
