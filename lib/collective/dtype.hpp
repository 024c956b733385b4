// Element types and reduction operations of a collective, named as nccl-tests
// names them (-d float, -o sum), with the host-side conversions the data check
// needs for the 16-bit floating-point types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xtk::collective {

enum class DataType { int8, uint8, int32, uint32, int64, uint64, float16, float32, float64, bfloat16 };
enum class ReduceOp { sum, prod, max, min, avg };

// nccl-tests' names ("float", "half", "bfloat16", "int32"...); parse also takes
// the PyTorch spellings (float32, fp16, bf16, ...). Throws UsageError.
DataType parse_data_type(std::string_view text);
std::string_view data_type_name(DataType type);
std::size_t data_type_size(DataType type);
bool is_floating(DataType type);
bool is_signed(DataType type);
const std::vector<DataType>& all_data_types();

ReduceOp parse_reduce_op(std::string_view text);
std::string_view reduce_op_name(ReduceOp op);

// IEEE binary16 and bfloat16 from and to float, round to nearest even.
std::uint16_t float_to_half(float value);
float half_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(std::uint16_t bits);

}  // namespace xtk::collective
