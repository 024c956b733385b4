#include "collective/pattern.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <type_traits>

namespace xtk::collective {
namespace {

// splitmix64's finaliser: neighbouring indices get unrelated residues.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Integer reduction in the type's own width (wrapping, as the GPU and Gloo do).
template <typename T>
T reduce_int(ReduceOp op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    case ReduceOp::prod:
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    case ReduceOp::max:
      return std::max(a, b);
    case ReduceOp::min:
      return std::min(a, b);
  }
  return a;
}

template <typename T>
double expected_int(ReduceOp op, const std::vector<double>& inputs, std::uint32_t k, std::uint32_t modulus,
                    std::uint32_t stride, std::uint32_t nranks) {
  T acc = static_cast<T>(inputs[k]);
  for (std::uint32_t r = 1; r < nranks; ++r) {
    acc = reduce_int<T>(op, acc, static_cast<T>(inputs[(k + stride * r) % modulus]));
  }
  if (op == ReduceOp::avg) acc = static_cast<T>(acc / static_cast<T>(nranks));
  return static_cast<double>(acc);
}

double round_to(DataType type, double value) {
  switch (type) {
    case DataType::float16:
      return half_to_float(float_to_half(static_cast<float>(value)));
    case DataType::bfloat16:
      return bfloat16_to_float(float_to_bfloat16(static_cast<float>(value)));
    case DataType::float32:
      return static_cast<float>(value);
    default:
      return value;
  }
}

template <typename T>
void store(void* out, std::size_t i, T value) {
  std::memcpy(static_cast<char*>(out) + i * sizeof(T), &value, sizeof(T));
}

template <typename T>
T load(const void* data, std::size_t i) {
  T value;
  std::memcpy(&value, static_cast<const char*>(data) + i * sizeof(T), sizeof(T));
  return value;
}

double load_as_double(DataType type, const void* data, std::size_t i) {
  switch (type) {
    case DataType::float16:
      return half_to_float(load<std::uint16_t>(data, i));
    case DataType::bfloat16:
      return bfloat16_to_float(load<std::uint16_t>(data, i));
    case DataType::float32:
      return load<float>(data, i);
    case DataType::float64:
      return load<double>(data, i);
    case DataType::int8:
      return load<std::int8_t>(data, i);
    case DataType::uint8:
      return load<std::uint8_t>(data, i);
    case DataType::int32:
      return load<std::int32_t>(data, i);
    case DataType::uint32:
      return load<std::uint32_t>(data, i);
    case DataType::int64:
      return static_cast<double>(load<std::int64_t>(data, i));
    case DataType::uint64:
      return static_cast<double>(load<std::uint64_t>(data, i));
  }
  return 0;
}

void store_from_double(DataType type, void* out, std::size_t i, double v) {
  switch (type) {
    case DataType::float16:
      return store(out, i, float_to_half(static_cast<float>(v)));
    case DataType::bfloat16:
      return store(out, i, float_to_bfloat16(static_cast<float>(v)));
    case DataType::float32:
      return store(out, i, static_cast<float>(v));
    case DataType::float64:
      return store(out, i, v);
    case DataType::int8:
      return store(out, i, static_cast<std::int8_t>(v));
    case DataType::uint8:
      return store(out, i, static_cast<std::uint8_t>(v));
    case DataType::int32:
      return store(out, i, static_cast<std::int32_t>(v));
    case DataType::uint32:
      return store(out, i, static_cast<std::uint32_t>(v));
    case DataType::int64:
      return store(out, i, static_cast<std::int64_t>(v));
    case DataType::uint64:
      return store(out, i, static_cast<std::uint64_t>(v));
  }
}

// body.template operator()<Raw>() with Raw the unsigned integer of the element's size.
template <typename Body>
void with_element_size(std::size_t size, Body body) {
  switch (size) {
    case 1:
      return body.template operator()<std::uint8_t>();
    case 2:
      return body.template operator()<std::uint16_t>();
    case 4:
      return body.template operator()<std::uint32_t>();
    default:
      return body.template operator()<std::uint64_t>();
  }
}

// body(begin, end) over [0, count) in slices on every core, for the
// gigabyte buffers of a sweep; the sum of what the slices return.
template <typename Body>
std::uint64_t in_parallel(std::size_t count, Body body) {
  constexpr std::size_t kSerial = 1 << 20;  // below this a thread costs more than it saves
  const std::size_t threads =
      count < kSerial ? 1 : std::min<std::size_t>(std::max(1U, std::thread::hardware_concurrency()), count / kSerial);
  if (threads <= 1) return body(0, count);
  std::vector<std::uint64_t> sums(threads, 0);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (std::size_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] { sums[t] = body(count * t / threads, count * (t + 1) / threads); });
  }
  for (auto& w : workers) w.join();
  std::uint64_t total = 0;
  for (const auto v : sums) total += v;
  return total;
}

double unit_roundoff(DataType type) {
  switch (type) {
    case DataType::float16:
      return 0x1p-11;
    case DataType::bfloat16:
      return 0x1p-8;
    case DataType::float32:
      return 0x1p-24;
    case DataType::float64:
      return 0x1p-53;
    default:
      return 0;
  }
}

}  // namespace

DataPattern::DataPattern(DataType type, ReduceOp op, std::uint32_t nranks)
    : type_(type), op_(op), nranks_(std::max<std::uint32_t>(nranks, 1)) {
  const bool negative = is_signed(type);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:  // -5..5 (0..10 unsigned): sums stay exact in bfloat16 up to 51 ranks
      modulus_ = 11;
      stride_ = 3;
      for (std::uint32_t j = 0; j < modulus_; ++j) inputs_.push_back(negative ? j - 5.0 : j);
      break;
    case ReduceOp::prod:  // 1, 2 and -1: products are powers of two
      modulus_ = 3;
      stride_ = 1;
      inputs_ = {1.0, 2.0, negative ? -1.0 : 1.0};
      break;
    case ReduceOp::max:
    case ReduceOp::min:
      modulus_ = 23;
      stride_ = 7;
      for (std::uint32_t j = 0; j < modulus_; ++j) inputs_.push_back(negative ? j - 11.0 : j);
      break;
  }
  fastmod_ = UINT64_MAX / modulus_ + 1;
  for (std::uint32_t k = 0; k < modulus_; ++k) {
    double e = 0;
    switch (type) {
      case DataType::int8:
        e = expected_int<std::int8_t>(op, inputs_, k, modulus_, stride_, nranks_);
        break;
      case DataType::uint8:
        e = expected_int<std::uint8_t>(op, inputs_, k, modulus_, stride_, nranks_);
        break;
      case DataType::int32:
        e = expected_int<std::int32_t>(op, inputs_, k, modulus_, stride_, nranks_);
        break;
      case DataType::uint32:
        e = expected_int<std::uint32_t>(op, inputs_, k, modulus_, stride_, nranks_);
        break;
      case DataType::int64:
        e = expected_int<std::int64_t>(op, inputs_, k, modulus_, stride_, nranks_);
        break;
      case DataType::uint64:
        e = expected_int<std::uint64_t>(op, inputs_, k, modulus_, stride_, nranks_);
        break;
      default: {  // floating: small integers, exact in double whatever the order
        double acc = inputs_[k];
        for (std::uint32_t r = 1; r < nranks_; ++r) {
          const double v = inputs_[(k + stride_ * r) % modulus_];
          switch (op) {
            case ReduceOp::sum:
            case ReduceOp::avg:
              acc += v;
              break;
            case ReduceOp::prod:
              acc *= v;
              break;
            case ReduceOp::max:
              acc = std::max(acc, v);
              break;
            case ReduceOp::min:
              acc = std::min(acc, v);
              break;
          }
        }
        if (op == ReduceOp::avg) acc /= nranks_;
        e = round_to(type, acc);
      }
    }
    expected_.push_back(e);
  }
  // An average divides (or pre-multiplies) in the type: allow a few roundings per rank.
  tolerance_ = unit_roundoff(type) * 2.0 * (nranks_ + 2);
}

// h(i) mod M without a division (Lemire's fastmod, exact for 32-bit
// numerators): h(i) is the top half of the mixed index. Gigabyte buffers make
// this loop the check's cost.
std::uint32_t DataPattern::residue(std::size_t i) const {
  const auto h = static_cast<std::uint32_t>(mix(i) >> 32);
  const std::uint64_t low = fastmod_ * h;
  // The high 64 bits of low x M, in 64-bit halves.
  const std::uint64_t high = (low >> 32) * modulus_ + (((low & 0xFFFFFFFFU) * modulus_) >> 32);
  return static_cast<std::uint32_t>(high >> 32);
}

std::uint32_t DataPattern::offset(std::uint32_t rank) const {
  return static_cast<std::uint32_t>((std::uint64_t{stride_} * (rank % modulus_)) % modulus_);
}

std::vector<std::uint64_t> DataPattern::raw_table(const std::vector<double>& values, std::uint32_t offset) const {
  std::vector<std::uint64_t> raw(modulus_, 0);
  for (std::uint32_t k = 0; k < modulus_; ++k) store_from_double(type_, &raw[k], 0, values[(k + offset) % modulus_]);
  return raw;
}

void DataPattern::fill(std::uint32_t rank, std::size_t count, void* out) const {
  const auto raw = raw_table(inputs_, offset(rank));
  with_element_size(data_type_size(type_), [&]<typename Raw>() {
    in_parallel(count, [&](std::size_t begin, std::size_t end) {
      auto* bytes = static_cast<char*>(out);
      for (std::size_t i = begin; i < end; ++i) {
        const auto value = static_cast<Raw>(raw[residue(i)]);
        std::memcpy(bytes + i * sizeof(Raw), &value, sizeof(Raw));
      }
      return std::uint64_t{0};
    });
  });
}

double DataPattern::expected(std::size_t i) const { return expected_[residue(i)]; }

// Elements first, first + 1, ... against values[(h(i) + offset) mod M]: equal
// bits are right; anything else is wrong unless within the tolerance (an
// average's roundings), checked the slow way.
std::uint64_t DataPattern::count_wrong(const std::vector<double>& values, std::uint32_t offset, std::size_t first,
                                       std::size_t count, const void* data) const {
  const auto raw = raw_table(values, offset);
  const bool floating = is_floating(type_);
  const auto wrong_value = [&](double expected, double got) {
    if (!floating) return got != expected;
    return std::isinf(expected) ? got != expected
                                : !(std::fabs(got - expected) <= tolerance_ * std::max(1.0, std::fabs(expected)));
  };
  std::uint64_t wrong = 0;
  with_element_size(data_type_size(type_), [&]<typename Raw>() {
    wrong = in_parallel(count, [&](std::size_t begin, std::size_t end) {
      const auto* bytes = static_cast<const char*>(data);
      std::uint64_t n = 0;
      for (std::size_t i = begin; i < end; ++i) {
        const std::uint32_t k = residue(first + i);
        Raw got;
        std::memcpy(&got, bytes + i * sizeof(Raw), sizeof(Raw));
        if (got != static_cast<Raw>(raw[k]) &&
            wrong_value(values[(k + offset) % modulus_], load_as_double(type_, data, i))) {
          ++n;
        }
      }
      return n;
    });
  });
  return wrong;
}

std::uint64_t DataPattern::count_wrong_reduced(std::size_t first, std::size_t count, const void* data) const {
  return count_wrong(expected_, 0, first, count, data);
}

std::uint64_t DataPattern::count_wrong_input(std::uint32_t rank, std::size_t first, std::size_t count,
                                             const void* data) const {
  // The inputs are small integers: every type holds them exactly.
  return count_wrong(inputs_, offset(rank), first, count, data);
}

}  // namespace xtk::collective
