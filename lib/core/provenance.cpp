#include "core/provenance.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include "xtk_revision.hpp"

namespace xtk {
namespace {

std::vector<std::string>& command_line() {
  static std::vector<std::string> argv;
  return argv;
}

}  // namespace

nlohmann::json build_info() { return {{"version", XTK_VERSION}, {"git_revision", XTK_GIT_REVISION}}; }

void record_command_line(int argc, char** argv) { command_line().assign(argv, argv + argc); }

nlohmann::json tool_provenance() {
  auto j = build_info();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  utsname system{};
  ::uname(&system);
  j["host"] = host;
  j["kernel"] = system.release;
  j["command_line"] = command_line();
  return j;
}

nlohmann::json with_provenance(nlohmann::json document) {
  document["provenance"] = tool_provenance();
  return document;
}

}  // namespace xtk
