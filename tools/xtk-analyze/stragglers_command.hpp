// `xtk-analyze stragglers`: table 8 for one job's collectives files, outside
// an experiment directory.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

// Adds `stragglers` to `app`; the returned function runs it when it was parsed.
std::function<void()> add_stragglers_command(CLI::App& app);
