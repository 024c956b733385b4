#include "collective/dtype.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cmath>
#include <utility>

#include "core/error.hpp"

namespace xtk::collective {
namespace {

struct TypeInfo {
  DataType type;
  std::string_view name;  // nccl-tests' spelling, printed in the table
  std::size_t size;
  std::array<std::string_view, 4> aliases;
};

constexpr std::array<TypeInfo, 10> kTypes{{
    {DataType::int8, "int8", 1, {"char", "i8", "", ""}},
    {DataType::uint8, "uint8", 1, {"u8", "byte", "", ""}},
    {DataType::int32, "int32", 4, {"int", "i32", "", ""}},
    {DataType::uint32, "uint32", 4, {"u32", "", "", ""}},
    {DataType::int64, "int64", 8, {"i64", "long", "", ""}},
    {DataType::uint64, "uint64", 8, {"u64", "", "", ""}},
    {DataType::float16, "half", 2, {"float16", "fp16", "f16", ""}},
    {DataType::float32, "float", 4, {"float32", "fp32", "f32", ""}},
    {DataType::float64, "double", 8, {"float64", "fp64", "f64", ""}},
    {DataType::bfloat16, "bfloat16", 2, {"bf16", "", "", ""}},
}};

const TypeInfo& info(DataType type) {
  for (const auto& t : kTypes) {
    if (t.type == type) return t;
  }
  return kTypes[0];
}

constexpr std::array<std::pair<ReduceOp, std::string_view>, 5> kOps{{{ReduceOp::sum, "sum"},
                                                                     {ReduceOp::prod, "prod"},
                                                                     {ReduceOp::max, "max"},
                                                                     {ReduceOp::min, "min"},
                                                                     {ReduceOp::avg, "avg"}}};

}  // namespace

DataType parse_data_type(std::string_view text) {
  for (const auto& t : kTypes) {
    if (text == t.name) return t.type;
    for (auto alias : t.aliases) {
      if (!alias.empty() && text == alias) return t.type;
    }
  }
  throw UsageError(fmt::format(
      "'{}' is not a data type: use int8, uint8, int32, uint32, int64, uint64, half, float, double or bfloat16", text));
}

std::string_view data_type_name(DataType type) { return info(type).name; }
std::size_t data_type_size(DataType type) { return info(type).size; }

bool is_floating(DataType type) {
  return type == DataType::float16 || type == DataType::float32 || type == DataType::float64 ||
         type == DataType::bfloat16;
}

bool is_signed(DataType type) {
  return is_floating(type) || type == DataType::int8 || type == DataType::int32 || type == DataType::int64;
}

const std::vector<DataType>& all_data_types() {
  static const std::vector<DataType> types = [] {
    std::vector<DataType> out;
    out.reserve(kTypes.size());
    for (const auto& t : kTypes) out.push_back(t.type);
    return out;
  }();
  return types;
}

ReduceOp parse_reduce_op(std::string_view text) {
  for (const auto& [op, name] : kOps) {
    if (text == name) return op;
  }
  if (text == "product") return ReduceOp::prod;
  if (text == "mean") return ReduceOp::avg;
  throw UsageError(fmt::format("'{}' is not a reduction: use sum, prod, max, min or avg", text));
}

std::string_view reduce_op_name(ReduceOp op) {
  for (const auto& [o, name] : kOps) {
    if (o == op) return name;
  }
  return "?";
}

std::uint16_t float_to_half(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000U);
  const std::uint32_t exponent = (bits >> 23) & 0xFFU;
  std::uint32_t mantissa = bits & 0x7FFFFFU;
  if (exponent == 0xFF) {  // inf or NaN (NaN keeps a mantissa bit set)
    return static_cast<std::uint16_t>(sign | 0x7C00U | (mantissa != 0 ? 0x200U : 0U));
  }
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7C00U);  // overflow to inf
  if (e <= 0) {                                                    // subnormal half, or zero
    if (e < -10) return sign;
    mantissa |= 0x800000U;
    const auto shift = static_cast<std::uint32_t>(14 - e);
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1U << shift) - 1U);
    const std::uint32_t halfway = 1U << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1U) != 0)) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (static_cast<std::uint32_t>(e) << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1FFFU;
  if (rest > 0x1000U || (rest == 0x1000U && (half & 1U) != 0)) ++half;  // may carry into the exponent: correct
  return static_cast<std::uint16_t>(sign | half);
}

float half_to_float(std::uint16_t bits) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(bits) & 0x8000U) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1FU;
  const std::uint32_t mantissa = bits & 0x3FFU;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000U | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112U) << 23) | (mantissa << 13));
}

std::uint16_t float_to_bfloat16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7F800000U) == 0x7F800000U && (bits & 0x7FFFFFU) != 0) {
    return static_cast<std::uint16_t>((bits >> 16) | 0x40U);  // keep NaN a NaN
  }
  const std::uint32_t rounding = 0x7FFFU + ((bits >> 16) & 1U);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float bfloat16_to_float(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

}  // namespace xtk::collective
