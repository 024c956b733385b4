// xtk-client: replays a flow schedule (xtk-gen format) against xtk servers,
// starting every flow at its scheduled microsecond, and records every flow.
#include <fmt/format.h>

#include <iostream>

#include "core/cli.hpp"
#include "core/open_files.hpp"
#include "core/signals.hpp"
#include "core/units.hpp"
#include "flow/client_flags.hpp"

// run_tool turns every exception into an exit status; CLI11's set-up throws only on programming errors.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "Replay a schedule of flows against xtk-server(s), each flow starting at its scheduled time, and write\n"
      "one record per flow. Or, with --bulk, run long-lived streams like iperf.\n\n"
      "  xtk-client web.csv --map h1=10.77.0.2 -o flows.csv\n"
      "  xtk-client --bulk 4 --dst 10.77.0.2 --duration 10s",
      "xtk-client"};
  app.set_version_flag("--version", std::string("xtk-client ") + XTK_VERSION);
  xtk::ClientFlags flags;
  xtk::add_flags(app, flags);

  return xtk::run_tool(app, argc, argv, [&] {
    const auto o = xtk::to_options(flags);
    xtk::prepare_open_files(xtk::kClientDescriptorTable);  // a descriptor per connection
    const auto result = xtk::run_client(o, xtk::stop_requested());
    if (flags.json) {
      const nlohmann::json j{{"options", o.to_json()},
                             {"summary", result.summary.to_json()},
                             {"records", result.records},
                             {"interrupted", result.interrupted},
                             {"start_realtime_ns", result.start_realtime_ns},
                             {"timing", result.timing},
                             {"warnings", result.warnings},
                             {"provenance", xtk::tool_provenance()}};
      std::cout << j.dump() << std::endl;
    } else {
      std::cout << "# xtk-client " << o.to_json().dump() << "\n";
      std::cout << "# timing: " << result.timing.value("description", "") << "\n";
      for (const auto& w : result.warnings) std::cout << "# warning: " << w << "\n";
      if (result.interrupted) std::cout << "# interrupted: flows not finished are recorded as cancelled\n";
      std::cout << fmt::format("# {} records written to {}\n", result.records, o.records);
      result.summary.print(std::cout);
    }
    if (result.summary.flows() > 0 && result.summary.flows_with(xtk::FlowStatus::ok) == 0 && !result.interrupted) {
      throw xtk::Error("no flow completed (see the records' error column)");
    }
  });
}
