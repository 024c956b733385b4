#include "capture/trace_merge.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "capture/dissector.hpp"
#include "core/error.hpp"

namespace xtk::capture {

TraceMerge::TraceMerge(const std::vector<std::string>& paths) {
  bool any = false;
  for (const auto& path : paths) {
    Source s;
    s.path = path;
    auto reader = PcapReader::open(path);
    if (!linktype_supported(reader->linktype()) && !reader->damage()) {
      throw InputError(path, 0,
                       fmt::format("{} captures are not dissected: xtk reads Ethernet, Linux cooked (SLL, SLL2) "
                                   "and raw IP captures",
                                   linktype_name(reader->linktype())));
    }
    s.linktype = reader->linktype();
    max_snaplen_ = std::max(max_snaplen_, reader->snaplen());
    // A file damaged before its first packet ends the merge when its turn comes.
    s.first_ts_ns = reader->next(s.current) ? s.current.ts_ns : INT64_MAX;
    if (s.first_ts_ns != INT64_MAX && (!any || s.first_ts_ns < first_ts_ns_)) {
      first_ts_ns_ = s.first_ts_ns;
      any = true;
    }
    if (paths.size() == 1 || path == "-") {
      s.reader = std::move(reader);  // stdin cannot be reopened; one file needs no reopening
    }
    sources_.push_back(std::move(s));
  }
  std::stable_sort(sources_.begin(), sources_.end(),
                   [](const Source& a, const Source& b) { return a.first_ts_ns < b.first_ts_ns; });
}

std::vector<std::uint32_t> TraceMerge::linktypes() const {
  std::vector<std::uint32_t> out;
  for (const auto& s : sources_) {
    if (std::find(out.begin(), out.end(), s.linktype) == out.end()) out.push_back(s.linktype);
  }
  return out;
}

bool TraceMerge::advance(Source& source) {
  if (source.reader->next(source.current)) return true;
  close(source);
  return false;
}

void TraceMerge::close(Source& source) {
  if (source.reader->damage() && !damage_) damage_ = source.reader->damage();
  source.reader.reset();
}

std::size_t TraceMerge::next_batch(Record* records, std::size_t max, std::uint32_t& linktype) {
  const bool alone = last_ != nullptr && open_.size() == 1 && next_to_open_ == sources_.size();
  if (!alone || damage_) return next(records[0], linktype) ? 1 : 0;
  // The one file left to read: its packets need no merge.
  const std::size_t n = last_->reader->next_batch(records, max);
  if (n > 0) {
    linktype = last_->linktype;
    return n;
  }
  close(*last_);
  open_.clear();
  last_ = nullptr;
  return 0;
}

bool TraceMerge::next(Record& record, std::uint32_t& linktype) {
  if (damage_) return false;
  if (last_ != nullptr) {
    const bool more = advance(*last_);
    if (more && open_.size() == 1 && next_to_open_ == sources_.size()) {
      // The one file left to read: its packets need no merge.
      record = last_->current;
      linktype = last_->linktype;
      return true;
    }
    if (!more) {
      open_.erase(std::find(open_.begin(), open_.end(), last_));
      if (damage_) return false;
    }
    last_ = nullptr;
  }
  // Open every file whose first packet is due before the earliest open one's next.
  while (next_to_open_ < sources_.size()) {
    Source& s = sources_[next_to_open_];
    if (!open_.empty()) {
      const auto earliest = std::min_element(open_.begin(), open_.end(), [](const Source* a, const Source* b) {
        return a->current.ts_ns < b->current.ts_ns;
      });
      if (s.first_ts_ns > (*earliest)->current.ts_ns) break;
    }
    ++next_to_open_;
    if (!s.reader) {
      s.reader = PcapReader::open(s.path);
      if (!s.reader->next(s.current)) {
        close(s);
        if (damage_) return false;
        continue;
      }
    } else if (s.first_ts_ns == INT64_MAX) {  // kept open, but it had no first packet
      close(s);
      if (damage_) return false;
      continue;
    }
    open_.push_back(&s);
  }
  if (open_.empty()) return false;
  Source* best = open_.front();
  for (Source* s : open_) {
    if (s->current.ts_ns < best->current.ts_ns) best = s;
  }
  record = best->current;
  linktype = best->linktype;
  last_ = best;
  return true;
}

}  // namespace xtk::capture
