// Sizes, bandwidths, types and the data check: busbw is nccl-tests'
// algbw x 2(n-1)/n, sizes step like -b/-e/-f/-i, and the check pattern's
// expected values are exact for every type and reduction.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "collective/dtype.hpp"
#include "collective/pattern.hpp"
#include "collective/sizes.hpp"
#include "collective/time_stats.hpp"
#include "core/error.hpp"
#ifdef XTK_HAVE_GLOO
#include "collective/gloo_reduce.hpp"
#endif

namespace xtk::collective {
namespace {

TEST(CollectiveSizes, SweepStepsLikeNcclTests) {
  EXPECT_EQ(sweep_sizes(8, 128, 2, 0, 4), (std::vector<std::uint64_t>{8, 16, 32, 64, 128}));
  EXPECT_EQ(sweep_sizes(1 << 20, 3 << 20, 1, 1 << 20, 4), (std::vector<std::uint64_t>{1 << 20, 2 << 20, 3 << 20}));
  EXPECT_EQ(sweep_sizes(32, 32, 1, 0, 4), (std::vector<std::uint64_t>{32}));
  // Rounded down to whole elements, empty sizes dropped, duplicates merged.
  EXPECT_EQ(sweep_sizes(1, 16, 2, 0, 8), (std::vector<std::uint64_t>{8, 16}));
  EXPECT_EQ(sweep_sizes(10, 20, 1, 1, 8), (std::vector<std::uint64_t>{8, 16}));
  EXPECT_THROW(sweep_sizes(64, 8, 2, 0, 4), UsageError);
  EXPECT_THROW(sweep_sizes(8, 64, 1, 0, 4), UsageError);
}

TEST(CollectiveSizes, BusBandwidthIsAlgbwTimesTwoNMinusOneOverN) {
  EXPECT_DOUBLE_EQ(all_reduce_bus_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(all_reduce_bus_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(all_reduce_bus_factor(3), 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(all_reduce_bus_factor(8), 1.75);
  // 1 GB in 10 ms: algbw 100 GB/s; on 8 ranks busbw 175 GB/s.
  EXPECT_DOUBLE_EQ(algbw_gbyte_s(1'000'000'000, 0.01), 100.0);
  EXPECT_DOUBLE_EQ(busbw_gbyte_s(1'000'000'000, 0.01, 8), 175.0);
  EXPECT_DOUBLE_EQ(busbw_gbyte_s(1000, 0.0, 8), 0.0);
}

TEST(CollectiveTypes, NamesAsNcclTestsAndPyTorch) {
  EXPECT_EQ(parse_data_type("float"), DataType::float32);
  EXPECT_EQ(parse_data_type("fp16"), DataType::float16);
  EXPECT_EQ(parse_data_type("bf16"), DataType::bfloat16);
  EXPECT_EQ(parse_data_type("int"), DataType::int32);
  EXPECT_EQ(data_type_name(DataType::float16), "half");
  EXPECT_EQ(data_type_size(DataType::uint64), 8u);
  EXPECT_EQ(parse_reduce_op("avg"), ReduceOp::avg);
  EXPECT_THROW(parse_data_type("float128"), UsageError);
  EXPECT_THROW(parse_reduce_op("xor"), UsageError);
}

TEST(CollectiveTypes, HalfAndBfloat16RoundToNearestEven) {
  EXPECT_EQ(float_to_half(1.0F), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0F), 0xC000);
  EXPECT_EQ(float_to_half(65504.0F), 0x7BFF);
  EXPECT_EQ(float_to_half(1e6F), 0x7C00);                          // overflow: inf
  EXPECT_EQ(float_to_half(std::ldexp(1.0F, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_half(1.0F + std::ldexp(1.0F, -11)), 0x3C00);  // a tie goes to even
  EXPECT_EQ(float_to_half(1.0F + 3 * std::ldexp(1.0F, -11)), 0x3C02);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  for (int v = -2048; v <= 2048; ++v) EXPECT_EQ(half_to_float(float_to_half(static_cast<float>(v))), v);
  EXPECT_EQ(float_to_bfloat16(1.0F), 0x3F80);
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(3.0F)), 3.0F);
  for (int v = -256; v <= 256; ++v) EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(static_cast<float>(v))), v);
}

// Element i of a buffer of `type`, as a double.
double value_at(DataType type, const std::vector<char>& data, std::size_t i) {
  const char* at = data.data() + i * data_type_size(type);
  const auto read = [&](auto sample) {
    std::memcpy(&sample, at, sizeof sample);
    return sample;
  };
  switch (type) {
    case DataType::float16:
      return half_to_float(read(std::uint16_t{}));
    case DataType::bfloat16:
      return bfloat16_to_float(read(std::uint16_t{}));
    case DataType::float32:
      return read(float{});
    case DataType::float64:
      return read(double{});
    case DataType::int8:
      return read(std::int8_t{});
    case DataType::uint8:
      return read(std::uint8_t{});
    case DataType::int32:
      return read(std::int32_t{});
    case DataType::uint32:
      return read(std::uint32_t{});
    case DataType::int64:
      return static_cast<double>(read(std::int64_t{}));
    case DataType::uint64:
      return static_cast<double>(read(std::uint64_t{}));
  }
  return 0;
}

// Reduces every rank's input element by element in double (exact for the
// pattern's small integers at these rank counts) and compares.
TEST(CollectivePattern, ExpectedValuesMatchAReductionOfTheInputs) {
  for (const auto type : all_data_types()) {
    for (const auto op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg}) {
      for (const std::uint32_t n : {1U, 2U, 3U, 8U}) {
        const DataPattern pattern(type, op, n);
        const std::size_t count = 997;
        std::vector<std::vector<char>> inputs(n, std::vector<char>(count * data_type_size(type)));
        for (std::uint32_t r = 0; r < n; ++r) pattern.fill(r, count, inputs[r].data());
        for (std::size_t i = 0; i < count; ++i) {
          double acc = value_at(type, inputs[0], i);
          for (std::uint32_t r = 1; r < n; ++r) {
            const double v = value_at(type, inputs[r], i);
            if (op == ReduceOp::sum || op == ReduceOp::avg) {
              acc += v;
            } else if (op == ReduceOp::prod) {
              acc *= v;
            } else if (op == ReduceOp::max) {
              acc = std::max(acc, v);
            } else {
              acc = std::min(acc, v);
            }
          }
          if (op == ReduceOp::avg) acc = is_floating(type) ? acc / n : std::trunc(acc / n);
          ASSERT_NEAR(pattern.expected(i), acc, std::fabs(acc) * 1e-2 + 1e-9)
              << data_type_name(type) << " " << reduce_op_name(op) << " n=" << n << " i=" << i;
        }
      }
    }
  }
}

#ifdef XTK_HAVE_GLOO
// Gloo's reduction functions applied rank after rank give exactly what the check expects;
// one changed element is one wrong element.
TEST(CollectivePattern, GlooReductionsPassTheCheckAndOneFlipIsCaught) {
  for (const auto type : all_data_types()) {
    for (const auto op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min}) {
      const std::uint32_t n = 5;
      const std::size_t count = 4099, bytes = count * data_type_size(type);
      const DataPattern pattern(type, op, n);
      const auto reduce = gloo_reduce_function(type, op);
      std::vector<char> acc(bytes), next(bytes);
      pattern.fill(0, count, acc.data());
      for (std::uint32_t r = 1; r < n; ++r) {
        pattern.fill(r, count, next.data());
        reduce(acc.data(), acc.data(), next.data(), count);
      }
      EXPECT_EQ(pattern.count_wrong(count, acc.data()), 0u) << data_type_name(type) << " " << reduce_op_name(op);
      std::swap(acc[bytes / 2], acc[bytes / 2 + 1]);
      acc[bytes - 1] = static_cast<char>(acc[bytes - 1] ^ 0x55);
      EXPECT_GE(pattern.count_wrong(count, acc.data()), 1u) << data_type_name(type) << " " << reduce_op_name(op);
    }
  }
  EXPECT_THROW(gloo_reduce_function(DataType::float32, ReduceOp::avg), UsageError);
}
#endif

TEST(CollectivePattern, ChunksInTheWrongPlaceAreCaught) {
  const DataPattern pattern(DataType::float32, ReduceOp::sum, 4);
  const std::size_t count = 1 << 16;
  std::vector<float> result(count);
  for (std::size_t i = 0; i < count; ++i) result[i] = static_cast<float>(pattern.expected(i));
  EXPECT_EQ(pattern.count_wrong(count, result.data()), 0u);
  // Two chunks swapped, as a ring with a wrong offset would leave them.
  std::swap_ranges(result.begin(), result.begin() + 1024, result.begin() + 4096);
  EXPECT_GT(pattern.count_wrong(count, result.data()), 1500u);
}

TEST(CollectiveStats, SpreadOfTimes) {
  const auto s = TimeStats::of({4, 1, 3, 2});
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.cv, std::sqrt(5.0 / 3.0) / 2.5, 1e-12);
  EXPECT_EQ(s.to_json("_us")["p99_us"], s.p99);
  EXPECT_EQ(TimeStats::of({}).n, 0u);
}

}  // namespace
}  // namespace xtk::collective
