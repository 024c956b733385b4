#include "analysis/model_params.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "core/data_files.hpp"
#include "core/error.hpp"
#include "formats/csv_file.hpp"

namespace xtk::analysis {

ModelTable ModelTable::parse(std::string_view content, const std::string& source) {
  RunCsv csv(content, source, "xtk-model-params", "model,params,bytes_per_param,source");
  ModelTable table;
  table.path_ = source;
  while (csv.next()) {
    ModelParams m;
    m.model = csv.token_field(0, "model");
    m.params = csv.unsigned_field(1, "params");
    if (m.params == 0) csv.fail("params '0' is not a positive integer");
    m.bytes_per_param = csv.number_field(2, "bytes_per_param");
    if (!(m.bytes_per_param > 0)) csv.fail(fmt::format("bytes_per_param {} is not above 0", csv.field(2)));
    m.source = csv.field(3);
    if (table.find(m.model) != nullptr) csv.fail(fmt::format("model '{}' is listed twice", m.model));
    table.models_.push_back(std::move(m));
  }
  return table;
}

ModelTable ModelTable::load(const std::string& path) { return parse(read_text_file(path, "model table"), path); }

const ModelParams* ModelTable::find(std::string_view model) const {
  for (const auto& m : models_) {
    if (m.model == model) return &m;
  }
  return nullptr;
}

std::string resolve_model_table(const std::string& flag) {
  if (!flag.empty()) return flag;
  std::string path = find_shipped_file("models/params.csv");
  if (path.empty()) {
    std::string searched;
    for (const auto& dir : shipped_data_dirs()) searched += "\n  " + dir + "/models/params.csv";
    throw Error(fmt::format("no model table (use --models); none of these exists:{}", searched));
  }
  return path;
}

}  // namespace xtk::analysis
