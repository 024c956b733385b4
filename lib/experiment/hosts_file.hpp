// The hosts file of executor "hosts" (docs/experiments.md#executors): one host
// per line, "name address [interface]", in rank order, the cross-traffic host
// last; '#' starts a comment. Errors name the file and line.
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace xtk {

struct HostEntry {
  std::string name;       // its label in tables and schedules
  std::string address;    // what ssh connects to
  std::string interface;  // what counters and capture read
};

inline constexpr const char* kDefaultHostInterface = "eth0";

std::vector<HostEntry> parse_hosts_file(std::istream& in, const std::string& path);  // throws InputError
std::vector<HostEntry> read_hosts_file(const std::string& path);  // throws Error if unreadable, InputError

}  // namespace xtk
