// The tables of the crafted experiment tests/data/analysis/exp (written by
// make_crafted.py): hand-checked figures, then every table against its golden
// CSV in tests/data/analysis/golden. After a deliberate change of output,
// regenerate the golden files with XTK_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "analysis/tables.hpp"
#include "common/slurp.hpp"
#include "core/error.hpp"

namespace xtk::analysis {
namespace {

namespace fs = std::filesystem;

const std::string kData = XTK_ANALYSIS_DATA;
const std::string kExperiment = kData + "/exp";

const Experiment& crafted() {
  static const Experiment e = load_experiment(kExperiment, {});
  return e;
}

const Step& step(const std::string& model, const std::string& profile, std::uint64_t index) {
  for (const auto& s : crafted().steps) {
    if (s.info.model == model && s.info.profile == profile && s.info.step == index) return s;
  }
  throw std::runtime_error("no such step");
}

std::string csv_of(const NamedTable& t) {
  std::ostringstream out;
  t.table.write_csv(out);
  return out.str();
}

const NamedTable& table(const std::vector<NamedTable>& tables, const std::string& name) {
  for (const auto& t : tables) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no table " + name);
}

using xtk::testing::slurp;

std::string error_of(const std::string& dir) {
  try {
    load_experiment(dir, {});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A copy of two steps of the crafted experiment to break.
class BrokenExperiment : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xtk_analysis_tables_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* s : {"toy-none-00", "toy-consistent-01"}) {
      fs::copy(fs::path(kExperiment) / s, dir_ / s, fs::copy_options::recursive);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  void edit(const std::string& file, const std::string& from, const std::string& to) {
    std::string text = slurp(dir_ / file);
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(dir_ / file) << text;
  }
  fs::path dir_;
};

// Table 3 of a copy of the crafted experiment whose `step` directory's
// iterations file went through `edit`.
NamedTable congestion_after(const std::string& step, const std::function<std::string(const std::string&)>& edit) {
  const fs::path dir = fs::temp_directory_path() / ("xtk_analysis_edited_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(kExperiment, dir, fs::copy_options::recursive);
  const fs::path file = dir / step / "iterations.csv";
  const std::string text = edit(slurp(file));
  std::ofstream(file) << text;
  NamedTable named = table(make_tables(load_experiment(dir.string(), {}), {}), "congestion_point");
  fs::remove_all(dir);
  return named;
}

}  // namespace

TEST(AnalysisTables, StepsAndLoadSources) {
  const auto& e = crafted();
  ASSERT_EQ(e.steps.size(), 16u);
  // Zero load first within a model, then by profile and requested load.
  EXPECT_EQ(e.steps[0].info.model, "resnet50");
  EXPECT_EQ(e.steps[0].info.profile, "none");
  EXPECT_EQ(e.steps[4].info.model, "toy");
  EXPECT_EQ(e.steps[4].info.profile, "none");
  EXPECT_EQ(step("toy", "consistent", 1).load_source, LoadSource::counters);  // with a slow sample
  EXPECT_EQ(step("toy", "consistent", 3).load_source, LoadSource::trace);
  EXPECT_EQ(step("toy", "consistent", 4).load_source, LoadSource::flows);
  EXPECT_EQ(step("toy", "consistent", 6).load_source, LoadSource::requested);
  EXPECT_EQ(step("toy", "none", 0).load_source, LoadSource::none);
  for (int k : {1, 2, 3, 4, 5, 7, 9}) {
    EXPECT_NEAR(step("toy", "consistent", k).measured_load_bps, k * 1e9, 1e-3) << k;
  }
  // Flow records without the realtime zero: 1.25 MB flows every 1.25 ms
  // lasting 1 ms, measured over first start to last end.
  EXPECT_GT(step("toy", "consistent", 8).measured_load_bps, 8e9);
  EXPECT_LT(step("toy", "consistent", 8).measured_load_bps, 8.02e9);
}

TEST(AnalysisTables, IterationStatisticsByHand) {
  // Rank 0 runs T (1 + 0.02 (i % 5 - 2)), rank 1 is 10 us faster: the job's
  // times are rank 0's, twice each of 0.96, 0.98, 1, 1.02, 1.04 times T.
  const auto& s = step("toy", "consistent", 5);
  EXPECT_EQ(s.iter_us.size(), 10u);
  EXPECT_NEAR(s.mean_us, 8000, 1e-9);
  EXPECT_NEAR(s.percentile_us(0.5), 8000, 1e-9);
  EXPECT_NEAR(s.percentile_us(0.99), 8320, 1e-9);
  EXPECT_NEAR(s.stdev_us, 8000 * std::sqrt(0.008 / 9), 1e-9);
  EXPECT_NEAR(s.cv, std::sqrt(0.008 / 9), 1e-12);
  EXPECT_NEAR(s.bytes_per_rank_iter, 4e6, 1e-9);
  EXPECT_TRUE(std::isnan(step("resnet50", "none", 0).bytes_per_rank_iter));  // the harness counted no bytes

  TablesOptions warm;
  warm.step.warmup = 4;  // toy steps have 10 iterations per rank, resnet50 steps 5
  const auto e = load_experiment(kExperiment, warm);
  for (const auto& st : e.steps) EXPECT_EQ(st.iter_us.size(), st.info.model == "toy" ? 6u : 1u) << st.info.dir;
  warm.step.warmup = 5;
  try {
    load_experiment(kExperiment, warm);
    ADD_FAILURE() << "no error";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("no iterations (after dropping 5 warm-up iterations per rank)"),
              std::string::npos);
  }
}

TEST(AnalysisTables, FiguresByHand) {
  const auto tables = make_tables(crafted(), {});
  const auto theory = table(tables, "theory").table.to_json();
  ASSERT_EQ(theory.size(), 2u);
  // resnet50 from configs/models/params.csv on 4 ranks: D = 1.5 * 25,557,032 * 4;
  // zero-load time 180 ms, so 153,342,192 * 8 / 0.18 s = 6.815 Gbit/s.
  EXPECT_EQ(theory[0]["model"], "resnet50");
  EXPECT_EQ(theory[0]["params_source"], "configs/models/params.csv");
  EXPECT_DOUBLE_EQ(theory[0]["data_per_iter_bytes"].get<double>(), 153'342'192.0);
  EXPECT_NEAR(theory[0]["required_gbps"].get<double>(), 153'342'192.0 * 8 / 0.18 / 1e9, 1e-9);
  // toy: 1e6 params x 4 bytes on 2 ranks, D = 4e6 bytes; 32 Mbit in 8 ms = 4 Gbit/s.
  EXPECT_DOUBLE_EQ(theory[1]["data_per_iter_bytes"].get<double>(), 4e6);
  EXPECT_DOUBLE_EQ(theory[1]["measured_bytes_per_iter"].get<double>(), 4e6);
  EXPECT_NEAR(theory[1]["required_gbps"].get<double>(), 4.0, 1e-9);

  // toy / consistent: flat at 8000 us up to 5 Gbit/s; tangent through
  // (6, 10000) and (7, 13000) meets it at 16/3; the nearest step is 5, where
  // 5 Gbit/s are available for 8 ms: 5e6 bytes, 25 % above D.
  const auto cp = table(tables, "congestion_point").table.to_json();
  ASSERT_EQ(cp.size(), 3u);
  EXPECT_EQ(cp[2]["profile"], "consistent");
  EXPECT_EQ(cp[2]["status"], "ok");
  EXPECT_EQ(cp[2]["flat_points"], 6);
  EXPECT_NEAR(cp[2]["intersection_load_gbps"].get<double>(), 16.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(cp[2]["step"].get<double>(), 5);
  EXPECT_NEAR(cp[2]["data_per_iter_bytes"].get<double>(), 5e6, 1e-3);
  EXPECT_NEAR(cp[2]["diff_pct"].get<double>(), 25.0, 1e-9);
  // At the knee itself: 10 - 16/3 = 14/3 Gbit/s left for the flat line's 8 ms,
  // 4.667e6 bytes, a sixth above D.
  EXPECT_NEAR(cp[2]["intersection_data_per_iter_bytes"].get<double>(), 14.0 / 3 * 1e9 / 8 * 0.008, 1e-3);
  EXPECT_NEAR(cp[2]["intersection_diff_pct"].get<double>(), 100.0 / 6, 1e-9);
  EXPECT_EQ(cp[1]["status"], "only the last step is congested: a tangent needs 2 points");  // burst: 3 steps
  // Step 6's iterations are 1.25 times the flat steps' (9600-10400 us): its
  // median, like its mean, is 25 % above the flat line's 8000.
  EXPECT_NEAR(cp[2]["first_congested_p50_pct"].get<double>(), 25.0, 1e-9);

  // Most congested step 9: 1 Gbit/s available; the job moves 4e6 B per 40 ms = 0.8 Gbit/s.
  const auto bw = table(tables, "bandwidth").table.to_json();
  EXPECT_EQ(bw[2]["step"], 9);
  EXPECT_NEAR(bw[2]["ideal_gbps"].get<double>(), 0.8, 1e-9);
  EXPECT_NEAR(bw[2]["spare_gbps"].get<double>(), 0.2, 1e-9);
  EXPECT_EQ(bw[2]["saturated_steps"], 5);

  // Light (30 %) and heavy (80 %) across the two profiles of toy.
  const auto lh = table(tables, "light_heavy").table.to_json();
  int toy_rows = 0;
  for (const auto& row : lh) {
    if (row["model"] != "toy") continue;
    ++toy_rows;
    if (row["level"] == "heavy" && row["profile"] == "burst") {
      EXPECT_NEAR(row["mean_slowdown"].get<double>(), 30000.0 / 8000, 1e-9);
    }
  }
  EXPECT_EQ(toy_rows, 4);

  // Both toy profiles at burst's heaviest load (8.0 Gbit/s): burst's step 2 as
  // measured; consistent's between its steps 7 (7.0, 13 ms) and 8 (8.01, 20 ms)
  // by the law of its best fit (n = 1/2, C = 10 Gbit/s; table 5): ln t linear in
  // u = (C - x)^-n, exp(ln 13000 + f (ln 20000 - ln 13000)), f = (u(8.0) - u(7.0)) /
  // (u(8.01) - u(7.0)); linear in x itself it would read 0.15 % higher.
  const double x = step("toy", "burst", 2).measured_load_bps, x7 = step("toy", "consistent", 7).measured_load_bps,
               x8 = step("toy", "consistent", 8).measured_load_bps;
  const auto fits = table(tables, "fits").table.to_json();
  EXPECT_EQ(fits[7]["profile"], "consistent");
  EXPECT_DOUBLE_EQ(fits[7]["n"].get<double>(), 0.5);
  EXPECT_EQ(fits[7]["best"], "yes");
  const auto u = [](double load) { return 1 / std::sqrt(10e9 - load); };
  const double f = (u(x) - u(x7)) / (u(x8) - u(x7));
  const auto eq = table(tables, "equal_load").table.to_json();
  ASSERT_EQ(eq.size(), 3u);
  EXPECT_EQ(eq[1]["profile"], "burst");
  EXPECT_NEAR(eq[1]["load_gbps"].get<double>(), x / 1e9, 1e-12);
  EXPECT_NEAR(eq[1]["mean_us"].get<double>(), 30000.0, 1e-6);
  EXPECT_EQ(eq[2]["between_steps"], "7-8");
  EXPECT_NEAR(eq[2]["mean_us"].get<double>(), std::exp(std::log(13000.0) + f * std::log(20000.0 / 13000)), 1e-6);
  EXPECT_LT(eq[2]["mean_us"].get<double>(),
            std::exp(std::log(13000.0) + (x - x7) / (x8 - x7) * std::log(20000.0 / 13000)) * 0.999);
  EXPECT_NEAR(eq[2]["mean_slowdown"].get<double>(), eq[2]["mean_us"].get<double>() / 8000, 1e-12);

  // Trace steps: node0 shares the bottleneck and carries the cross traffic;
  // both send 4e6 B per 8 ms iteration = 4 Gbit/s at step 3.
  const auto nodes = table(tables, "node_bandwidth").table.to_json();
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0]["node"], "node0");
  EXPECT_EQ(nodes[0]["shares_bottleneck"], "yes");
  EXPECT_NEAR(nodes[0]["train_tx_gbps"].get<double>(), 4.0, 1e-9);
  EXPECT_NEAR(nodes[0]["cross_gbps"].get<double>(), 3.0, 1e-9);
  EXPECT_EQ(nodes[1]["shares_bottleneck"], "no");
  EXPECT_NEAR(nodes[1]["cross_gbps"].get<double>(), 0.0, 1e-12);

  const auto& cdf = table(tables, "iteration_cdf");
  EXPECT_TRUE(cdf.bulky);
  EXPECT_EQ(cdf.table.rows(), 16u * 102);
}

TEST(AnalysisTables, GoldenFiles) {
  const auto tables = make_tables(crafted(), {});
  ASSERT_EQ(tables.size(), table_names().size());
  const fs::path golden = fs::path(kData) / "golden";
  const bool update = std::getenv("XTK_UPDATE_GOLDEN") != nullptr;
  for (const auto& t : tables) {
    const auto path = golden / (t.name + ".csv");
    if (update) {
      fs::create_directories(golden);
      std::ofstream(path) << csv_of(t);
      continue;
    }
    ASSERT_TRUE(fs::exists(path)) << path << " is missing: run with XTK_UPDATE_GOLDEN=1";
    EXPECT_EQ(csv_of(t), slurp(path)) << "table " << t.name << " differs from " << path;
  }
}

TEST(AnalysisTables, FirstCongestedStepByItsMedian) {
  // One long iteration (13.12 ms among ten of 7.68-8.32) lifts the last flat
  // step's mean 6 % above the flat line, past the 5 % tolerance, and ends the
  // flat region there; its median stays on the line, and the column says so.
  const auto named = congestion_after("toy-consistent-05", [](const std::string& original) {
    std::string text = original;
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"0,4,1700713000031680000,1700713000040000000,8320.000",
                                              "0,4,1700713000031680000,1700713000040000000,13120.000"},
          {"1,4,1700713000031680000,1700713000039990000,8310.000",
           "1,4,1700713000031680000,1700713000039990000,13110.000"}}) {
      const auto at = text.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      if (at != std::string::npos) text.replace(at, from.size(), to);
    }
    // The long iteration's rank counted a retransmission timeout on its connections.
    std::string counted;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line == "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes") {
        line += ",tcp_retransmits,tcp_timeouts,tcp_rwnd_limited_us";
      } else if (!line.empty() && line[0] != '#') {
        line += line.rfind("0,4,", 0) == 0 ? ",3,1,0" : ",,,";
      }
      counted += line + "\n";
    }
    return counted;
  });
  const auto cp = named.table.to_json();
  ASSERT_EQ(cp.size(), 3u);
  EXPECT_EQ(cp[2]["profile"], "consistent");
  EXPECT_EQ(cp[2]["flat_points"], 5);
  EXPECT_NEAR(cp[2]["first_congested_p50_pct"].get<double>(), 0.0, 1e-9);
  // People reading the table are told, under it; the other series are not named.
  ASSERT_EQ(named.notes.size(), 1u);
  EXPECT_NE(named.notes[0].find("consistent: the step at "), std::string::npos) << named.notes[0];
  EXPECT_NE(named.notes[0].find("by its mean alone: its median is 0.0 % up"), std::string::npos) << named.notes[0];
  EXPECT_NE(named.notes[0].find("; its iterations had 1 TCP retransmission timeout (table 1)"), std::string::npos)
      << named.notes[0];
  std::ostringstream shown, as_csv;
  print_tables({named}, shown, TextFormat::aligned, false);
  EXPECT_NE(shown.str().find("# note: toy consistent: "), std::string::npos) << shown.str();
  print_tables({named}, as_csv, TextFormat::csv, false);
  EXPECT_EQ(as_csv.str().find("note"), std::string::npos) << "CSV keeps to the rows";
  EXPECT_TRUE(table(make_tables(crafted(), {}), "congestion_point").notes.empty());
}

TEST(AnalysisTables, AKneeMidwayBetweenStepsIsNoted) {
  // Step 6 at 9500 us instead of 10000: the tangent through (6, 9500) and
  // (7, 13000) meets the flat 8000 at 6 - 1500/3500 = 5.571 Gbit/s, 0.429 from
  // step 6 and 0.571 from step 5, in the middle fifth between them. The seed's
  // rule reads step 6: 4 Gbit/s for 9.5 ms, 1.1875 D; step 5 would read 5
  // Gbit/s for 8 ms, 1.25 D; the knee 4.429 Gbit/s for 8 ms, 1.107 D.
  const auto named = congestion_after("toy-consistent-06", [](const std::string& original) {
    std::string scaled;
    std::istringstream lines(original);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line[0] != '#' && line.rfind("rank,", 0) != 0) {
        std::vector<std::string> f;
        std::stringstream ss(line);
        for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
        f[4] = fmt::format("{:.3f}", std::stod(f[4]) * 0.95);
        line = f[0];
        for (std::size_t i = 1; i < f.size(); ++i) line += "," + f[i];
      }
      scaled += line + "\n";
    }
    return scaled;
  });
  const auto cp = named.table.to_json();
  ASSERT_EQ(cp.size(), 3u);
  EXPECT_NEAR(cp[2]["intersection_load_gbps"].get<double>(), 6 - 1500.0 / 3500, 1e-6);
  EXPECT_DOUBLE_EQ(cp[2]["step"].get<double>(), 6);
  EXPECT_NEAR(cp[2]["diff_pct"].get<double>(), 18.75, 1e-6);
  ASSERT_EQ(named.notes.size(), 1u);
  EXPECT_EQ(named.notes[0],
            "toy consistent: the knee (5.571 Gbit/s) lies near the middle between the steps at 5.000 and 6.000 "
            "Gbit/s, so which one the seed's rule reads can change from run to run: data per iteration is 1.19 "
            "times D at the step it reads (6.000), 1.25 at the other, 1.11 at the knee (intersection_diff_pct)");
  // The crafted series' knee, 5.333, is twice as far from step 6 as from step 5: no note (above).
}

TEST(AnalysisTables, FixedFitExponentAndThreads) {
  TablesOptions options;
  options.fit_n = 2.0;
  options.threads = 1;
  const auto e = load_experiment(kExperiment, options);
  const auto fits = table(make_tables(e, options), "fits").table.to_json();
  ASSERT_EQ(fits.size(), 3u);  // one per series
  for (const auto& f : fits) {
    EXPECT_DOUBLE_EQ(f["n"].get<double>(), 2.0);
    EXPECT_EQ(f["best"], "yes");
  }
  // One thread or many: the same tables.
  EXPECT_EQ(csv_of(table(make_tables(e, {}), "iteration_time")),
            csv_of(table(make_tables(crafted(), {}), "iteration_time")));
}

TEST_F(BrokenExperiment, ErrorsNameTheFile) {
  EXPECT_EQ(error_of(dir_.string()), "(no error)");
  edit("toy-consistent-01/iterations.csv", "0,3,", "0,x,");
  EXPECT_EQ(error_of(dir_.string()),
            (dir_ / "toy-consistent-01/iterations.csv").string() + ":7: iter 'x' is not a non-negative integer");
}

TEST_F(BrokenExperiment, MalformedCounters) {
  std::ofstream(dir_ / "toy-consistent-01/counters.csv")
      << "# xtk-counters\n# format_version=1\nt_ns,realtime_ns,source,name,value,slow\n-5,1,net:eth0,tx_bytes,0,0\n";
  EXPECT_EQ(error_of(dir_.string()), (dir_ / "toy-consistent-01/counters.csv").string() +
                                         ":4: t_ns '-5' is not a non-negative integer of nanoseconds");
}

TEST_F(BrokenExperiment, ModelStepsMustAgree) {
  edit("toy-consistent-01/run.json", "\"ranks\": 2", "\"ranks\": 3");
  EXPECT_EQ(error_of(dir_.string()), (dir_ / "toy-consistent-01/run.json").string() +
                                         ": ranks 3 of model toy differs from 2 in " +
                                         (dir_ / "toy-none-00/run.json").string() + ": a model's steps share one job");
}

TEST_F(BrokenExperiment, DuplicateStepIndex) {
  fs::copy(dir_ / "toy-consistent-01", dir_ / "toy-consistent-01-again", fs::copy_options::recursive);
  EXPECT_EQ(error_of(dir_.string()),
            (dir_ / "toy-consistent-01-again/run.json").string() + ": step 1 of toy / consistent is also " +
                (dir_ / "toy-consistent-01/run.json").string() + ": each step of a series has its own index");
}

TEST_F(BrokenExperiment, RepetitionsAreAnalyzedOneAtATime) {
  for (const char* rep : {"rep1", "rep2"}) {
    fs::create_directories(dir_ / rep);
    fs::copy(dir_ / "toy-consistent-01", dir_ / rep / "toy-consistent-01", fs::copy_options::recursive);
  }
  EXPECT_NE(error_of(dir_.string())
                .find(": each step of a series has its own index (each repetition is an experiment "
                      "of its own: give " +
                      dir_.string() + "/rep1, then " + dir_.string() + "/rep2, ...; xtk-analyze spread " +
                      dir_.string() + " reads them all)"),
            std::string::npos)
      << error_of(dir_.string());
}

TEST_F(BrokenExperiment, UnknownModelNeedsParams) {
  for (const char* s : {"toy-none-00", "toy-consistent-01"}) {
    edit(std::string(s) + "/run.json", "\"params\": 1000000,", "");
  }
  const auto what = error_of(dir_.string());
  EXPECT_NE(what.find("model 'toy' is not in "), std::string::npos) << what;
  EXPECT_NE(what.find("run.json gives no \"params\" and \"bytes_per_param\""), std::string::npos) << what;
}

}  // namespace xtk::analysis

namespace xtk::analysis {
namespace {

// The toy steps as an emulated run: a model 10 times the testbed's, on a
// cluster 10 times faster (bytes), or its run dilated 10 times (time).
Experiment emulated_toy(const fs::path& dir, const std::string& method) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  const bool bytes = method == "bytes";
  const std::string block = fmt::format(
      R"("params": {}, "emulation": {{"method": "{}", "link_bps": 1e11, "byte_scale": {}, "time_scale": {}}},)",
      bytes ? 10'000'000 : 1'000'000, method, bytes ? 0.1 : 1.0, bytes ? 1.0 : 10.0);
  for (const auto& entry : fs::directory_iterator(kExperiment)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("toy-", 0) != 0) continue;
    fs::copy(entry.path(), dir / name, fs::copy_options::recursive);
    std::string text = slurp(dir / name / "run.json");
    text.replace(text.find(R"("params": 1000000,)"), 18, block);
    std::ofstream(dir / name / "run.json") << text;
  }
  return load_experiment(dir.string(), {});
}

}  // namespace

TEST(AnalysisTables, EmulatedClusterUnitsBesideTheTestbeds) {
  const fs::path dir = fs::temp_directory_path() / ("xtk_analysis_emulated_" + std::to_string(::getpid()));
  {
    // bytes: the testbed's job sent D = 4e6 B, a tenth of the cluster's 4e7 B; times are kept.
    const auto tables = make_tables(emulated_toy(dir, "bytes"), {});
    const auto theory = table(tables, "theory").table.to_json();
    EXPECT_DOUBLE_EQ(theory[0]["data_per_iter_bytes"].get<double>(), 4e6);
    EXPECT_DOUBLE_EQ(theory[0]["emulated_data_per_iter_bytes"].get<double>(), 4e7);
    EXPECT_NEAR(theory[0]["required_gbps"].get<double>(), 4.0, 1e-9);
    EXPECT_NEAR(theory[0]["emulated_required_gbps"].get<double>(), 40.0, 1e-9);
    // The congestion point of the crafted series (5 Gbit/s of 10), and the same on the 100G cluster.
    const auto cp = table(tables, "congestion_point").table.to_json();
    EXPECT_EQ(cp[1]["status"], "ok");
    EXPECT_NEAR(cp[1]["diff_pct"].get<double>(), 25.0, 1e-9);
    EXPECT_NEAR(cp[1]["emulated_load_gbps"].get<double>(), 50.0, 1e-6);
    EXPECT_NEAR(cp[1]["emulated_available_gbps"].get<double>(), 50.0, 1e-6);
    EXPECT_NEAR(cp[1]["emulated_data_per_iter_bytes"].get<double>(), 5e7, 1e-2);
    EXPECT_DOUBLE_EQ(cp[1]["emulated_theory_bytes"].get<double>(), 4e7);
    const auto it = table(tables, "iteration_time").table.to_json();
    for (const auto& row : it) {
      EXPECT_DOUBLE_EQ(row["emulated_mean_us"].get<double>(), row["mean_us"].get<double>());
      EXPECT_NEAR(row["emulated_load_gbps"].get<double>(), 10 * row["measured_load_gbps"].get<double>(), 1e-9);
    }
  }
  {
    // time: bytes are the cluster's; the testbed ran 10 times slower.
    const auto tables = make_tables(emulated_toy(dir, "time"), {});
    const auto theory = table(tables, "theory").table.to_json();
    EXPECT_DOUBLE_EQ(theory[0]["data_per_iter_bytes"].get<double>(), 4e6);
    EXPECT_DOUBLE_EQ(theory[0]["emulated_data_per_iter_bytes"].get<double>(), 4e6);
    EXPECT_NEAR(theory[0]["emulated_required_gbps"].get<double>(), 40.0, 1e-9);
    const auto cp = table(tables, "congestion_point").table.to_json();
    EXPECT_NEAR(cp[1]["emulated_data_per_iter_bytes"].get<double>(), 5e6, 1e-3);
    EXPECT_NEAR(cp[1]["emulated_available_gbps"].get<double>(), 50.0, 1e-6);
    for (const auto& row : table(tables, "iteration_time").table.to_json()) {
      EXPECT_NEAR(row["emulated_mean_us"].get<double>(), row["mean_us"].get<double>() / 10, 1e-9);
    }
  }
  // One model's steps share one emulation.
  const auto steps = emulated_toy(dir, "bytes");
  std::string text = slurp(dir / "toy-none-00" / "run.json");
  text.replace(text.find("1e11"), 4, "5e10");
  std::ofstream(dir / "toy-none-00" / "run.json") << text;
  EXPECT_NE(error_of(dir.string()).find("emulation bytes"), std::string::npos) << error_of(dir.string());
  fs::remove_all(dir);
}

// The testbed's link and counters count headers; D counts gradient bytes.
// With 80 % of each counted byte payload, the crafted congestion point's
// 5 Gbit/s left for 8 ms carry 4e6 payload bytes: D exactly.
TEST(AnalysisTables, DataPerIterationCountsPayloadOnly) {
  const fs::path dir = fs::temp_directory_path() / ("xtk_analysis_payload_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(kExperiment)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("toy-", 0) != 0) continue;
    fs::copy(entry.path(), dir / name, fs::copy_options::recursive);
    std::string text = slurp(dir / name / "run.json");
    text.replace(text.find(R"("bottleneck": {)"), 15, R"("bottleneck": {"payload_share": 0.956406869220608,)");
    std::ofstream(dir / name / "run.json") << text;
  }
  const auto e = load_experiment(dir.string(), {});
  const auto tables = make_tables(e, {});
  const auto cp = table(tables, "congestion_point").table.to_json();
  // The testbed's share (1448 / 1514). The crafted trace's frames are 1,500 bytes, one segment
  // each, so its load stays as counted.
  constexpr double kShare = 0.956406869220608;
  EXPECT_DOUBLE_EQ(cp[1]["payload_share"].get<double>(), kShare);
  EXPECT_NEAR(cp[1]["available_gbps"].get<double>(), 5.0, 1e-9);  // the link's units, as table 1
  EXPECT_NEAR(cp[1]["available_payload_gbps"].get<double>(), kShare * 5.0, 1e-9);
  EXPECT_NEAR(cp[1]["data_per_iter_bytes"].get<double>(), 4e6 / 0.8 * kShare, 1e-3);  // D is 4e6
  EXPECT_NEAR(cp[1]["diff_pct"].get<double>(), (kShare / 0.8 - 1) * 100, 1e-9);
  // At the knee (16/3 Gbit/s, from the trace: the link's units), 14/3 left, 0.956 of it payload.
  EXPECT_NEAR(cp[1]["intersection_data_per_iter_bytes"].get<double>(), kShare * 14.0 / 3 * 1e9 / 8 * 0.008, 1e-3);
  // Step 9: 1 Gbit/s left on the link, 0.956 of it payload, 0.8 of that used.
  const auto bw = table(tables, "bandwidth").table.to_json();
  EXPECT_NEAR(bw[1]["available_payload_gbps"].get<double>(), kShare, 1e-9);
  EXPECT_NEAR(bw[1]["spare_gbps"].get<double>(), kShare - 0.8, 1e-9);
  EXPECT_NEAR(bw[1]["utilisation_pct"].get<double>(), 80 / kShare, 1e-9);
  // A load from flows.csv is payload already: the payload capacity less it.
  for (const auto& st : e.steps) {
    if (st.load_source == LoadSource::flows) {
      EXPECT_NEAR(st.available_payload_bps(), kShare * 10e9 - st.measured_load_bps, 1e-3) << st.info.dir;
      EXPECT_NEAR(st.available_payload_bps_at(2e9), kShare * 10e9 - 2e9, 1e-3) << st.info.dir;
    }
  }
  fs::remove_all(dir);
}

}  // namespace xtk::analysis
