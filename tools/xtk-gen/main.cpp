// xtk-gen: writes flow schedules from a flow-size CDF and a load profile, and
// inspects schedules (offered load per window, burst ratio, sizes).
#include <fmt/format.h>

#include <iostream>

#include "core/cli.hpp"
#include "core/units.hpp"
#include "workload/gen_flags.hpp"
#include "workload/inspect.hpp"
#include "workload/profile.hpp"

namespace {

struct InspectFlags {
  std::vector<std::string> files;
  std::string windows = "1ms,10ms", burst_width, burst_period;
  bool json = false;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (char c : text) {
    if (c == ',') {
      out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  out.push_back(item);
  return out;
}

void inspect_file(const std::string& path, const xtk::InspectOptions& options, bool json) {
  auto reader = xtk::ScheduleReader::open(path);
  auto report = xtk::inspect_schedule(*reader, options);
  report.source = path;
  if (json) {
    std::cout << xtk::with_provenance(xtk::to_json(report)).dump() << '\n';
  } else {
    xtk::print_report(report, std::cout);
  }
}

}  // namespace

// run_tool turns every exception into an exit status; CLI11's set-up throws only on programming errors.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "Write a schedule of flows (start time, destination, size) from a flow-size CDF and a load profile,\n"
      "or inspect one. The schedule format is in docs/formats.md.\n\n"
      "  xtk-gen --profile burst --cdf web-search --load 0.8 --link 1G --duration 60s -o burst.csv\n"
      "  xtk-gen inspect burst.csv",
      "xtk-gen"};
  app.set_version_flag("--version", std::string("xtk-gen ") + XTK_VERSION);
  app.require_subcommand(0, 1);
  xtk::GenFlags g;
  xtk::add_flags(app, g);

  InspectFlags in;
  auto* inspect = app.add_subcommand("inspect", "offered load per window, burst ratio and sizes of schedule files");
  inspect->add_option("files", in.files, "schedule files ('-' = stdin)")->required();
  inspect->add_option("--window", in.windows, "window lengths for per-window load")->capture_default_str();
  inspect->add_option("--burst-width", in.burst_width, "burst grid width (default: from the header)");
  inspect->add_option("--burst-period", in.burst_period, "burst grid period (default: from the header)");
  inspect->add_flag("--json", in.json, "one JSON object per file instead of the table");

  return xtk::run_tool(app, argc, argv, [&] {
    if (inspect->parsed()) {
      xtk::InspectOptions options;
      options.windows_ns.clear();
      for (const auto& w : split_list(in.windows)) {
        options.windows_ns.push_back(xtk::parse_flag("--window", w, xtk::parse_duration_ns));
        if (options.windows_ns.back() <= 0) throw xtk::UsageError("--window: windows must be above 0");
      }
      if (!in.burst_width.empty())
        options.burst_width_ns = xtk::parse_flag("--burst-width", in.burst_width, xtk::parse_duration_ns);
      if (!in.burst_period.empty())
        options.burst_period_ns = xtk::parse_flag("--burst-period", in.burst_period, xtk::parse_duration_ns);
      // The generator's rule for a burst grid, given here to read one.
      if (options.burst_width_ns) {
        xtk::BurstShape::check_grid(*options.burst_width_ns, options.burst_period_ns.value_or(INT64_MAX));
      }
      for (std::size_t i = 0; i < in.files.size(); ++i) {
        if (i > 0 && !in.json) std::cout << '\n';
        inspect_file(in.files[i], options, in.json);
      }
      return;
    }
    if (g.inspect && g.out == "-") throw xtk::UsageError("--inspect needs -o FILE (the schedule is read back)");
    const auto config = xtk::to_config(g);
    const auto result = xtk::write_schedule(config, g.out);
    if (g.out != "-") {
      std::cerr << fmt::format("xtk-gen: wrote {} flows, {} bytes ({}) to {}\n", result.flows, result.bytes,
                               xtk::format_bytes(static_cast<double>(result.bytes)), fmt::join(result.files, ", "));
    }
    if (g.inspect) {
      for (std::size_t i = 0; i < result.files.size(); ++i) {
        if (i > 0 && !g.json) std::cout << '\n';
        inspect_file(result.files[i], {}, g.json);
      }
    }
  });
}
