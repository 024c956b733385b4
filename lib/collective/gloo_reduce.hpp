// Element-wise reductions for Gloo, one per type and operation (Gloo calls
// fn(out, a, b, n) with out = a op b). Integer arithmetic wraps in the type's
// width, as on a GPU; half and bfloat16 go through float.
#pragma once

#include <cstddef>
#include <functional>

#include "collective/dtype.hpp"

namespace xtk::collective {

using ReduceFn = std::function<void(void*, const void*, const void*, std::size_t)>;

// Throws UsageError for an operation Gloo has no equivalent of (avg).
ReduceFn gloo_reduce_function(DataType type, ReduceOp op);

}  // namespace xtk::collective
