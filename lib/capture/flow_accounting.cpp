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

namespace {

std::string fields_of(const FlowKey& key) {
  return fmt::format("{},{},{}", key.text(), key.src_text(), key.dst_text());
}

}  // namespace

FlowTable::FlowTable(BinKey per, NewSeries new_series) : per_(per), new_series_(std::move(new_series)) {}

void FlowTable::new_flow(std::uint32_t index, std::int64_t ts_ns) {
  FlowStats f;
  f.first_ns = ts_ns;
  f.last_ns = ts_ns;
  f.series = index;
  bool added = true;
  if (per_ == BinKey::direction) f.series = directions_.find_or_add(flows_.key(index).direction(), added);
  if (added && new_series_) {
    new_series_(f.series, fields_of(per_ == BinKey::flow ? flows_.key(index) : directions_.key(f.series)));
  }
  stats_.push_back(f);
}

SeriesBins::SeriesBins(std::int64_t bin_ns, std::int64_t reorder_ns, BinSink sink)
    : sink_(std::move(sink)), binner_(bin_ns, reorder_ns, [this](const BinRow& row) { emit(row); }) {}

void SeriesBins::name(std::uint32_t series, std::string fields) {
  if (series >= fields_.size()) fields_.resize(series + 1);
  fields_[series] = std::move(fields);
}

// A series without a name has rows that no file shows (xtk-analyze trace
// without a bins file still totals every bin): they get no fields.
void SeriesBins::emit(const BinRow& row) {
  if (sink_) sink_(row, row.series < fields_.size() ? std::string_view(fields_[row.series]) : std::string_view());
}

FlowAccounting::FlowAccounting(BinKey per, std::int64_t bin_ns, std::int64_t reorder_ns, SeriesBins::BinSink sink)
    : bins_(bin_ns, reorder_ns, std::move(sink)),
      table_(per, bins_.writes_rows() ? FlowTable::NewSeries([this](std::uint32_t series, std::string fields) {
               bins_.name(series, std::move(fields));
             })
                                      : FlowTable::NewSeries()) {}

}  // namespace xtk::capture
