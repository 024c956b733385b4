// Runs a tool as a user would, through the shell: its exit status and what it
// printed (stdout and stderr together), for tests of messages and statuses.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace xtk::testing {

struct ToolResult {
  int status = -1;  // the exit status; -1 when it did not exit normally
  std::string out;  // stdout and stderr together
};

inline ToolResult run_tool_command(const std::string& binary, const std::string& args) {
  const std::string command = binary + " " + args + " 2>&1";
  ToolResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  while (std::size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) r.out.append(buffer.data(), n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

}  // namespace xtk::testing
