// The streaming binner (order, reordering, late packets, gaps) and the rate
// series (dense bins, moving average, histogram widths).
#include <gtest/gtest.h>

#include <vector>

#include "capture/binner.hpp"
#include "capture/rate_series.hpp"

namespace xtk::capture {
namespace {

constexpr std::int64_t kMs = 1'000'000;

struct Collected {
  std::vector<BinRow> rows;
  Binner make(std::int64_t reorder_ns) {
    return Binner(kMs, reorder_ns, [this](const BinRow& r) { rows.push_back(r); });
  }
};

TEST(CaptureBinner, RowsLeaveSortedByBinThenSeries) {
  Collected c;
  auto b = c.make(10 * kMs);
  b.add(2, 5 * kMs + 1, 100);
  b.add(0, 5 * kMs + 2, 10);
  b.add(2, 5 * kMs + 3, 100);
  b.add(1, 6 * kMs, 7);
  b.finish();
  ASSERT_EQ(c.rows.size(), 3u);
  EXPECT_EQ(c.rows[0].series, 0u);
  EXPECT_EQ(c.rows[0].bin_start_ns, 5 * kMs);
  EXPECT_EQ(c.rows[1].series, 2u);
  EXPECT_EQ(c.rows[1].bytes, 200u);
  EXPECT_EQ(c.rows[1].packets, 2u);
  EXPECT_EQ(c.rows[2].bin_start_ns, 6 * kMs);
}

TEST(CaptureBinner, OutOfOrderPacketsInsideTheWindowLandInTheirBin) {
  Collected c;
  auto b = c.make(5 * kMs);
  b.add(0, 10 * kMs, 1);
  b.add(0, 12 * kMs, 2);
  b.add(0, 10 * kMs + 5, 4);  // back to bin 10 after bin 12 was opened
  b.add(0, 9 * kMs, 8);       // before the first bin, nothing emitted yet: a bin is opened in front
  b.add(0, 11 * kMs, 16);
  b.finish();
  ASSERT_EQ(c.rows.size(), 4u);
  EXPECT_EQ(c.rows[0].bin_start_ns, 9 * kMs);
  EXPECT_EQ(c.rows[1].bin_start_ns, 10 * kMs);
  EXPECT_EQ(c.rows[1].bytes, 5u);
  EXPECT_EQ(c.rows[1].packets, 2u);
  EXPECT_EQ(c.rows[2].bytes, 16u);
  EXPECT_EQ(c.rows[3].bytes, 2u);
  EXPECT_EQ(b.late_packets(), 0u);
}

TEST(CaptureBinner, PacketsOlderThanTheWindowAreLateButCounted) {
  Collected c;
  auto b = c.make(2 * kMs);
  for (std::int64_t ms = 0; ms < 10; ++ms) b.add(0, ms * kMs, 1);
  b.add(1, 1 * kMs, 1000);  // bins up to 7 are gone
  b.finish();
  EXPECT_EQ(b.late_packets(), 1u);
  std::uint64_t total = 0;
  std::int64_t previous = -1;
  for (const auto& r : c.rows) {
    total += r.bytes;
    EXPECT_GE(r.bin_start_ns, previous);
    previous = r.bin_start_ns;
  }
  EXPECT_EQ(total, 1010u);
}

TEST(CaptureBinner, LongGapsNeedNoEmptyBins) {
  Collected c;
  auto b = c.make(100 * kMs);
  b.add(0, 0, 1);
  b.add(0, 3600LL * 1000 * kMs, 1);             // an hour later
  b.add(0, 3600LL * 1000 * kMs - 50 * kMs, 1);  // inside the window of the new bin
  b.finish();
  ASSERT_EQ(c.rows.size(), 3u);
  EXPECT_EQ(c.rows[1].bin_start_ns, 3600LL * 1000 * kMs - 50 * kMs);
  EXPECT_EQ(b.late_packets(), 0u);
}

TEST(CaptureRateSeries, DenseBinsMovingAverageAndWindowEdges) {
  std::vector<SeriesPoint> points;
  RateSeries s(kMs, 3, 0, [&](const SeriesPoint& p) { points.push_back(p); });
  s.begin(0);
  s.add(2 * kMs, 1000, 1);
  s.add(2 * kMs, 500, 1);
  s.add(5 * kMs, 3000, 2);
  s.finish(7 * kMs);
  ASSERT_EQ(points.size(), 8u);
  EXPECT_EQ(points[2].bytes, 1500u);
  EXPECT_DOUBLE_EQ(points[2].rate_bps, 1500 * 8 / 1e-3);
  EXPECT_FALSE(points[1].smoothed_bps);
  ASSERT_TRUE(points[2].smoothed_bps);
  EXPECT_DOUBLE_EQ(*points[2].smoothed_bps, 1500 * 8 / 3e-3);
  EXPECT_DOUBLE_EQ(*points[4].smoothed_bps, 1500 * 8 / 3e-3);
  EXPECT_DOUBLE_EQ(*points[5].smoothed_bps, 3000 * 8 / 3e-3);
  EXPECT_DOUBLE_EQ(*points[7].smoothed_bps, 3000 * 8 / 3e-3);
  EXPECT_EQ(points[7].bin_start_ns, 7 * kMs);
  EXPECT_EQ(s.bins(), 8u);
  EXPECT_EQ(s.histogram().count(), 6u);
}

TEST(CaptureRateSeries, AutomaticHistogramWidthsStayRound) {
  RateHistogram h;
  for (int i = 0; i <= 100; ++i) h.add(i * 1e8);  // 0 to 10 Gbit/s
  const auto buckets = h.buckets(25);
  ASSERT_LE(buckets.size(), 25u);
  const double width = buckets[0].to_bps - buckets[0].from_bps;
  EXPECT_TRUE(width == 5e8 || width == 1e9) << width;
  std::uint64_t total = 0;
  for (const auto& b : buckets) total += b.count;
  EXPECT_EQ(total, 101u);
  EXPECT_GE(buckets.back().to_bps, 1e10);
  RateHistogram fixed(1e9);
  fixed.add(2.5e9);
  ASSERT_EQ(fixed.buckets().size(), 3u);
  EXPECT_EQ(fixed.buckets()[2].count, 1u);
}

}  // namespace
}  // namespace xtk::capture
