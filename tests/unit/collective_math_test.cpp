// Sizes, bandwidths, types and the data check: each collective's buffers,
// algbw and busbw are nccl-tests', sizes step like -b/-e/-f/-i, the check
// pattern's expected values are exact for every type and reduction, and each
// collective's check passes what the collective does and nothing else.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "collective/collective.hpp"
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
  // 1 GB in 10 ms: algbw 100 GB/s.
  EXPECT_DOUBLE_EQ(algbw_gbyte_s(1'000'000'000, 0.01), 100.0);
  EXPECT_DOUBLE_EQ(algbw_gbyte_s(1000, 0.0), 0.0);
}

// nccl-tests 2.19's getCollByteCount and getBw, for 1 MiB of floats on 4 ranks.
TEST(Collectives, CountsAndBandwidthsAreNcclTests) {
  struct Row {
    const char* name;
    Counts counts;
    std::size_t algbw_elements;
    double bus_factor;
  };
  const std::size_t n = 262'144, piece = n / 4;
  const std::vector<Row> rows{
      {"all-reduce", {n, n, n, 0, 0}, n, 1.5}, {"all-gather", {piece, n, piece, piece, 0}, n, 0.75},
      {"broadcast", {n, n, n, 0, 0}, n, 1.0},  {"reduce-scatter", {n, piece, piece, 0, piece}, n, 0.75},
      {"reduce", {n, n, n, 0, 0}, n, 1.0},     {"all-to-all", {n, n, piece, 0, 0}, n, 0.75},
      {"send-recv", {n, n, n, 0, 0}, n, 1.0},
  };
  ASSERT_EQ(all_collectives().size(), rows.size());
  for (const auto& row : rows) {
    const Collective& c = find_collective(row.name);
    EXPECT_EQ(c.name(), row.name);
    const Counts got = c.counts(n, 4, 4);
    EXPECT_EQ(got.send, row.counts.send) << row.name;
    EXPECT_EQ(got.recv, row.counts.recv) << row.name;
    EXPECT_EQ(got.param, row.counts.param) << row.name;
    EXPECT_EQ(got.send_in_place, row.counts.send_in_place) << row.name;
    EXPECT_EQ(got.recv_in_place, row.counts.recv_in_place) << row.name;
    EXPECT_EQ(got.span(), n) << row.name;
    EXPECT_EQ(c.algbw_elements(got, 4), row.algbw_elements) << row.name;
    EXPECT_DOUBLE_EQ(c.bus_factor(4), row.bus_factor) << row.name;
  }
  // A rank's share is rounded down to 16 bytes: 1000 floats on 3 ranks give 332 each.
  EXPECT_EQ(find_collective("all-gather").counts(1000, 3, 4).param, 332u);
  EXPECT_EQ(find_collective("all-to-all").counts(1000, 3, 8).send, 3u * 332);  // 8-byte elements: 2 to 16 bytes
  EXPECT_EQ(aligned_share(15, 4, 1), 0u);
  // nccl-tests' names, and the binaries'.
  EXPECT_EQ(find_collective("all_gather_perf").name(), "all-gather");
  EXPECT_EQ(find_collective("alltoall").name(), "all-to-all");
  EXPECT_EQ(find_collective("sendrecv").name(), "send-recv");
  try {
    find_collective("gather");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--collective gather: not a collective (use one of all-reduce, all-gather, broadcast, reduce-scatter, "
              "reduce, all-to-all, send-recv)");
  }
  EXPECT_NE(find_collective("reduce-scatter").gloo_lacks(), "");
  for (const auto* c : all_collectives()) {
    if (c->name() != "reduce-scatter") {
      EXPECT_EQ(c->gloo_lacks(), "") << c->name();
    }
  }
}

// What each collective does, written out by hand on float inputs: rank
// `rank`'s output from every rank's input.
using Simulation = std::function<std::vector<float>(const std::vector<std::vector<float>>& in, const Counts& c,
                                                    std::uint32_t rank, std::uint32_t root)>;

std::vector<float> sum_from(const std::vector<std::vector<float>>& in, std::size_t first, std::size_t count) {
  std::vector<float> out(count, 0.0F);
  for (const auto& input : in) {
    for (std::size_t i = 0; i < count; ++i) out[i] += input[first + i];
  }
  return out;
}

const std::map<std::string, Simulation>& simulations() {
  static const std::map<std::string, Simulation> s{
      {"all-reduce", [](const auto& in, const Counts& c, auto, auto) { return sum_from(in, 0, c.recv); }},
      {"all-gather",
       [](const auto& in, const Counts& c, auto, auto) {
         std::vector<float> out;
         for (const auto& input : in) out.insert(out.end(), input.begin(), input.begin() + c.param);
         return out;
       }},
      {"broadcast", [](const auto& in, const Counts& c, auto,
                       auto root) { return std::vector<float>(in[root].begin(), in[root].begin() + c.recv); }},
      {"reduce-scatter",
       [](const auto& in, const Counts& c, auto rank, auto) { return sum_from(in, rank * c.param, c.param); }},
      {"reduce", [](const auto& in, const Counts& c, auto rank,
                    auto root) { return rank == root ? sum_from(in, 0, c.recv) : std::vector<float>(c.recv, 1e30F); }},
      {"all-to-all",
       [](const auto& in, const Counts& c, auto rank, auto) {
         std::vector<float> out;
         for (const auto& input : in) {
           out.insert(out.end(), input.begin() + rank * c.param, input.begin() + (rank + 1) * c.param);
         }
         return out;
       }},
      {"send-recv",
       [](const auto& in, const Counts& c, auto rank, auto) {
         const auto& from = in[(rank + in.size() - 1) % in.size()];
         return std::vector<float>(from.begin(), from.begin() + c.recv);
       }},
  };
  return s;
}

TEST(Collectives, TheCheckPassesWhatTheCollectiveDoesAndCatchesOneWrongElement) {
  for (const auto* c : all_collectives()) {
    const auto& simulate = simulations().at(std::string(c->name()));
    for (const std::uint32_t n : {1U, 2U, 3U, 5U}) {
      for (const std::uint32_t root : {0U, n - 1}) {
        const Counts counts = c->counts(1000, n, sizeof(float));
        const DataPattern pattern(DataType::float32, ReduceOp::sum, n);
        std::vector<std::vector<float>> in(n, std::vector<float>(counts.send));
        for (std::uint32_t r = 0; r < n; ++r) pattern.fill(r, counts.send, in[r].data());
        for (std::uint32_t rank = 0; rank < n; ++rank) {
          auto out = simulate(in, counts, rank, root);
          ASSERT_EQ(out.size(), counts.recv);
          const auto wrong = [&] {
            return count_wrong_output(*c, pattern, counts, rank, n, root, out.data(), sizeof(float));
          };
          const std::string where = fmt::format("{} n={} root={} rank={}", c->name(), n, root, rank);
          EXPECT_EQ(wrong(), 0u) << where;
          if (c->name() == "reduce" && rank != root) continue;  // nothing is checked there
          out[counts.recv - 1] += 64;
          EXPECT_EQ(wrong(), 1u) << where;
          out[counts.recv - 1] -= 64;
          // The pieces of another rank, or of the wrong place, are wrong (where they differ).
          std::rotate(out.begin(), out.begin() + 1, out.end());
          if (counts.recv > 1) {
            EXPECT_GT(wrong(), counts.recv / 2) << where;
          }
        }
      }
    }
  }
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
