// Model profiles (configs/models/<name>.csv, docs/collective.md): a model's
// parameter tensors in backward order - the order their gradients become
// ready, which PyTorch DDP takes as the reverse of registration order - with
// their sizes and types, and the compute time of one training iteration.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collective/dtype.hpp"

namespace xtk::collective {

struct Tensor {
  std::string name;
  std::uint64_t numel = 0;
  DataType type = DataType::float32;
  double compute_weight = 0;  // share of the backward compute spent on this tensor (relative)
};

struct ModelProfile {
  std::string source;  // the file it was read from
  std::string model;
  std::vector<Tensor> tensors;                // backward order
  std::map<std::string, std::string> header;  // every key=value of the header
  std::optional<double> compute_ms;           // one iteration, forward + backward
  double forward_fraction = 1.0 / 3.0;        // backward is about twice the forward
  bool has_compute_weights = false;

  std::uint64_t parameters() const;
  std::uint64_t bytes() const;  // gradient bytes
};

// The profile with every tensor's numel multiplied by `factor` (> 0; at least
// 1 element each): the gradients of a faster network emulated with fewer bytes
// (`train --size-scale`). Compute times and weights stay.
ModelProfile scale_profile(const ModelProfile& profile, double factor);

// Throws InputError "file:line: ..." for bad content, Error when unreadable.
ModelProfile read_profile(const std::string& path);
// The same from a stream; `path` names it in errors and gives the model's
// default name (its stem).
ModelProfile parse_profile(std::istream& in, const std::string& path);
// A file path, or a name looked up as NAME.csv in $XTK_MODEL_PATH, then the
// source tree's configs/models, then the installed share/xtk/models. Throws
// UsageError listing where it looked.
std::string find_profile(const std::string& name_or_path);

}  // namespace xtk::collective
