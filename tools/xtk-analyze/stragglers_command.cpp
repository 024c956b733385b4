#include "stragglers_command.hpp"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "analysis/output.hpp"
#include "analysis/stragglers.hpp"
#include "core/cli.hpp"
#include "core/error.hpp"

namespace {

namespace an = xtk::analysis;

struct StragglersFlags {
  std::vector<std::string> files;
  std::uint64_t ranks = 0, warmup = 0;
  an::OutputFlags out;
};

void run_stragglers(const StragglersFlags& f) {
  const auto s = an::read_stragglers(f.files, f.ranks, f.warmup);
  if (s.calls == 0) {
    throw xtk::InputError(f.files.front(), 0,
                          fmt::format("no call was recorded by every rank (after {} warm-up iterations): give every "
                                      "rank's file",
                                      f.warmup));
  }
  xtk::Table table(an::straggler_columns({}));
  an::add_straggler_rows(table, {}, s);
  an::emit({{"stragglers", an::kStragglerTableTitle, std::move(table)}}, f.out, true);
}

}  // namespace

std::function<void()> add_stragglers_command(CLI::App& app) {
  auto flags = std::make_shared<StragglersFlags>();
  auto* cmd = app.add_subcommand(
      "stragglers",
      "which rank arrived last at each collective, by how much, and the share of the iteration lost waiting, from "
      "one job's collectives files (xtk-collective train --collectives-file)");
  cmd->add_option("files", flags->files, "collectives files, e.g. collectives-*.csv (a rank lives in one file)")
      ->required();
  cmd->add_option("--ranks", flags->ranks, "the job's ranks (default: the ranks found in the files)");
  cmd->add_option("--warmup", flags->warmup, "iterations left out at the start")->capture_default_str();
  an::add_flags(*cmd, flags->out);
  return [cmd, flags] {
    if (cmd->parsed()) run_stragglers(*flags);
  };
}
