// xtk-analyze as users run it: subcommands, exit statuses, messages, files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/run_tool.hpp"

namespace {

namespace fs = std::filesystem;

using Result = xtk::testing::ToolResult;

Result run(const std::string& args) { return xtk::testing::run_tool_command(XTK_ANALYZE_BIN, args); }

const std::string kExperiment = std::string(XTK_ANALYSIS_DATA) + "/exp";

class XtkAnalyzeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xtk_analyze_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

}  // namespace

TEST_F(XtkAnalyzeCli, HelpListsSubcommandsAndOptions) {
  auto r = run("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* word : {"tables", "predict"}) EXPECT_NE(r.out.find(word), std::string::npos) << word;
  r = run("tables --help");
  EXPECT_EQ(r.status, 0);
  for (const char* flag : {"--csv", "--json", "--markdown", "--table", "--warmup", "--fit-n", "--flat-tolerance"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(run("predict gpt --help").status, 0);
  EXPECT_EQ(run("predict dp --help").status, 0);
}

TEST_F(XtkAnalyzeCli, UsageErrorsExitTwoAndNameTheFlag) {
  auto r = run("");
  EXPECT_EQ(r.status, 2);
  r = run("tables " + kExperiment + " --table nosuch");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--table: no table 'nosuch' (tables: iteration_time, theory"), std::string::npos) << r.out;
  r = run("tables " + kExperiment + " --fit-n 3");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--fit-n: '3' is not auto, 1, 0.5 or 2"), std::string::npos) << r.out;
  r = run("tables " + kExperiment + " --light 3");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--light:"), std::string::npos) << r.out;
  r = run("predict gpt --layers 30 --hidden 64 --seq 32 --vocab 100 --global-batch 8 --pp 4 --peak 1T --bw 1G");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--layers 30 is not a multiple of --pp 4"), std::string::npos) << r.out;
  r = run("predict gpt --layers 4 --hidden 64 --seq 32 --vocab 100 --global-batch 8 --peak 1Z");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--peak: '1Z' is not FLOP/s"), std::string::npos) << r.out;
  r = run("predict dp --model nosuch --ranks 4 --compute-time 1s --bw 1G");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--model: 'nosuch' is not in"), std::string::npos) << r.out;
}

TEST_F(XtkAnalyzeCli, BadInputExitsOneWithFileAndLine) {
  auto r = run("tables " + (dir_ / "nope").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("xtk-analyze: error: " + (dir_ / "nope").string() + ": not a directory"), std::string::npos)
      << r.out;
  fs::create_directories(dir_ / "s");
  std::ofstream(dir_ / "s" / "run.json") << "{\n  \"format_version\": 1,\n  \"step\": -1\n}\n";
  r = run("tables " + dir_.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find((dir_ / "s" / "run.json").string() + ":3: \"step\" is -1: it must be a whole number >= 0"),
            std::string::npos)
      << r.out;
}

TEST_F(XtkAnalyzeCli, TablesAsTextMarkdownCsvAndJson) {
  auto r = run("tables " + kExperiment);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("== 1. Iteration time per cross-traffic step (iteration_time)"), std::string::npos);
  EXPECT_NE(r.out.find("1632 rows: written by -o DIR, --csv and --json"), std::string::npos);

  r = run("tables " + kExperiment + " --markdown --table theory");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("| model | params | bytes_per_param |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| toy | 1000000 | 4.00 | run.json | 2 | 4000000 |"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("iteration_time"), std::string::npos);

  r = run("tables " + kExperiment + " --json -o " + (dir_ / "csv").string());
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("xtk-analyze: wrote 10 CSV files to " + (dir_ / "csv").string()), std::string::npos);
  const auto doc = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(doc["format_version"], 1);
  EXPECT_EQ(doc["tables"].size(), 10u);
  EXPECT_EQ(doc["tables"]["iteration_time"].size(), 16u);
  EXPECT_TRUE(doc["tables"]["theory"][0]["measured_bytes_per_iter"].is_null());  // NaN: not measured
  for (const char* name : {"iteration_time", "theory", "congestion_point", "bandwidth", "fits", "iteration_cdf",
                           "light_heavy", "equal_load", "node_bandwidth", "stragglers"}) {
    EXPECT_TRUE(fs::exists(dir_ / "csv" / (std::string(name) + ".csv"))) << name;
  }
  std::ifstream cdf(dir_ / "csv" / "iteration_cdf.csv");
  std::string header;
  std::getline(cdf, header);
  EXPECT_EQ(header, "model,profile,step,requested_load_pct,quantile,iter_us");
  EXPECT_EQ(doc["provenance"]["command_line"][1], "tables");

  // --csv prints what -o writes, each table under its name; bulky ones too.
  r = run("tables " + kExperiment + " --csv --table theory,iteration_cdf");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("# theory\nmodel,params,bytes_per_param,", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n\n# iteration_cdf\nmodel,profile,step,requested_load_pct,quantile,iter_us\n"),
            std::string::npos);

  r = run("tables " + kExperiment + " --csv --json");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("excludes"), std::string::npos) << r.out;
}

TEST_F(XtkAnalyzeCli, Predict) {
  auto r =
      run("predict gpt --layers 4 --hidden 64 --seq 32 --vocab 1000 --global-batch 8 --tp 2 --pp 2 --dp 2 --peak 100T "
          "--bw 100G -o " +
          (dir_ / "p").string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("TP all-reduce          2       48          4096"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "p" / "traffic.csv"));
  r = run("predict dp --model resnet50 --ranks 4 --compute-time 180ms --bw 25G --bucket 25MiB --json");
  EXPECT_EQ(r.status, 0) << r.out;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["tables"]["traffic"][0]["wire_bytes"], 153342192.0);
  EXPECT_EQ(doc["tables"]["traffic"][0]["messages"], 4.0);
}
