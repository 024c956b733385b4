#include "experiment/hosts_file.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "formats/csv_file.hpp"

namespace xtk {
namespace {

// Linux's rule for a network device's name (IFNAMSIZ less its terminator):
// anything else cannot be a host's interface.
bool valid_interface(const std::string& name) {
  if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
  for (char c : name) {
    if (c == '/' || c == ':' || c <= ' ' || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

std::vector<HostEntry> parse_hosts_file(std::istream& in, const std::string& path) {
  std::vector<HostEntry> hosts;
  std::set<std::string> names;
  std::uint64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    std::istringstream fields(line.substr(0, line.find('#')));
    HostEntry h{.name = "", .address = "", .interface = kDefaultHostInterface};
    if (!(fields >> h.name)) continue;
    const auto fail = [&](const std::string& what) { throw InputError(path, line_no, what); };
    if (!(fields >> h.address)) fail("expected 'name address [interface]'");
    fields >> h.interface;
    if (std::string extra; fields >> extra) {
      fail(fmt::format("expected 'name address [interface]', found a fourth field '{}'", extra));
    }
    // The name labels the host in schedules (their src and dst columns) and tables.
    if (!valid_token(h.name)) fail(fmt::format("host name '{}' has a ','", h.name));
    if (!names.insert(h.name).second) fail(fmt::format("host '{}' is listed twice", h.name));
    if (h.address.front() == '-') {
      fail(fmt::format("address '{}' begins with '-': ssh would read it as an option", h.address));
    }
    if (!valid_interface(h.interface)) {
      fail(fmt::format("interface '{}' is not a network device's name (1 to 15 characters, no '/' or ':')",
                       h.interface));
    }
    hosts.push_back(std::move(h));
  }
  return hosts;
}

std::vector<HostEntry> read_hosts_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open the hosts file", path));
  return parse_hosts_file(in, path);
}

}  // namespace xtk
