// The training engine on GPUs: compute is the calibrated busy kernel on a
// compute stream per GPU, in kernels of about 100 us; each bucket's all-reduce
// goes on the NCCL stream once an event says the compute before it is done, so
// communication overlaps the rest of the backward pass as in DDP. Timing comes
// from CUDA events.
#pragma once

#include <memory>

#include "collective/nccl_context.hpp"
#include "collective/train_engine.hpp"

namespace xtk::collective {

std::unique_ptr<TrainEngine> make_nccl_train_engine(NcclContext& context, const TrainPlan& plan);

}  // namespace xtk::collective
