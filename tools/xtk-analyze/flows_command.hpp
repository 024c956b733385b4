// `xtk-analyze flows`: flow-record files of several clients (fan-in, many
// senders) merged into one summary, as one client prints its own.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

// Adds `flows` to `app`; the returned function runs it when it was parsed.
std::function<void()> add_flows_command(CLI::App& app);
