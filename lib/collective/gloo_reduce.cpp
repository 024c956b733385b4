#include "collective/gloo_reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/error.hpp"

namespace xtk::collective {
namespace {

template <typename T>
T combine(ReduceOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    if (op == ReduceOp::sum) return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    if (op == ReduceOp::prod) return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    if (op == ReduceOp::sum) return a + b;
    if (op == ReduceOp::prod) return a * b;
  }
  return op == ReduceOp::max ? std::max(a, b) : std::min(a, b);
}

template <typename T, ReduceOp Op>
void reduce_native(void* out, const void* a, const void* b, std::size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < n; ++i) o[i] = combine<T>(Op, x[i], y[i]);
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float), ReduceOp Op>
void reduce_16bit(void* out, const void* a, const void* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t x = 0, y = 0;
    std::memcpy(&x, static_cast<const char*>(a) + 2 * i, 2);
    std::memcpy(&y, static_cast<const char*>(b) + 2 * i, 2);
    const std::uint16_t r = FromFloat(combine<float>(Op, ToFloat(x), ToFloat(y)));
    std::memcpy(static_cast<char*>(out) + 2 * i, &r, 2);
  }
}

template <ReduceOp Op>
ReduceFn for_type(DataType type) {
  switch (type) {
    case DataType::int8:
      return reduce_native<std::int8_t, Op>;
    case DataType::uint8:
      return reduce_native<std::uint8_t, Op>;
    case DataType::int32:
      return reduce_native<std::int32_t, Op>;
    case DataType::uint32:
      return reduce_native<std::uint32_t, Op>;
    case DataType::int64:
      return reduce_native<std::int64_t, Op>;
    case DataType::uint64:
      return reduce_native<std::uint64_t, Op>;
    case DataType::float32:
      return reduce_native<float, Op>;
    case DataType::float64:
      return reduce_native<double, Op>;
    case DataType::float16:
      return reduce_16bit<half_to_float, float_to_half, Op>;
    case DataType::bfloat16:
      return reduce_16bit<bfloat16_to_float, float_to_bfloat16, Op>;
  }
  return nullptr;
}

}  // namespace

ReduceFn gloo_reduce_function(DataType type, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return for_type<ReduceOp::sum>(type);
    case ReduceOp::prod:
      return for_type<ReduceOp::prod>(type);
    case ReduceOp::max:
      return for_type<ReduceOp::max>(type);
    case ReduceOp::min:
      return for_type<ReduceOp::min>(type);
    case ReduceOp::avg:
      break;
  }
  throw UsageError("--op avg: Gloo has no average (PyTorch's Gloo group neither); use sum");
}

}  // namespace xtk::collective
