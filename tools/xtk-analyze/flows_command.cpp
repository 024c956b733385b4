#include "flows_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "core/cli.hpp"
#include "core/provenance.hpp"
#include "core/report.hpp"
#include "core/units.hpp"
#include "flow/summary.hpp"
#include "formats/csv_file.hpp"
#include "formats/flow_records.hpp"

namespace {

struct FlowsFlags {
  std::vector<std::string> files;
  std::string link;
  bool json = false;
};

void run_flows(const FlowsFlags& f) {
  xtk::SummaryInputs inputs;
  if (!f.link.empty()) inputs.link_bps = xtk::parse_flag("--link", f.link, xtk::parse_rate_bps);
  xtk::ClientSummary merged(inputs);
  xtk::Table files({{"file"}, {"flows"}, {"ok"}, {"failed"}, {"timeout"}, {"cancelled"}, {"last_end_s", 3}});
  std::int64_t last_end = 0;
  for (std::size_t i = 0; i < f.files.size(); ++i) {
    if (std::find(f.files.begin(), f.files.begin() + static_cast<std::ptrdiff_t>(i), f.files[i]) !=
        f.files.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw xtk::UsageError(fmt::format("{} is given twice: its flows would count twice", f.files[i]));
    }
  }
  for (const auto& path : f.files) {
    xtk::ClientSummary one(inputs);
    std::int64_t file_end = 0;
    xtk::read_flow_records(xtk::read_text_file(path, "flow records"), path, [&](const xtk::FlowRecord& r) {
      merged.add(r);
      one.add(r);
      file_end = std::max(file_end, r.end_ns);
    });
    last_end = std::max(last_end, file_end);
    files.add_row({path, one.flows(), one.flows_with(xtk::FlowStatus::ok), one.flows_with(xtk::FlowStatus::failed),
                   one.flows_with(xtk::FlowStatus::timeout), one.flows_with(xtk::FlowStatus::cancelled),
                   static_cast<double>(file_end) / 1e9});
  }
  // The clients share the schedule's time zero (--start-at): the merged run ends with the last flow.
  merged.set_elapsed_ns(last_end);
  if (f.json) {
    std::cout << xtk::with_provenance(
                     {{"format_version", 1}, {"files", files.to_json()}, {"summary", merged.to_json()}})
                     .dump()
              << '\n';
    return;
  }
  files.print(std::cout);
  std::cout << fmt::format("# merged: {} flows from {} files\n", merged.flows(), f.files.size());
  merged.print(std::cout);
}

}  // namespace

std::function<void()> add_flows_command(CLI::App& app) {
  auto flags = std::make_shared<FlowsFlags>();
  auto* flows = app.add_subcommand(
      "flows", "flow-record files of several clients (fan-in) merged into one summary, as xtk-client prints its own");
  flows->add_option("records", flags->files, "flow-record files (CSV or JSON Lines), one per client")->required();
  flows->add_option("--link", flags->link, "link rate for the ideal FCT in slowdowns (default: no slowdown)");
  flows->add_flag("--json", flags->json, "one JSON document: per-file counts and the merged summary");
  return [flows, flags] {
    if (flows->parsed()) run_flows(*flags);
  };
}
