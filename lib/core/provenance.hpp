// What produced a tool's output, carried by every tool's JSON ("provenance")
// and by run.json: xtk's version and git revision, the host and its kernel,
// and the command line, so a result file says how to make it again.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace xtk {

// {"version": "0.1.0", "git_revision": "1a2b3c4d5e6f[-dirty]"} of this build.
nlohmann::json build_info();

// The process's command line, kept by run_tool (core/cli.hpp) for tool_provenance.
void record_command_line(int argc, char** argv);

// build_info plus {"host", "kernel", "command_line": [argv...]}.
nlohmann::json tool_provenance();

// `document` (an object) with "provenance": tool_provenance() added.
nlohmann::json with_provenance(nlohmann::json document);

}  // namespace xtk
