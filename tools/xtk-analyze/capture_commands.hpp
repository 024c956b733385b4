// The capture subcommands of xtk-analyze: `trace` (pcap files into flows,
// bins, rate series and histogram) and `counters` (counter files into
// rates). The work is in lib/capture.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

// Adds `trace` and `counters` to `app`; the returned function runs whichever
// of them was parsed (and nothing otherwise), inside run_tool's body.
std::function<void()> add_capture_commands(CLI::App& app);
