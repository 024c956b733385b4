#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/units.hpp"

namespace xtk {

TEST(Units, Rates) {
  EXPECT_DOUBLE_EQ(parse_rate_bps("25G"), 25e9);
  EXPECT_DOUBLE_EQ(parse_rate_bps("800M"), 800e6);
  EXPECT_DOUBLE_EQ(parse_rate_bps("1.5Gbps"), 1.5e9);
  EXPECT_DOUBLE_EQ(parse_rate_bps("10gbit"), 10e9);
  EXPECT_DOUBLE_EQ(parse_rate_bps("100k"), 100e3);
  EXPECT_DOUBLE_EQ(parse_rate_bps("1e9"), 1e9);
  EXPECT_DOUBLE_EQ(parse_rate_bps("0"), 0);
  EXPECT_THROW(parse_rate_bps("fast"), UsageError);
  EXPECT_THROW(parse_rate_bps("10GB"), UsageError);  // bytes are not a rate
  EXPECT_THROW(parse_rate_bps("-1G"), UsageError);
  EXPECT_THROW(parse_rate_bps(""), UsageError);
}

TEST(Units, Sizes) {
  EXPECT_EQ(parse_bytes("1500"), 1500u);
  EXPECT_EQ(parse_bytes("64KB"), 64000u);
  EXPECT_EQ(parse_bytes("4KiB"), 4096u);
  EXPECT_EQ(parse_bytes("4MiB"), 4u << 20);
  EXPECT_EQ(parse_bytes("1GB"), 1000000000u);
  EXPECT_THROW(parse_bytes("4 parsecs"), UsageError);
  EXPECT_THROW(parse_bytes("-4"), UsageError);
}

// --sndbuf/--rcvbuf: sizes in the same units, within the kernel's int.
TEST(Units, SocketBufferSizes) {
  EXPECT_EQ(parse_socket_buffer_bytes("0"), 0);
  EXPECT_EQ(parse_socket_buffer_bytes("4MiB"), 4 << 20);
  EXPECT_EQ(parse_socket_buffer_bytes("2147483647"), 2147483647);
  EXPECT_THROW(parse_socket_buffer_bytes("2GiB"), UsageError);
  EXPECT_THROW(parse_socket_buffer_bytes("lots"), UsageError);
}

// One vocabulary for every size flag and key: the bare K, M, G are binary, as
// nccl-tests' -b/-e and DDP's bucket_cap_mb mean them; KB, MB, GB are SI.
TEST(Units, Flops) {
  EXPECT_DOUBLE_EQ(parse_flops("989T"), 989e12);
  EXPECT_DOUBLE_EQ(parse_flops("1.98PFLOPS"), 1.98e15);
  EXPECT_DOUBLE_EQ(parse_flops("312e12"), 312e12);
  EXPECT_DOUBLE_EQ(parse_flops("19.5 TFLOP/s"), 19.5e12);
  EXPECT_THROW(parse_flops("0T"), UsageError);
  EXPECT_THROW(parse_flops("1Z"), UsageError);
}

TEST(Units, BareSizeSuffixesAreBinaryAsInNcclTests) {
  EXPECT_EQ(parse_bytes("8"), 8u);
  EXPECT_EQ(parse_bytes("32M"), 33554432u);
  EXPECT_EQ(parse_bytes("1G"), 1073741824u);
  EXPECT_EQ(parse_bytes("64k"), 65536u);
  EXPECT_EQ(parse_bytes("25M"), 26214400u);  // DDP's bucket_cap_mb=25
  EXPECT_EQ(parse_bytes("32MB"), 32000000u);
  EXPECT_EQ(parse_bytes("32MiB"), 33554432u);
  EXPECT_EQ(parse_bytes("1.5K"), 1536u);
  EXPECT_THROW(parse_bytes("M"), UsageError);
  EXPECT_THROW(parse_bytes("12Q"), UsageError);
}

TEST(Units, WallClockTakesUnixSecondsAndIsoUtc) {
  EXPECT_EQ(parse_wall_clock_ns("1764126000.5"), 1764126000'500'000'000);
  EXPECT_EQ(parse_wall_clock_ns("2025-11-26T03:00:00Z"), 1764126000'000'000'000);
  EXPECT_EQ(parse_wall_clock_ns("2025-11-26T03:00:00.25+00:00"), 1764126000'250'000'000);
  EXPECT_THROW(parse_wall_clock_ns("2025-11-26T03:00:00+01:00"), UsageError);
  EXPECT_THROW(parse_wall_clock_ns("soon"), UsageError);
}

TEST(Units, Durations) {
  EXPECT_EQ(parse_duration_ns("1ms"), 1'000'000);
  EXPECT_EQ(parse_duration_ns("500us"), 500'000);
  EXPECT_EQ(parse_duration_ns("60s"), 60'000'000'000);
  EXPECT_EQ(parse_duration_ns("60"), 60'000'000'000);
  EXPECT_EQ(parse_duration_ns("250ns"), 250);
  EXPECT_EQ(parse_duration_ns("2m"), 120'000'000'000);
  EXPECT_EQ(parse_duration_ns("1.5ms"), 1'500'000);
  EXPECT_THROW(parse_duration_ns("1 fortnight"), UsageError);
  EXPECT_THROW(parse_duration_ns("ms"), UsageError);
}

TEST(Units, Loads) {
  auto fraction = parse_load("0.8");
  EXPECT_TRUE(fraction.is_fraction);
  EXPECT_DOUBLE_EQ(fraction.resolve_bps(1e9), 0.8e9);
  EXPECT_DOUBLE_EQ(parse_load("80%").resolve_bps(25e9), 20e9);
  auto absolute = parse_load("8G");
  EXPECT_FALSE(absolute.is_fraction);
  EXPECT_DOUBLE_EQ(absolute.resolve_bps(1e9), 8e9);
  EXPECT_THROW(parse_load("2"), UsageError);  // ambiguous: 2 x link or 2 bit/s?
  EXPECT_THROW(parse_load("-10%"), UsageError);
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_rate(25e9), "25.00 Gbit/s");
  EXPECT_EQ(format_rate(800e6), "800.00 Mbit/s");
  EXPECT_EQ(format_bytes(1711250), "1.63 MiB");
  EXPECT_EQ(format_bytes(100), "100 B");
  EXPECT_EQ(format_duration(1'500'000), "1.500 ms");
  EXPECT_EQ(format_duration(999), "999 ns");
}

TEST(Errors, InputErrorNamesFileAndLine) {
  InputError e("web.cdf", 7, "size 'x' is not a number");
  EXPECT_STREQ(e.what(), "web.cdf:7: size 'x' is not a number");
  EXPECT_EQ(e.line(), 7u);
  InputError whole("web.cdf", 0, "no CDF points");
  EXPECT_STREQ(whole.what(), "web.cdf: no CDF points");
}

}  // namespace xtk
