// The kernel's protocol counters in /proc/net/snmp and /proc/net/netstat
// (per network namespace): pairs of lines, "Tcp: names..." then
// "Tcp: values...". Counters are named "Section:Name" (Tcp:RetransSegs,
// TcpExt:TCPTimeouts). Columns can appear at run time (IcmpMsg grows a
// column per ICMP type seen), so a section's positions are looked up again
// whenever its name line changes.
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fnmatch.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include "capture/counter_source.hpp"
#include "core/error.hpp"

namespace xtk::capture {
namespace {

// Gauges, not counters: they go down, which the counter files do not allow.
bool is_gauge(std::string_view counter) { return counter == "Tcp:CurrEstab"; }

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

struct ProcFile {
  std::string path;
  int fd = -1;
  std::string text;
  // Per section: its last name line, and for each wanted counter its column.
  struct Section {
    std::string name, header;
    std::vector<std::size_t> counters;  // indexes into the source's counters_
    std::vector<std::size_t> columns;
  };
  std::vector<Section> sections;
};

bool read_all(ProcFile& f) {
  f.text.resize(std::max<std::size_t>(f.text.size(), 16384));
  std::size_t used = 0;
  while (true) {
    if (used == f.text.size()) f.text.resize(f.text.size() * 2);
    const ssize_t n = pread(f.fd, f.text.data() + used, f.text.size() - used, static_cast<off_t>(used));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  f.text.resize(used);
  return used > 0;
}

// Calls fn(section, names line, values line) for each pair of lines.
template <typename Fn>
void for_each_pair(std::string_view text, Fn fn) {
  std::string_view previous;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (!previous.empty() && previous.substr(0, previous.find(':')) == line.substr(0, colon)) {
      fn(line.substr(0, colon), previous.substr(colon + 1), line.substr(colon + 1));
      previous = {};
    } else {
      previous = line;
    }
  }
}

class SnmpCounters final : public CounterSource {
 public:
  explicit SnmpCounters(const std::string& proc) {
    name_ = "snmp";
    for (const char* file : {"/net/snmp", "/net/netstat"}) {
      ProcFile f;
      f.path = proc + file;
      f.fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (f.fd < 0) throw Error(fmt::format("snmp: cannot open {}: {}", f.path, std::strerror(errno)));
      files_.push_back(std::move(f));
    }
  }
  ~SnmpCounters() override {
    for (auto& f : files_) ::close(f.fd);
  }
  SnmpCounters(const SnmpCounters&) = delete;
  SnmpCounters& operator=(const SnmpCounters&) = delete;

  void select(const std::vector<std::string>& globs) {
    for (auto& f : files_) {
      if (!read_all(f)) throw Error(fmt::format("snmp: cannot read {}: {}", f.path, std::strerror(errno)));
      for_each_pair(f.text, [&](std::string_view section, std::string_view names, std::string_view values) {
        const auto n = split(names);
        const auto v = split(values);
        ProcFile::Section s;
        s.name = section;
        for (std::size_t i = 0; i < n.size() && i < v.size(); ++i) {
          const std::string counter = fmt::format("{}:{}", section, n[i]);
          std::int64_t value = 0;
          std::from_chars(v[i].data(), v[i].data() + v[i].size(), value);
          if (is_gauge(counter) || value < 0) continue;  // MaxConn is -1: a setting, not a count
          for (const auto& glob : globs) {
            if (fnmatch(glob.c_str(), counter.c_str(), 0) == 0) {
              s.counters.push_back(counters_.size());
              counters_.push_back(counter);
              break;
            }
          }
        }
        if (!s.counters.empty()) f.sections.push_back(std::move(s));
      });
    }
  }

  bool read(std::uint64_t* values) override {
    for (auto& f : files_) {
      if (f.sections.empty()) continue;
      if (!read_all(f)) {
        why_ = fmt::format("reading {} failed: {}", f.path, std::strerror(errno));
        return false;
      }
      std::size_t found = 0;
      bool ok = true;
      for_each_pair(f.text, [&](std::string_view section, std::string_view names, std::string_view line) {
        if (!ok) return;
        for (auto& s : f.sections) {
          if (s.name != section) continue;
          ++found;
          if (s.header != names && !map_columns(s, names)) {
            ok = false;
            return;
          }
          const auto v = split(line);
          for (std::size_t i = 0; i < s.counters.size(); ++i) {
            std::int64_t value = 0;
            if (s.columns[i] < v.size()) {
              std::from_chars(v[s.columns[i]].data(), v[s.columns[i]].data() + v[s.columns[i]].size(), value);
            }
            values[s.counters[i]] = value < 0 ? 0 : static_cast<std::uint64_t>(value);
          }
        }
      });
      if (!ok) return false;
      if (found != f.sections.size()) {
        why_ = fmt::format("a section of {} disappeared", f.path);
        return false;
      }
    }
    return true;
  }

 private:
  bool map_columns(ProcFile::Section& s, std::string_view names) {
    const auto n = split(names);
    s.columns.clear();
    for (std::size_t counter : s.counters) {
      const std::string_view wanted = std::string_view(counters_[counter]).substr(s.name.size() + 1);
      std::size_t column = 0;
      while (column < n.size() && n[column] != wanted) ++column;
      if (column == n.size()) {
        why_ = fmt::format("{} disappeared from the kernel's counters", counters_[counter]);
        return false;
      }
      s.columns.push_back(column);
    }
    s.header = names;
    return true;
  }

  std::vector<ProcFile> files_;
};

}  // namespace

std::unique_ptr<CounterSource> open_snmp_counters(const std::string& proc, const std::vector<std::string>& globs) {
  auto source = std::make_unique<SnmpCounters>(proc);
  source->select(globs);
  return source;
}

}  // namespace xtk::capture
