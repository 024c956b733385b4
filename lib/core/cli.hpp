// The frame every xtk tool's main() runs in: CLI11 parsing, then the tool's
// body, with errors mapped to the documented exit statuses
// (0 ok, 1 runtime error, 2 usage error) and printed as "tool: error: ...".
#pragma once

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/provenance.hpp"

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

// A tool's command line rendered from its flags struct, next to the code that
// registers those flags with CLI11 (lib/<area>/*_flags.hpp): the launching side
// of the same definitions. Only values that differ from the tool's own default
// are written, so a command line reads as what was chosen.
class Arguments {
 public:
  template <typename T>
  Arguments& option(std::string_view flag, const T& value, const T& default_value) {
    if (!(value == default_value)) {
      list_.emplace_back(flag);
      list_.push_back(text(value));
    }
    return *this;
  }
  // An option with no default: written when set.
  template <typename T>
  Arguments& option(std::string_view flag, const std::optional<T>& value) {
    if (value) {
      list_.emplace_back(flag);
      list_.push_back(text(*value));
    }
    return *this;
  }
  // A repeatable option: one flag per value.
  Arguments& each(std::string_view flag, const std::vector<std::string>& values) {
    for (const auto& v : values) {
      list_.emplace_back(flag);
      list_.push_back(v);
    }
    return *this;
  }
  Arguments& flag(std::string_view flag, bool on) {
    if (on) list_.emplace_back(flag);
    return *this;
  }
  Arguments& word(std::string value) {
    list_.push_back(std::move(value));
    return *this;
  }
  std::vector<std::string> list() const { return list_; }

 private:
  template <typename T>
  static std::string text(const T& value) {
    if constexpr (std::is_convertible_v<T, std::string>) {
      return std::string(value);
    } else {
      return fmt::format("{}", value);  // doubles: the shortest text that reads back the same
    }
  }
  std::vector<std::string> list_;
};

inline int run_tool(CLI::App& app, int argc, char** argv, const std::function<void()>& body) {
  record_command_line(argc, argv);
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
