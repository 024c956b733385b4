// The frame every xtk tool's main() runs in: CLI11 parsing, then the tool's
// body, with errors mapped to the documented exit statuses
// (0 ok, 1 runtime error, 2 usage error) and printed as "tool: error: ...".
#pragma once

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace xtk {

// A flag's value through one of the unit parsers (core/units.hpp), whose
// UsageError then names the flag: "--duration: '5 parsecs' is not a duration".
template <typename Parse>
auto parse_flag(std::string_view flag, const std::string& text, Parse parse) {
  try {
    return parse(text);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", flag, e.what()));
  }
}

inline int run_tool(CLI::App& app, int argc, char** argv, const std::function<void()>& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\nRun with --help for the options.\n", app.get_name().c_str(), e.what());
    return kExitUsage;
  }
  try {
    body();
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\nRun with --help for the options.\n", app.get_name().c_str(), e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", app.get_name().c_str(), e.what());
    return kExitRuntime;
  }
}

}  // namespace xtk
