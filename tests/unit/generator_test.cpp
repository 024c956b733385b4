#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/slurp.hpp"
#include "core/error.hpp"
#include "workload/generator.hpp"

namespace xtk {
namespace {

std::shared_ptr<const FlowSizeCdf> cdf(const std::string& name) {
  return std::make_shared<FlowSizeCdf>(FlowSizeCdf::load_file(std::string(XTK_CDF_DIR) + "/" + name + ".cdf"));
}

GenConfig base(Profile profile = Profile::consistent) {
  GenConfig c;
  c.profile = profile;
  c.cdf = cdf("web-search");
  c.load_bps = 10e9;
  c.link_bps = 25e9;
  c.duration_ns = 1'000'000'000;
  c.seed = 1;
  c.sources = {"h0"};
  c.destinations = parse_host_mix("h1", "--dst");
  return c;
}

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("xtk_gen_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

using xtk::testing::slurp;

}  // namespace

TEST(Generator, SameArgumentsAndSeedGiveByteIdenticalFiles) {
  TempDir dir;
  for (auto profile : {Profile::consistent, Profile::burst, Profile::long_lived}) {
    auto c = base(profile);
    c.sources = {"a", "b"};
    c.destinations = parse_host_mix("x:2,y", "--dst");
    c.dscp = parse_dscp_mix("0:0.7,26:0.3", "--dscp");
    write_schedule(c, dir.file("1.csv"));
    write_schedule(c, dir.file("2.csv"));
    const auto first = slurp(dir.file("1.csv"));
    EXPECT_GT(first.size(), 200u);
    EXPECT_EQ(first, slurp(dir.file("2.csv"))) << profile_name(profile);
    if (profile != Profile::long_lived) {
      c.seed = 2;
      write_schedule(c, dir.file("3.csv"));
      EXPECT_NE(first, slurp(dir.file("3.csv"))) << profile_name(profile);
    }
  }
}

TEST(Generator, AddingAClassMixKeepsTheFlows) {
  auto plain = base();
  auto classed = base();
  classed.dscp = parse_dscp_mix("0:0.5,46:0.5", "--dscp");
  ScheduleGenerator a(plain), b(classed);
  Flow fa, fb;
  int n = 0;
  while (a.next(fa)) {
    ASSERT_TRUE(b.next(fb));
    ASSERT_EQ(fa.start_ns, fb.start_ns);
    ASSERT_EQ(fa.size_bytes, fb.size_bytes);
    ++n;
  }
  EXPECT_FALSE(b.next(fb));
  EXPECT_GT(n, 100);
}

TEST(Generator, SourcesMergeInStartOrderWithUniqueIds) {
  auto c = base();
  c.sources = {"a", "b", "c"};
  c.load_bps = 2e9;
  ScheduleGenerator gen(c);
  Flow f;
  std::int64_t last = -1;
  std::uint64_t id = 0;
  std::map<std::string, double> bytes;
  while (gen.next(f)) {
    ASSERT_GE(f.start_ns, last);
    last = f.start_ns;
    ASSERT_EQ(f.id, id++);  // ids count flows in start order, across sources
    bytes[std::string(f.src)] += static_cast<double>(f.size_bytes);
  }
  ASSERT_EQ(bytes.size(), 3u);
  // Each source offers the load on its own (web-search over 1 s: wide tolerance).
  for (const auto& [src, b] : bytes) EXPECT_NEAR(b * 8 / 2e9, 1.0, 0.35) << src;
}

TEST(Generator, SplitPathWritesOneFilePerSourceWithTheSameFlows) {
  TempDir dir;
  auto c = base();
  c.sources = {"a", "b"};
  const auto merged = write_schedule(c, dir.file("all.csv"));
  const auto split = write_schedule(c, dir.file("{src}.csv"));
  ASSERT_EQ(split.files.size(), 2u);
  EXPECT_EQ(split.flows, merged.flows);
  EXPECT_EQ(split.bytes, merged.bytes);
  auto reader = ScheduleReader::open(dir.file("b.csv"));
  EXPECT_EQ(reader->header().get("file_src"), "b");
  Flow f;
  std::uint64_t n = 0;
  while (reader->next(f)) {
    EXPECT_EQ(f.src, "b");
    ++n;
  }
  EXPECT_GT(n, 0u);
}

TEST(Generator, SrcTemplateWithOneSource) {
  TempDir dir;
  const auto result = write_schedule(base(), dir.file("{src}.csv"));
  ASSERT_EQ(result.files, std::vector<std::string>{dir.file("h0.csv")});
  EXPECT_TRUE(std::filesystem::exists(dir.file("h0.csv")));
}

TEST(Generator, HeaderWritesIpv6DestinationsInBrackets) {
  auto c = base();
  c.destinations = parse_host_mix("[fd00::1]:3,h2", "--dst");
  EXPECT_EQ(make_header(c).get("dst"), "[fd00::1]:3,h2:1");
  EXPECT_EQ(parse_host_mix(*make_header(c).get("dst"), "--dst").values(), c.destinations.values());
}

TEST(Generator, HeaderRecordsTheParameters) {
  auto c = base(Profile::burst);
  const auto h = make_header(c);
  EXPECT_EQ(h.get("profile"), "burst");
  EXPECT_EQ(h.get("cdf"), "web-search");
  EXPECT_EQ(h.get("cdf_mean_bytes"), "1711250");
  EXPECT_EQ(h.get("load_bps_per_src"), "10000000000");
  EXPECT_EQ(h.get("burst_period_ns"), "10000000");
  EXPECT_EQ(h.get("burst_width_ns"), "1000000");
  EXPECT_EQ(h.get("burst_height"), "3");
  EXPECT_FALSE(h.has_dscp);
  EXPECT_FALSE(h.has_rate);
  EXPECT_TRUE(make_header(base(Profile::long_lived)).has_rate);
}

TEST(Generator, RateMixAndLongLivedCaps) {
  auto c = base();
  c.rate = parse_rate_mix("100M:1,0:1", "--flow-rate");
  ScheduleGenerator gen(c);
  Flow f;
  std::set<std::uint64_t> rates;
  while (gen.next(f)) rates.insert(f.rate_bps);
  EXPECT_EQ(rates, (std::set<std::uint64_t>{0, 100'000'000}));
  auto ll = base(Profile::long_lived);
  ll.long_lived_flows = 5;
  ll.rate = c.rate;
  EXPECT_THROW(ScheduleGenerator{ll}, UsageError);
}

TEST(Generator, RejectsConfigsThatCannotWork) {
  auto c = base();
  c.duration_ns = 0;
  EXPECT_THROW(ScheduleGenerator{c}, UsageError);
  c = base();
  c.sources.clear();
  EXPECT_THROW(ScheduleGenerator{c}, UsageError);
  c = base(Profile::burst);
  c.burst.height = 20;
  EXPECT_THROW(ScheduleGenerator{c}, UsageError);
  c = base(Profile::long_lived);
  c.long_lived_flows = 0;
  EXPECT_THROW(ScheduleGenerator{c}, UsageError);
  c = base(Profile::long_lived);
  c.long_lived_flows = 3;
  c.stagger_ns = c.duration_ns / 2;  // the third flow would start at the end
  EXPECT_THROW(ScheduleGenerator{c}, UsageError);
}

}  // namespace xtk
