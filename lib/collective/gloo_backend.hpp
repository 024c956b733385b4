// The Gloo backend: CPU ranks over TCP, one per process, running the ring
// all-reduce PyTorch's Gloo process group and Horovod use on CPU tensors.
#pragma once

#include <memory>

#include "collective/backend.hpp"

namespace xtk::collective {

std::unique_ptr<Backend> make_gloo_backend(const BackendOptions& options, Job& job);

}  // namespace xtk::collective
