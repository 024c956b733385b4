#include "capture/flow_accounting.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace xtk::capture {

BinKey parse_bin_key(const std::string& text) {
  if (text == "flow") return BinKey::flow;
  if (text == "direction") return BinKey::direction;
  throw UsageError(fmt::format("--per: '{}' is neither flow nor direction", text));
}

const char* bin_key_name(BinKey key) { return key == BinKey::flow ? "flow" : "direction"; }

FlowAccounting::FlowAccounting(BinKey per, std::int64_t bin_ns, std::int64_t reorder_ns, BinSink sink)
    : per_(per), sink_(std::move(sink)), binner_(bin_ns, reorder_ns, [this](const BinRow& row) { emit(row); }) {}

void FlowAccounting::new_flow(std::uint32_t index, std::int64_t ts_ns) {
  FlowStats f;
  f.first_ns = ts_ns;
  f.last_ns = ts_ns;
  f.series = index;
  if (per_ == BinKey::direction) {
    bool added = false;
    f.series = directions_.find_or_add(flows_.key(index).direction(), added);
  }
  stats_.push_back(f);
}

void FlowAccounting::emit(const BinRow& row) {
  if (!sink_) return;
  if (row.series >= fields_.size()) fields_.resize(row.series + 1);
  std::string& fields = fields_[row.series];
  if (fields.empty()) {
    const FlowKey& key = per_ == BinKey::flow ? flows_.key(row.series) : directions_.key(row.series);
    fields = fmt::format("{},{},{}", key.text(), key.src_text(), key.dst_text());
  }
  sink_(row, fields);
}

}  // namespace xtk::capture
