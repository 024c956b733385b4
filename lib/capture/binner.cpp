#include "capture/binner.hpp"

#include <algorithm>
#include <utility>

namespace xtk::capture {

Binner::Binner(std::int64_t bin_ns, std::int64_t reorder_ns, std::function<void(const BinRow&)> sink)
    : bin_ns_(bin_ns), reorder_bins_(std::max<std::int64_t>(1, reorder_ns / bin_ns)), sink_(std::move(sink)) {}

void Binner::emit_front() {
  auto& entries = bins_.front();
  // Series order makes the output deterministic; a series that came back to
  // an older bin out of order has two entries there, merged here. Series
  // that come round in a fixed order often leave a bin sorted already.
  const auto by_series = [](const Entry& a, const Entry& b) { return a.series < b.series; };
  if (!std::is_sorted(entries.begin(), entries.end(), by_series)) std::sort(entries.begin(), entries.end(), by_series);
  BinRow row;
  row.bin_start_ns = front_ * bin_ns_;
  for (std::size_t i = 0; i < entries.size();) {
    row.series = entries[i].series;
    row.bytes = 0;
    row.packets = 0;
    for (; i < entries.size() && entries[i].series == row.series; ++i) {
      row.bytes += entries[i].bytes;
      row.packets += entries[i].packets;
    }
    sink_(row);
  }
  if (!entries.empty()) last_emitted_ = front_;
  // Its capacity serves the next bin that opens: no regrowth bin after bin.
  entries.clear();
  spare_ = std::move(entries);
  bins_.pop_front();
  ++front_;
}

void Binner::open_bins_through(std::int64_t bin) {
  if (bin - newest() > reorder_bins_) {
    // A gap longer than the window: everything open is final, and the empty
    // bins in between need no memory.
    while (!bins_.empty()) emit_front();
    front_ = bin;
  }
  while (front_ + static_cast<std::int64_t>(bins_.size()) <= bin) bins_.push_back(std::exchange(spare_, {}));
  while (front_ < bin - reorder_bins_) emit_front();
}

std::int64_t Binner::place(std::int64_t bin) {
  if (bins_.empty() && bin > last_emitted_) front_ = bin;
  if (bin < front_) {
    // A bin before the open ones can still open if no later row has left.
    if (bin > last_emitted_ && newest() - bin <= reorder_bins_) {
      for (; front_ > bin; --front_) bins_.emplace_front();
    } else {
      ++late_;
      bin = front_;
    }
  }
  open_bins_through(bin);
  return bin;
}

void Binner::add(std::uint32_t series, std::int64_t ts_ns, std::uint64_t bytes) {
  // Most packets fall in the newest open bin, where the open bins stay as they are.
  std::int64_t bin = 0;
  std::vector<Entry>* open = newest_entries_;
  // Unsigned: one comparison for both ends of the bin, and no overflow.
  const std::uint64_t into_newest = static_cast<std::uint64_t>(ts_ns) - static_cast<std::uint64_t>(newest_start_ns_);
  if (open != nullptr && into_newest < static_cast<std::uint64_t>(bin_ns_)) {
    bin = newest();
  } else {
    bin = place(floor_div(ts_ns, bin_ns_));
    open = &bins_[static_cast<std::size_t>(bin - front_)];
    newest_entries_ = &bins_.back();  // deque elements stay in place as others come and go
    newest_start_ns_ = newest() * bin_ns_;
  }
  if (series >= latest_.size()) latest_.resize(series + 1);
  Latest& latest = latest_[series];
  auto& entries = *open;
  if (latest.bin == bin) {
    Entry& e = entries[latest.slot];
    e.bytes += bytes;
    ++e.packets;
    return;
  }
  entries.push_back({series, 1, bytes});
  if (bin > latest.bin) latest = {bin, static_cast<std::uint32_t>(entries.size() - 1)};
}

void Binner::finish() {
  while (!bins_.empty()) emit_front();
  newest_entries_ = nullptr;
}

}  // namespace xtk::capture
