// The NCCL backend: GPU ranks, one per GPU, one process per GPU or several
// GPUs per process (-g, driven through NCCL group calls as nccl-tests does).
#pragma once

#include <memory>

#include "collective/backend.hpp"

namespace xtk::collective {

std::unique_ptr<Backend> make_nccl_backend(const BackendOptions& options, Job& job);
// GPUs this process can see (0 without a driver or device): picks "auto".
int nccl_visible_gpus();

}  // namespace xtk::collective
