// `xtk-analyze spread`: table 3 over runs of the crafted experiment
// (tests/data/analysis/exp), one of them changed so that its congestion point
// moves; figures checked against each run's own table 3, and the tool's
// usage and errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/spread.hpp"
#include "common/run_tool.hpp"
#include "common/slurp.hpp"
#include "core/error.hpp"

namespace xtk::analysis {
namespace {

namespace fs = std::filesystem;

const std::string kExperiment = std::string(XTK_ANALYSIS_DATA) + "/exp";

using xtk::testing::slurp;

void replace_in(const fs::path& file, const std::string& from, const std::string& to) {
  std::string text = slurp(file);
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  std::ofstream(file) << text;
}

nlohmann::json rows_of(const std::vector<NamedTable>& tables, const std::string& name) {
  for (const auto& t : tables) {
    if (t.name == name) return t.table.to_json();
  }
  throw std::runtime_error("no table " + name);
}

nlohmann::json row_of(const nlohmann::json& rows, const std::string& model, const std::string& profile) {
  for (const auto& r : rows) {
    if (r["model"] == model && r["profile"] == profile) return r;
  }
  throw std::runtime_error("no row " + model + " " + profile);
}

class Spread : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xtk_analysis_spread_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* run : {"run1", "run2", "run3"}) fs::copy(kExperiment, dir_ / run, fs::copy_options::recursive);
    // In run 2 one iteration of the toy's consistent step 5 is slower on two
    // ranks (13.1 ms instead of 8.3 ms): the flat region ends a step earlier,
    // and the point, on the same step, has more data per iteration.
    const fs::path file = dir_ / "run2" / "toy-consistent-05" / "iterations.csv";
    replace_in(file, "0,4,1700713000031680000,1700713000040000000,8320.000",
               "0,4,1700713000031680000,1700713000040000000,13120.000");
    replace_in(file, "1,4,1700713000031680000,1700713000039990000,8310.000",
               "1,4,1700713000031680000,1700713000039990000,13110.000");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<Experiment> experiments(std::initializer_list<const char*> names) const {
    std::vector<Experiment> all;
    for (const char* name : names) all.push_back(load_experiment((dir_ / name).string(), {}));
    return all;
  }
  std::vector<RunPoints> runs(std::initializer_list<const char*> names) const {
    std::vector<RunPoints> all;
    for (const auto& e : experiments(names)) all.push_back(run_points(e, {}));
    return all;
  }
  fs::path dir_;
};

}  // namespace

TEST_F(Spread, EachRunsPointThenTheirMedianAndRange) {
  const auto tables = spread_tables(runs({"run1", "run2", "run3"}));
  ASSERT_EQ(tables.size(), 2u);

  // Each run's rows are its own table 3's.
  const auto per_run = rows_of(tables, "congestion_point_runs");
  ASSERT_EQ(per_run.size(), 9u);  // three series in each of three runs
  std::vector<double> consistent_diff;
  for (const auto& e : experiments({"run1", "run2", "run3"})) {
    const auto own = rows_of(make_tables(e, {}), "congestion_point");
    for (const auto& mine : own) {
      bool found = false;
      for (const auto& r : per_run) {
        if (r["run"] != e.dir || r["model"] != mine["model"] || r["profile"] != mine["profile"]) continue;
        found = true;
        EXPECT_EQ(r["status"], mine["status"]);
        for (const char* column : {"load_gbps", "mean_us", "diff_pct", "intersection_diff_pct", "theory_bytes"}) {
          EXPECT_EQ(r[column].dump(), mine[column].dump()) << e.dir << " " << column;
        }
      }
      EXPECT_TRUE(found) << e.dir << " " << mine["model"] << " " << mine["profile"];
    }
    consistent_diff.push_back(row_of(own, "toy", "consistent")["diff_pct"].get<double>());
  }
  // Run 2's point has more data per iteration: 25 % over D in runs 1 and 3, more in run 2.
  EXPECT_NEAR(consistent_diff[0], 25.0, 1e-9);
  EXPECT_NEAR(consistent_diff[2], 25.0, 1e-9);
  EXPECT_GT(consistent_diff[1], 30.0);

  const auto spread = rows_of(tables, "congestion_point_spread");
  ASSERT_EQ(spread.size(), 3u);
  const auto toy = row_of(spread, "toy", "consistent");
  EXPECT_EQ(toy["runs"], 3);
  EXPECT_EQ(toy["points"], 3);
  EXPECT_NEAR(toy["diff_pct_median"].get<double>(), 25.0, 1e-9);
  EXPECT_NEAR(toy["diff_pct_min"].get<double>(), 25.0, 1e-9);
  EXPECT_NEAR(toy["diff_pct_max"].get<double>(), consistent_diff[1], 1e-9);
  for (const char* column : {"load_gbps_median", "load_gbps_min", "load_gbps_max"}) {
    EXPECT_NEAR(toy[column].get<double>(), 5.0, 1e-9) << column;
  }
  EXPECT_NEAR(toy["theory_bytes"].get<double>(), 4e6, 1e-6);
  // The toy's burst series has no point in any run: counted, no figures.
  const auto burst = row_of(spread, "toy", "burst");
  EXPECT_EQ(burst["runs"], 3);
  EXPECT_EQ(burst["points"], 0);
  EXPECT_TRUE(std::isnan(burst["diff_pct_median"].get<double>()));

  // Under the table, for people: the median and range as multiples of D.
  const auto& notes = tables[1].notes;
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_NE(std::find(notes.begin(), notes.end(),
                      "toy burst: no run of 3 found a congestion point (congestion_point_runs says why)"),
            notes.end());
  bool told = false;
  for (const auto& n : notes) {
    told = told || n.rfind(
                       "toy consistent: 3 of 3 runs found a point; data per iteration there 1.25 times D "
                       "(median; 1.25-",
                       0) == 0;
  }
  EXPECT_TRUE(told) << ::testing::PrintToString(notes);

  // Two runs: the median lies between them.
  const auto two =
      row_of(rows_of(spread_tables(runs({"run1", "run2"})), "congestion_point_spread"), "toy", "consistent");
  EXPECT_NEAR(two["diff_pct_median"].get<double>(), (25.0 + consistent_diff[1]) / 2, 1e-9);
}

TEST_F(Spread, RunsOfAnotherExperimentAreRefused) {
  // Run 3's toy is a model of another size: its D differs.
  for (const auto& entry : fs::directory_iterator(dir_ / "run3")) {
    if (entry.path().filename().string().rfind("toy-", 0) == 0) {
      replace_in(entry.path() / "run.json", "\"params\": 1000000,", "\"params\": 2000000,");
    }
  }
  try {
    spread_tables(runs({"run1", "run3"}));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        (dir_ / "run3").string() + ": toy's theoretical data per iteration is 8000000 bytes here and 4000000 in " +
            (dir_ / "run1").string() + ": the runs are not of one experiment (model, ranks and emulation must agree)");
  }
}

// A run whose step data stayed elsewhere (a cluster's scratch, the device)
// comes as the tables its `xtk-analyze tables -o DIR` wrote: the spread reads
// its congestion_point.csv, and gives the figures it gives from the steps.
TEST_F(Spread, RunsGivenByTheirTablesSpreadAsTheirSteps) {
  const auto run = [](const std::string& args) { return testing::run_tool_command(XTK_ANALYZE_BIN, args); };
  for (const char* name : {"run1", "run2", "run3"}) {
    const auto r = run("tables " + (dir_ / name).string() + " -o " + (dir_ / name / "tables").string());
    ASSERT_EQ(r.status, 0) << r.out;
  }
  const auto from_steps = rows_of(spread_tables(runs({"run1", "run2", "run3"})), "congestion_point_spread");
  std::vector<RunPoints> read;
  for (const char* name : {"run1", "run2", "run3"}) {
    ASSERT_TRUE(is_tables_dir((dir_ / name / "tables").string()));
    read.push_back(read_run_points((dir_ / name / "tables").string()));
  }
  EXPECT_FALSE(is_tables_dir((dir_ / "run1").string()));
  const auto from_tables = rows_of(spread_tables(read), "congestion_point_spread");
  ASSERT_EQ(from_tables.size(), from_steps.size());
  for (std::size_t i = 0; i < from_steps.size(); ++i) {
    EXPECT_EQ(from_tables[i]["points"], from_steps[i]["points"]);
    // The CSV holds table 3 to its printed precision: diff_pct to 0.1, loads to 0.001.
    // (A series without a point has none either way: nan.)
    for (const auto& [column, within] : {std::pair{"diff_pct_median", 0.051}, std::pair{"diff_pct_min", 0.051},
                                         std::pair{"diff_pct_max", 0.051}, std::pair{"load_gbps_median", 0.0006}}) {
      const double steps = from_steps[i][column].get<double>(), tables = from_tables[i][column].get<double>();
      if (std::isnan(steps)) {
        EXPECT_TRUE(std::isnan(tables)) << column;
      } else {
        EXPECT_NEAR(tables, steps, within) << column;
      }
    }
  }
  // The tool takes runs and tables mixed; the method flags only for runs.
  auto r = run("spread " + (dir_ / "run1").string() + " " + (dir_ / "run2" / "tables").string() + " --csv");
  EXPECT_EQ(r.status, 0) << r.out;
  r = run("spread " + (dir_ / "run1").string() + " " + (dir_ / "run2" / "tables").string() + " --tangent-points 3");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find((dir_ / "run2" / "tables").string() + " holds a run's tables, computed with their own method"),
            std::string::npos)
      << r.out;
  // A damaged file is named with its line.
  replace_in(dir_ / "run3" / "tables" / "congestion_point.csv", "toy,consistent,ok,", "toy,consistent,\"ok,");
  try {
    read_run_points((dir_ / "run3" / "tables").string());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "run3" / "tables" / "congestion_point.csv").string() + ":"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("a quoted field does not close"), std::string::npos) << e.what();
  }
}

TEST_F(Spread, CommandLine) {
  const auto run = [](const std::string& args) { return testing::run_tool_command(XTK_ANALYZE_BIN, args); };
  auto r = run("spread " + (dir_ / "run1").string());
  EXPECT_EQ(r.status, 2);
  const std::string one = (dir_ / "run1").string();
  EXPECT_NE(
      r.out.find("spread: one run given, and " + one + " holds no repetitions (" + one + "/rep1, " + one +
                 "/rep2, ...); give two runs or more (one run's point is table 3 of xtk-analyze tables " + one + ")"),
      std::string::npos)
      << r.out;
  // One experiment of repetitions: all its repK/, in order.
  for (const char* rep : {"rep1", "rep2", "rep3"}) {
    fs::create_directories(dir_ / "reps");
    fs::copy(dir_ / (std::string("run") + rep[3]), dir_ / "reps" / rep, fs::copy_options::recursive);
  }
  r = run("spread " + (dir_ / "reps").string() + " --csv");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const char* rep :
       {"/reps/rep1,toy,consistent,ok", "/reps/rep2,toy,consistent,ok", "/reps/rep3,toy,consistent,ok"}) {
    EXPECT_NE(r.out.find(dir_.string() + rep), std::string::npos) << rep << "\n" << r.out;
  }
  r = run("spread " + (dir_ / "run1").string() + " " + (dir_ / "run2").string() + " --tangent-points 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--tangent-points: a tangent needs 2 points or more"), std::string::npos) << r.out;
  r = run("spread " + (dir_ / "run1").string() + " " + (dir_ / "nope").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("xtk-analyze: error: " + (dir_ / "nope").string() + ": not a directory"), std::string::npos)
      << r.out;

  r = run("spread " + (dir_ / "run1").string() + " " + (dir_ / "run2").string() + " " + (dir_ / "run3").string() +
          " -o " + (dir_ / "out").string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("== 3s. Congestion point over 3 runs: median, least and most (congestion_point_spread)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# note: toy consistent: 3 of 3 runs found a point"), std::string::npos) << r.out;
  const std::string csv = slurp(dir_ / "out" / "congestion_point_spread.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "model,profile,runs,points,load_gbps_median,load_gbps_min,load_gbps_max,diff_pct_median,diff_pct_min,"
            "diff_pct_max,intersection_diff_pct_median,intersection_diff_pct_min,intersection_diff_pct_max,"
            "emulated_load_gbps_median,emulated_load_gbps_min,emulated_load_gbps_max,theory_bytes");
  EXPECT_TRUE(fs::exists(dir_ / "out" / "congestion_point_runs.csv"));

  r = run("spread " + (dir_ / "run1").string() + " " + (dir_ / "run2").string() + " --json");
  EXPECT_EQ(r.status, 0) << r.out;
  const auto doc = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(doc["tables"]["congestion_point_runs"].size(), 6u);
  EXPECT_EQ(doc["tables"]["congestion_point_spread"].size(), 3u);
}

}  // namespace xtk::analysis
