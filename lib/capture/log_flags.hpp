// xtk-log's command lines (counters, capture), defined once: the flags as a
// user types them, their registration with CLI11 (the tool parses with it),
// their conversion into the sampler's and the capture's options, and the argv
// a launcher (xtk-run) renders from them, subcommand included.
// tests/unit/command_lines_test.cpp round-trips flags -> argv -> flags.
#pragma once

#include <string>
#include <vector>

#include "capture/live_capture.hpp"
#include "capture/sampler.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace xtk::capture {

struct CounterFlags {
  std::vector<std::string> sources;
  std::string period = "1ms", duration = "0", slow, spin = "0", wake_latency, out = "counters.csv";
  int cpu = -1, fifo = 0;
  bool list = false, json = false;

  bool operator==(const CounterFlags&) const = default;
};

struct CaptureFlags {
  std::vector<std::string> interfaces;
  std::string filter, tstamp, buffer = "256MiB", out, rotate_size, rotate_time, duration = "0", stats_every = "1s";
  std::string bin = "1ms", per = "flow";
  std::uint32_t snaplen = 128;
  bool no_promisc = false, summarize = false, json = false;

  bool operator==(const CaptureFlags&) const = default;
};

// On the `counters` and `capture` subcommands.
void add_flags(CLI::App& counters, CounterFlags& flags);
void add_flags(CLI::App& capture, CaptureFlags& flags);
// "counters ..." and "capture ...": the arguments after `xtk-log`.
std::vector<std::string> to_arguments(const CounterFlags& flags);
std::vector<std::string> to_arguments(const CaptureFlags& flags);
// Throw UsageError naming the flag. The sources are opened by the tool.
SamplerOptions to_options(const CounterFlags& flags);
CaptureOptions to_options(const CaptureFlags& flags);

}  // namespace xtk::capture
