// libFuzzer target: parse_hosts_file (executor "hosts", docs/experiments.md)
// on arbitrary bytes.
//
// Bad input must end in xtk::InputError; anything else that escapes, a
// sanitizer report, or an accepted file that breaks the promises below is a
// bug. Seeds: tests/fuzz/corpus/hosts_file. Run through scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "experiment/hosts_file.hpp"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

bool has_any(const std::string& s, const char* chars) { return s.find_first_of(chars) != std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    std::set<std::string> names;
    for (const auto& h : xtk::parse_hosts_file(in, "hosts.txt")) {
      // Each field is one word a schedule, ssh and the kernel can take.
      check(!h.name.empty() && !has_any(h.name, " \t\n\r#,"));
      check(!h.address.empty() && h.address.front() != '-' && !has_any(h.address, " \t\n\r#"));
      check(!h.interface.empty() && h.interface.size() <= 15 && !has_any(h.interface, " \t\n\r#/:"));
      check(names.insert(h.name).second);
    }
  } catch (const xtk::InputError&) {
    // Rejected input: the expected outcome for most bytes.
  }
  return 0;
}
