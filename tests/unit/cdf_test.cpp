#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.hpp"
#include "workload/cdf.hpp"

namespace xtk {
namespace {

std::string cdf_path(const std::string& name) { return std::string(XTK_CDF_DIR) + "/" + name + ".cdf"; }

FlowSizeCdf parse_text(const std::string& text) {
  std::istringstream in(text);
  return FlowSizeCdf::parse(in, "test.cdf", "test");
}

// The message of the InputError that parsing `text` throws.
std::string parse_error(const std::string& text) {
  try {
    parse_text(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// Analytic mean and second moment under linear interpolation (uniform in each bin).
std::pair<double, double> moments(const FlowSizeCdf& cdf) {
  double m1 = 0, m2 = 0;
  const auto& p = cdf.points();
  for (std::size_t i = 1; i < p.size(); ++i) {
    const double w = p[i].probability - p[i - 1].probability;
    const double a = p[i - 1].size_bytes, b = p[i].size_bytes;
    m1 += w * (a + b) / 2;
    m2 += w * (a * a + a * b + b * b) / 3;
  }
  return {m1, m2};
}

}  // namespace

struct Shipped {
  const char* name;
  double mean_bytes;  // linear-interpolation means from configs/cdf/README.md
  double max_bytes;
};

class ShippedCdf : public ::testing::TestWithParam<Shipped> {};

TEST_P(ShippedCdf, LoadsWithThePublishedMean) {
  const auto& s = GetParam();
  const auto cdf = FlowSizeCdf::load_file(cdf_path(s.name));
  EXPECT_EQ(cdf.name(), s.name);
  EXPECT_NEAR(cdf.mean_bytes(), s.mean_bytes, 0.5) << s.name;
  EXPECT_EQ(cdf.max_bytes(), s.max_bytes);
  EXPECT_DOUBLE_EQ(cdf.points().back().probability, 1.0);
  for (std::size_t i = 1; i < cdf.points().size(); ++i) {
    EXPECT_GE(cdf.points()[i].size_bytes, cdf.points()[i - 1].size_bytes);
    EXPECT_GE(cdf.points()[i].probability, cdf.points()[i - 1].probability);
  }
}

TEST_P(ShippedCdf, QuantileInvertsTheCdf) {
  const auto cdf = FlowSizeCdf::load_file(cdf_path(GetParam().name));
  for (double u = 0.01; u < 1.0; u += 0.01) {
    EXPECT_NEAR(cdf.cdf_at(cdf.quantile(u)), u, 1e-9) << "u=" << u;
  }
  EXPECT_EQ(cdf.quantile(1.0), cdf.max_bytes());
}

INSTANTIATE_TEST_SUITE_P(Configs, ShippedCdf,
                         ::testing::Values(Shipped{"web-search", 1711250, 30e6},
                                           Shipped{"data-mining", 12658198.6, 1e9},
                                           Shipped{"fb-hadoop", 120420.75, 10e6},
                                           Shipped{"alibaba-storage", 40869.8, 2e6},
                                           Shipped{"google-rpc", 2891.62125, 15158197}),
                         [](const auto& test) {
                           std::string name = test.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(Cdf, WebSearchMeanIsTheNs2Figure) {
  EXPECT_DOUBLE_EQ(FlowSizeCdf::load_file(cdf_path("web-search")).mean_bytes(), 1711250.0);
}

TEST(Cdf, FormatsFractionPercentThreeColumnsCommasComments) {
  const auto fraction = parse_text("# comment\n0 0\n100 0.5\n200 1\n");
  const auto percent = parse_text("0 0\n100 50\n200 100\n");
  const auto three = parse_text("0 1 0\n100 2 0.5\n200 3 1\n");
  const auto commas = parse_text("0,0\r\n100,0.5 # trailing comment\r\n\r\n200,1\r\n");
  // A spreadsheet's save: a UTF-8 byte-order mark before the first line.
  const auto marked = parse_text(
      "\xEF\xBB\xBF"
      "0,0\r\n100,0.5\r\n200,1\r\n");
  for (const auto* c : {&fraction, &percent, &three, &commas, &marked}) {
    ASSERT_EQ(c->points().size(), 3u);
    EXPECT_DOUBLE_EQ(c->points()[1].probability, 0.5);
    EXPECT_DOUBLE_EQ(c->mean_bytes(), 100.0);
  }
}

TEST(Cdf, ImplicitZeroPointWhenTheFirstProbabilityIsAboveZero) {
  const auto cdf = parse_text("10 0.5\n20 1\n");
  ASSERT_EQ(cdf.points().size(), 3u);
  EXPECT_EQ(cdf.points()[0].size_bytes, 0);
  EXPECT_DOUBLE_EQ(cdf.mean_bytes(), 0.5 * 5 + 0.5 * 15);
}

TEST(Cdf, StepsFromRepeatedSizesAreKept) {
  // pFabric style: half of the flows are exactly 1 packet.
  const auto cdf = parse_text("1460 0\n1460 0.5\n2920 1\n");
  EXPECT_EQ(cdf.quantile(0.25), 1460);
  EXPECT_NEAR(cdf.quantile(0.75), 2190, 1e-9);
}

TEST(Cdf, EachMalformedCaseHasItsOwnError) {
  EXPECT_EQ(parse_error(""), "test.cdf: no CDF points: expected lines of 'size cdf'");
  EXPECT_EQ(parse_error("# only comments\n"), "test.cdf: no CDF points: expected lines of 'size cdf'");
  EXPECT_EQ(parse_error("0 0\nten 0.5\n"), "test.cdf:2: size 'ten' is not a number");
  EXPECT_EQ(parse_error("0 0\n10 half\n"), "test.cdf:2: probability 'half' is not a number");
  EXPECT_EQ(parse_error("0 0\n10 nan\n"), "test.cdf:2: probability 'nan' is not a number");
  EXPECT_EQ(parse_error("0 0\n10 inf\n"), "test.cdf:2: probability 'inf' is not a number");
  EXPECT_EQ(parse_error("0 0\n-10 0.5\n"), "test.cdf:2: size -10 is negative");
  EXPECT_EQ(parse_error("0 -0.1\n10 1\n"), "test.cdf:1: probability -0.1 is negative");
  EXPECT_EQ(parse_error("0 0\n10 0.5\n5 1\n"),
            "test.cdf:3: size 5 is smaller than 10 on line 2: sizes must not decrease");
  EXPECT_EQ(parse_error("0 0\n10 0.5\n20 0.4\n30 1\n"),
            "test.cdf:3: probability 0.4 is smaller than 0.5 on line 2: the CDF must not decrease");
  EXPECT_EQ(parse_error("0 0\n10 0.5\n20 0.9\n"),
            "test.cdf:3: last probability is 0.9: a CDF must end at 1 (fractions) or 100 (percents)");
  EXPECT_EQ(parse_error("0 0\n10 50\n20 99\n"),
            "test.cdf:3: last probability is 99: a CDF must end at 1 (fractions) or 100 (percents)");
  EXPECT_EQ(parse_error("0 0\n10\n"), "test.cdf:2: expected 2 columns (size cdf) or 3 (size index cdf), found 1");
  EXPECT_EQ(parse_error("0 0 0 0\n"), "test.cdf:1: expected 2 columns (size cdf) or 3 (size index cdf), found 4");
  EXPECT_EQ(parse_error("0 0\n0 1\n"), "test.cdf:2: the largest size must be above 0");
  EXPECT_EQ(parse_error("0 0\n1e20 1\n"), "test.cdf:2: size 1e+20 is above the largest flow size xtk takes, 2^53 B");
}

TEST(Cdf, MissingFileNamesThePath) {
  try {
    FlowSizeCdf::load_file("/nonexistent/x.cdf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/x.cdf: cannot open CDF file");
  }
}

TEST(Cdf, ResolvesShippedNamesAndPaths) {
  EXPECT_EQ(resolve_cdf_path(cdf_path("web-search")), cdf_path("web-search"));
  EXPECT_NE(resolve_cdf_path("google-rpc").find("google-rpc.cdf"), std::string::npos);
  EXPECT_THROW(resolve_cdf_path("no-such-workload"), UsageError);
}

// Kolmogorov-Smirnov: the empirical CDF of samples against the table's CDF.
TEST(CdfSampling, KolmogorovSmirnovAgainstTheTable) {
  for (const char* name : {"web-search", "data-mining", "google-rpc"}) {
    const auto cdf = FlowSizeCdf::load_file(cdf_path(name));
    Rng rng(7);
    constexpr std::size_t n = 200000;
    std::vector<double> samples(n);
    for (auto& s : samples) s = cdf.quantile(rng.uniform());
    std::sort(samples.begin(), samples.end());
    double d = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double f = cdf.cdf_at(samples[i]);
      d = std::max({d, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
    }
    // Critical value at alpha = 0.001 is 1.95 / sqrt(n).
    EXPECT_LT(d, 1.95 / std::sqrt(static_cast<double>(n))) << name;
  }
}

TEST(CdfSampling, WebSearchMeanWithinSamplingError) {
  const auto cdf = FlowSizeCdf::load_file(cdf_path("web-search"));
  const auto [m1, m2] = moments(cdf);
  Rng rng(11);
  constexpr int n = 1'000'000;
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(cdf.sample(rng));
  const double sigma = std::sqrt((m2 - m1 * m1) / n);
  EXPECT_NEAR(sum / n, 1711250.0, 4 * sigma);  // 4 sigma is about 0.9 %
}

TEST(CdfSampling, ScaleShrinksSizesAndSizesAreAtLeastOneByte) {
  const auto cdf = FlowSizeCdf::load_file(cdf_path("web-search"));
  Rng a(5), b(5);
  for (int i = 0; i < 1000; ++i) {
    const auto full = cdf.sample(a);
    const auto tenth = cdf.sample(b, 0.1);
    EXPECT_GE(tenth, 1u);
    EXPECT_NEAR(static_cast<double>(tenth), std::max(1.0, static_cast<double>(full) * 0.1), 1.0);
  }
}

}  // namespace xtk
