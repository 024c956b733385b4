// libFuzzer target: ScheduleReader on arbitrary bytes.
//
// Bad input must end in xtk::Error (InputError); anything else that escapes,
// a sanitizer report, or a flow that breaks the invariants below is a bug.
// Run through scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "workload/schedule.hpp"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

constexpr std::uint64_t kMaxFlows = 100000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    xtk::ScheduleReader reader(in, "fuzz");
    const auto& header = reader.header();
    for (const auto& [key, value] : header.params) {
      check(!key.empty());
      check(key != "format_version");
    }
    xtk::Flow flow;
    std::int64_t last_start = 0;
    std::uint64_t last_line = reader.line();
    for (std::uint64_t n = 0; n < kMaxFlows && reader.next(flow); ++n) {
      check(flow.start_ns >= 0);
      check(flow.start_ns >= last_start);
      last_start = flow.start_ns;
      check(flow.size_bytes > 0);
      check(flow.dscp >= 0 && flow.dscp <= 63);
      if (!header.has_dscp) check(flow.dscp == 0);
      if (!header.has_rate) check(flow.rate_bps == 0);
      check(!flow.src.empty() && !flow.dst.empty());
      // Touch the views: they must point into live memory (ASan checks).
      volatile char sink = static_cast<char>(flow.src.front() ^ flow.src.back() ^ flow.dst.front() ^ flow.dst.back());
      (void)sink;
      check(reader.line() > last_line);
      last_line = reader.line();
    }
  } catch (const xtk::Error&) {
    // Rejected input: the expected outcome for most bytes.
  }
  return 0;
}
