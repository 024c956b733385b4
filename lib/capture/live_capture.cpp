#include "capture/live_capture.hpp"

#include <pcap/pcap.h>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "capture/dissector.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "formats/trace_bins.hpp"

namespace xtk::capture {
namespace {

std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + with.size())) {
    text.replace(pos, what.size(), with);
  }
  return text;
}

// Inserts `text` before the file name's extension (or at its end).
std::string before_extension(const std::string& path, const std::string& text) {
  const auto slash = path.rfind('/');
  const auto dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1 || dot == 0) {
    return path + text;
  }
  return path.substr(0, dot) + text + path.substr(dot);
}

// The network interfaces of this namespace (libpcap's own list also names
// non-network capture sources such as dbus or nflog).
std::vector<std::string> interface_names() {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/sys/class/net", ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// The capture file's stdio buffer is flushed at least this often.
constexpr std::int64_t kFlushEveryNs = 1'000'000'000;

// One interface: its pcap handle, output and counts; run() is its thread.
class InterfaceCapture {
 public:
  InterfaceCapture(const CaptureOptions& o, std::string interface, bool several) : o_(o), several_(several), report_{} {
    report_.interface = std::move(interface);
    try {
      open();
    } catch (...) {
      // A constructor that throws gets no destructor: the handle is closed here.
      if (pcap_ != nullptr) pcap_close(pcap_);
      throw;
    }
  }
  ~InterfaceCapture() {
    if (dumper_ != nullptr) pcap_dump_close(dumper_);
    if (pcap_ != nullptr) pcap_close(pcap_);
  }
  InterfaceCapture(const InterfaceCapture&) = delete;
  InterfaceCapture& operator=(const InterfaceCapture&) = delete;

  void run(const std::atomic<bool>& stop, std::int64_t start_ns) {
    const int fd = pcap_get_selectable_fd(pcap_);
    std::int64_t next_stats = start_ns + o_.stats_every_ns;
    std::int64_t next_flush = start_ns + kFlushEveryNs;
    pcap_stat last{};
    while (!stop.load(std::memory_order_relaxed)) {
      pollfd p{fd, POLLIN, 0};
      poll(&p, 1, 50);
      dispatch();
      const std::int64_t now = monotonic_ns();
      if (now >= next_flush) {
        flush_file();
        next_flush = now + kFlushEveryNs;
      }
      if (o_.stats_every_ns > 0 && now >= next_stats) {
        last = print_stats(last, now - start_ns);
        next_stats += o_.stats_every_ns;
      }
    }
    // Packets in a ring block the kernel has not handed over yet come once
    // the block times out: wait that long, then take what is left.
    const std::int64_t drain_until = monotonic_ns() + (o_.block_timeout_ms + 50) * 1'000'000LL;
    while (monotonic_ns() < drain_until) {
      pollfd p{fd, POLLIN, 0};
      poll(&p, 1, 20);
      dispatch();
    }
    pcap_stat stats{};
    if (pcap_stats(pcap_, &stats) == 0) {
      report_.received = stats.ps_recv;
      report_.dropped = stats.ps_drop;
      report_.if_dropped = stats.ps_ifdrop;
    }
    if (o_.stats_every_ns > 0) print_stats(last, monotonic_ns() - start_ns);
    finish();
  }

  const InterfaceReport& report() const { return report_; }

 private:
  void open() {
    const std::string& name = report_.interface;
    char error[PCAP_ERRBUF_SIZE] = {};
    pcap_ = pcap_create(name.c_str(), error);
    if (pcap_ == nullptr) throw Error(fmt::format("-i {}: {}", name, error));
    pcap_set_snaplen(pcap_, static_cast<int>(o_.snaplen));
    pcap_set_promisc(pcap_, o_.promiscuous ? 1 : 0);
    pcap_set_timeout(pcap_, o_.block_timeout_ms);
    pcap_set_immediate_mode(pcap_, 0);
    pcap_set_buffer_size(pcap_, static_cast<int>(std::min<std::uint64_t>(o_.buffer_bytes, INT32_MAX)));
    pcap_set_tstamp_precision(pcap_, PCAP_TSTAMP_PRECISION_NANO);
    if (!o_.tstamp.empty()) set_tstamp_type();
    const int rc = pcap_activate(pcap_);
    if (rc == PCAP_ERROR_NO_SUCH_DEVICE) {
      throw UsageError(
          fmt::format("-i {}: no such interface here (interfaces: {})", name, fmt::join(interface_names(), ", ")));
    }
    if (rc == PCAP_ERROR_PERM_DENIED) {
      throw Error(
          fmt::format("-i {}: permission denied: capturing needs root or CAP_NET_RAW ({})", name, pcap_geterr(pcap_)));
    }
    if (rc == PCAP_ERROR_IFACE_NOT_UP) throw Error(fmt::format("-i {}: the interface is down", name));
    if (rc == PCAP_WARNING_TSTAMP_TYPE_NOTSUP) {
      throw UsageError(fmt::format("--tstamp {}: {} cannot stamp packets that way (it offers: {})", o_.tstamp, name,
                                   offered_tstamps()));
    }
    if (rc < 0) throw Error(fmt::format("-i {}: {}", name, pcap_statustostr(rc)));
    if (rc > 0) std::fprintf(stderr, "xtk-log capture: %s: warning: %s\n", name.c_str(), pcap_geterr(pcap_));
    if (!o_.filter.empty()) {
      bpf_program program{};
      if (pcap_compile(pcap_, &program, o_.filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
        throw UsageError(fmt::format("--filter '{}': {}", o_.filter, pcap_geterr(pcap_)));
      }
      const int set = pcap_setfilter(pcap_, &program);
      pcap_freecode(&program);
      if (set != 0) throw Error(fmt::format("-i {}: cannot set the filter: {}", name, pcap_geterr(pcap_)));
    }
    if (pcap_setnonblock(pcap_, 1, error) != 0) throw Error(fmt::format("-i {}: {}", name, error));
    linktype_ = static_cast<std::uint32_t>(pcap_datalink(pcap_));
    if (linktype_ == DLT_RAW) linktype_ = kLinkRaw;
    if (o_.summarize && !linktype_supported(linktype_)) {
      throw UsageError(fmt::format("-i {}: --summarize cannot dissect {} frames", name, linktype_name(linktype_)));
    }
  }

 public:
  // Creates the output, once every interface has opened (a missing one leaves no files behind).
  void open_output() {
    const std::string& name = report_.interface;
    if (o_.summarize) {
      const std::string path = capture_path(o_.out, name, several_, std::nullopt);
      bins_ = std::make_unique<TraceBinsWriter>(path, o_.bin_ns,
                                                HeaderKeys{{"generator", "xtk-log capture --summarize"},
                                                           {"per", bin_key_name(o_.per)},
                                                           {"interface", name},
                                                           {"host", host_name()},
                                                           {"snaplen", std::to_string(o_.snaplen)}});
      report_.files.push_back(path);
      accounting_ = std::make_unique<FlowAccounting>(o_.per, o_.bin_ns, o_.reorder_ns,
                                                     [this](const BinRow& row, std::string_view fields) {
                                                       bins_->row(row.bin_start_ns, fields, row.bytes, row.packets);
                                                     });
    } else {
      open_file();
    }
  }

 private:
  void set_tstamp_type() {
    const int type = pcap_tstamp_type_name_to_val(o_.tstamp.c_str());
    if (type == PCAP_ERROR) {
      throw UsageError(
          fmt::format("--tstamp {}: not a time stamp type (host, adapter, adapter_unsynced, "
                      "host_lowprec, host_hiprec)",
                      o_.tstamp));
    }
    const int rc = pcap_set_tstamp_type(pcap_, type);
    if (rc == PCAP_WARNING_TSTAMP_TYPE_NOTSUP || rc == PCAP_ERROR_CANTSET_TSTAMP_TYPE) {
      throw UsageError(fmt::format("--tstamp {}: {} cannot stamp packets that way (it offers: {})", o_.tstamp,
                                   report_.interface, offered_tstamps()));
    }
  }

  std::string offered_tstamps() {
    int* types = nullptr;
    const int n = pcap_list_tstamp_types(pcap_, &types);
    std::vector<std::string> names;
    names.reserve(static_cast<std::size_t>(std::max(n, 0)));
    for (int i = 0; i < n; ++i) names.emplace_back(pcap_tstamp_type_val_to_name(types[i]));
    pcap_free_tstamp_types(types);
    return names.empty() ? "host only" : fmt::format("{}", fmt::join(names, ", "));
  }

  void open_file() {
    const bool rotating = o_.rotate_bytes > 0 || o_.rotate_ns > 0;
    const std::string path = capture_path(o_.out, report_.interface, several_,
                                          rotating ? std::optional<std::uint64_t>(file_index_) : std::nullopt);
    std::FILE* file = path == "-" ? stdout : std::fopen(path.c_str(), "wb");
    if (file == nullptr) throw Error(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
    // A 1 MiB stdio buffer of our own (glibc ignores the size when it is to
    // allocate the buffer, and takes 4 KiB): 128-byte records would otherwise
    // cost a write() every 28 packets, and a file written 4 KiB at a time sits
    // in the page cache in 4 KiB pages, which trace analysis maps one by one.
    std::setvbuf(file, file_buffer_.data(), _IOFBF, file_buffer_.size());
    dumper_ = pcap_dump_fopen(pcap_, file);
    if (dumper_ == nullptr) {
      std::fclose(file);
      throw Error(fmt::format("{}: {}", path, pcap_geterr(pcap_)));
    }
    // The stream is the dumper's now (pcap_dump_close closes it): the analyzer
    // does not know that pcap_dump_fopen takes it.
    report_.files.push_back(path);  // NOLINT(clang-analyzer-unix.Stream)
    file_bytes_ = 24;
    file_packets_ = 0;
    ++file_index_;
  }

  // What the stdio buffer holds goes to the file: a capture killed with
  // SIGKILL (a job's time limit) loses at most the last second of a slow link.
  void flush_file() {
    if (dumper_ != nullptr && pcap_dump_flush(dumper_) != 0) throw write_failed(errno);
  }

  void close_file() {
    const bool failed = pcap_dump_flush(dumper_) != 0 || std::ferror(pcap_dump_file(dumper_)) != 0;
    const int error = errno;  // before the close can change it
    pcap_dump_close(dumper_);
    dumper_ = nullptr;
    if (failed) throw write_failed(error);
  }

  Error write_failed(int error) const {
    return Error(fmt::format("{}: write failed: {}", report_.files.back(), std::strerror(error)));
  }

  static void on_packet(u_char* user, const pcap_pkthdr* header, const u_char* data) {
    reinterpret_cast<InterfaceCapture*>(user)->packet(header, data);
  }

  // Called from inside libpcap: an exception must not unwind through its C
  // frames, so it is kept, the loop broken, and dispatch() rethrows it.
  void packet(const pcap_pkthdr* h, const u_char* data) noexcept {
    if (error_) return;
    try {
      record(h, data);
    } catch (...) {
      error_ = std::current_exception();
      pcap_breakloop(pcap_);
    }
  }

  void record(const pcap_pkthdr* h, const u_char* data) {
    // With nanosecond precision libpcap puts nanoseconds in tv_usec.
    const std::int64_t ts = static_cast<std::int64_t>(h->ts.tv_sec) * 1'000'000'000 + h->ts.tv_usec;
    ++report_.packets;
    report_.bytes += h->len;
    if (accounting_) {
      dissect(linktype_, data, h->caplen, h->len, packet_);
      accounting_->add(packet_, ts);
      return;
    }
    if (file_packets_ > 0) {
      const bool full = o_.rotate_bytes > 0 && file_bytes_ + 16 + h->caplen > o_.rotate_bytes;
      const bool old = o_.rotate_ns > 0 && ts - file_first_ns_ >= o_.rotate_ns;
      if (full || old) {
        close_file();
        open_file();
      }
    }
    if (file_packets_ == 0) file_first_ns_ = ts;
    pcap_dump(reinterpret_cast<u_char*>(dumper_), h, data);
    file_bytes_ += 16 + h->caplen;
    ++file_packets_;
  }

  void dispatch() {
    const int n = pcap_dispatch(pcap_, -1, &InterfaceCapture::on_packet, reinterpret_cast<u_char*>(this));
    if (error_) std::rethrow_exception(error_);
    if (n == PCAP_ERROR) throw Error(fmt::format("-i {}: {}", report_.interface, pcap_geterr(pcap_)));
  }

  pcap_stat print_stats(const pcap_stat& last, std::int64_t elapsed_ns) {
    pcap_stat now{};
    if (pcap_stats(pcap_, &now) != 0) return last;
    std::fprintf(stderr,
                 "xtk-log capture: %s +%.1f s: %llu packets (+%llu), %s, dropped %u (+%u) by the kernel, %u by the "
                 "interface\n",
                 report_.interface.c_str(), static_cast<double>(elapsed_ns) * 1e-9,
                 static_cast<unsigned long long>(report_.packets),
                 static_cast<unsigned long long>(report_.packets - last_packets_),
                 format_bytes(static_cast<double>(report_.bytes)).c_str(), now.ps_drop, now.ps_drop - last.ps_drop,
                 now.ps_ifdrop);
    last_packets_ = report_.packets;
    return now;
  }

  void finish() {
    if (accounting_) {
      accounting_->finish();
      report_.flows = accounting_->flow_count();
      report_.late = accounting_->late_packets();
      bins_->close();
    }
    if (dumper_ != nullptr) close_file();
  }

  const CaptureOptions& o_;
  bool several_;
  InterfaceReport report_;
  pcap_t* pcap_ = nullptr;
  std::uint32_t linktype_ = 0;
  std::vector<char> file_buffer_ = std::vector<char>(std::size_t{1} << 20);  // the open file's stdio buffer
  pcap_dumper_t* dumper_ = nullptr;
  std::uint64_t file_index_ = 0, file_bytes_ = 0, file_packets_ = 0;
  std::int64_t file_first_ns_ = 0;
  std::uint64_t last_packets_ = 0;
  std::unique_ptr<TraceBinsWriter> bins_;
  std::unique_ptr<FlowAccounting> accounting_;
  Packet packet_;
  std::exception_ptr error_;
};

}  // namespace

std::string capture_path(const std::string& pattern, const std::string& interface, bool several,
                         std::optional<std::uint64_t> index) {
  std::string path = pattern;
  if (several && path.find("{if}") == std::string::npos) path = before_extension(path, "-{if}");
  path = replace_all(path, "{if}", interface);
  if (index) {
    if (path.find("{n}") == std::string::npos) path = before_extension(path, ".{n}");
    path = replace_all(path, "{n}", fmt::format("{:04}", *index));
  }
  return path;
}

CaptureReport run_capture(const CaptureOptions& o, const std::atomic<bool>& stop) {
  if (o.interfaces.empty()) throw UsageError("-i: name at least one interface");
  if (o.snaplen < 64) throw UsageError("--snaplen: at least 64 bytes (the dissector needs the headers)");
  if (o.bin_ns <= 0) throw UsageError("--bin: the bin width must be above 0");
  const bool several = o.interfaces.size() > 1;
  if (o.out == "-" && (several || o.rotate_bytes > 0 || o.rotate_ns > 0)) {
    throw UsageError("-o -: stdout takes one interface's packets, without rotation");
  }
  std::vector<std::unique_ptr<InterfaceCapture>> captures;
  for (const auto& interface : o.interfaces) {
    captures.push_back(std::make_unique<InterfaceCapture>(o, interface, several));
  }
  for (auto& c : captures) c->open_output();

  CaptureReport report;
  report.start_realtime_ns = realtime_ns();
  const std::int64_t start = monotonic_ns();
  std::atomic<bool> done{false};
  std::vector<std::exception_ptr> errors(captures.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < captures.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        captures[i]->run(done, start);
      } catch (...) {
        errors[i] = std::current_exception();
        done.store(true);  // one interface failing stops the others: the run is incomplete
      }
    });
  }
  const std::int64_t end = o.duration_ns > 0 ? start + o.duration_ns : INT64_MAX;
  while (!stop.load() && !done.load() && monotonic_ns() < end) {
    const timespec step =
        to_timespec(std::min<std::int64_t>(20'000'000, std::max<std::int64_t>(0, end - monotonic_ns())));
    nanosleep(&step, nullptr);
  }
  done.store(true);
  for (auto& t : threads) t.join();
  report.wall_ns = monotonic_ns() - start;
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  for (const auto& c : captures) report.interfaces.push_back(c->report());
  return report;
}

}  // namespace xtk::capture
