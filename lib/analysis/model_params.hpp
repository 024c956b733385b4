// Parameter counts of the models xtk knows, from configs/models/params.csv:
//
//   # xtk-model-params
//   # format_version=1
//   model,params,bytes_per_param,source
//   resnet50,25557032,4,torchvision resnet50 ...
//
// They are data, not code: the theory table (D = 2(N-1)/N * P * bytes/param)
// and `xtk-analyze predict dp` read them; a run.json may override both.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xtk::analysis {

struct ModelParams {
  std::string model;
  std::uint64_t params = 0;
  double bytes_per_param = 0;  // of the gradients exchanged (4 for fp32, 2 for fp16)
  std::string source;          // where the count comes from
};

class ModelTable {
 public:
  static ModelTable parse(std::string_view content, const std::string& source);
  static ModelTable load(const std::string& path);
  // nullptr when the model is not listed.
  const ModelParams* find(std::string_view model) const;
  const std::vector<ModelParams>& models() const { return models_; }
  const std::string& path() const { return path_; }

 private:
  std::vector<ModelParams> models_;
  std::string path_;
};

// `flag` when given, else params.csv of the source tree's configs/models, else
// the installed <prefix>/share/xtk/models/params.csv.
std::string resolve_model_table(const std::string& flag);

}  // namespace xtk::analysis
