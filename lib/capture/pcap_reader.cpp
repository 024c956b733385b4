#include "capture/pcap_reader.hpp"

#include <fcntl.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace xtk::capture {
namespace {

constexpr std::uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr std::uint32_t kMagicNano = 0xa1b23c4d;
constexpr std::uint32_t kMagicPcapng = 0x0a0d0d0a;
constexpr std::size_t kFileHeader = 24;
constexpr std::size_t kRecordHeader = 16;
// libpcap refuses records above 256 KiB (or the file's snaplen, if larger);
// anything far beyond is a misaligned read of a corrupt file, not a packet.
constexpr std::uint32_t kMaxCaplen = 256 * 1024;
constexpr std::uint32_t kCaplenCeiling = 64 * 1024 * 1024;
// A file is read a chunk at a time into a buffer that stays in the CPU's
// cache for the parse. Mapping the file instead cost more: on this project's
// VMs the kernel's work of mapping each page of the page cache (and unmapping
// it) took longer than the parse itself, where a copy of 1 MiB is a few tens
// of microseconds (bench/capture/README.md, 2026-12-03 night). The first read
// is small: a merge opens every file to read its first packet.
constexpr std::size_t kFirstChunk = std::size_t{64} << 10;
constexpr std::size_t kReadChunk = std::size_t{1} << 20;

std::uint32_t load32(const std::uint8_t* p, bool swap) {
  std::uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return swap ? __builtin_bswap32(v) : v;
}

// Classic pcap, records parsed in place in a buffer read 1 MiB at a time.
class ClassicReader final : public PcapReader {
 public:
  ClassicReader(int fd, std::string path, bool owns_fd) : fd_(fd), owns_fd_(owns_fd) { path_ = std::move(path); }
  ~ClassicReader() override {
    if (owns_fd_ && fd_ >= 0) close(fd_);
  }
  ClassicReader(const ClassicReader&) = delete;
  ClassicReader& operator=(const ClassicReader&) = delete;

  void preload(std::string_view bytes) {
    buffer_.assign(bytes.begin(), bytes.end());
    data_ = buffer_.data();
    end_ = buffer_.size();
    eof_ = true;
  }

  enum class Start { ok, damaged, pcapng };

  // Reads the file header. A file that ends inside it is damaged (no
  // packets); one that is not a capture at all is an InputError.
  Start start() {
    const bool whole = ensure(kFileHeader);
    if (end_ >= 4 && load32(data_, false) == kMagicPcapng) return Start::pcapng;
    if (end_ >= 4 && !known_magic(load32(data_, false))) {
      throw InputError(
          path_, 0,
          fmt::format("not a pcap or pcapng file (it starts with 0x{:08x})", __builtin_bswap32(load32(data_, false))));
    }
    if (!whole) {
      done_ = true;
      if (read_error_) return Start::damaged;
      damage_ = end_ == 0 ? fmt::format("{}: empty file (no pcap header)", path_)
                          : fmt::format("{}: the file ends inside its {}-byte pcap header", path_, kFileHeader);
      return Start::damaged;
    }
    const std::uint8_t* h = data_;
    std::uint32_t magic = load32(h, false);
    swap_ = magic == __builtin_bswap32(kMagicMicro) || magic == __builtin_bswap32(kMagicNano);
    if (swap_) magic = __builtin_bswap32(magic);
    nano_ = magic == kMagicNano;
    snaplen_ = load32(h + 16, swap_);
    linktype_ = load32(h + 20, swap_) & 0xffffu;  // the upper bits carry FCS information
    max_caplen_ = std::min(std::max(snaplen_, kMaxCaplen), kCaplenCeiling);
    pos_ = kFileHeader;
    offset_ = kFileHeader;
    return Start::ok;
  }

  bool next(Record& record) override {
    if (done_) return false;
    if (!ensure(kRecordHeader)) {
      if (end_ != pos_ && !read_error_) fail("the file ends inside the packet's record header (cut short)");
      done_ = true;
      return false;
    }
    const std::uint8_t* h = data_ + pos_;
    const std::uint32_t seconds = load32(h, swap_);
    const std::uint32_t fraction = load32(h + 4, swap_);
    const std::uint32_t caplen = load32(h + 8, swap_);
    const std::uint32_t wirelen = load32(h + 12, swap_);
    if (fraction >= (nano_ ? 1'000'000'000u : 1'000'000u)) {
      return fail(fmt::format("timestamp fraction {} is out of range: the file is corrupt", fraction));
    }
    if (caplen > max_caplen_) {
      return fail(
          fmt::format("captured length {} is above the file's limit {}: the file is corrupt", caplen, max_caplen_));
    }
    if (caplen > wirelen) {
      return fail(fmt::format("captured length {} is above the wire length {}: the file is corrupt", caplen, wirelen));
    }
    if (!ensure(kRecordHeader + caplen)) {
      if (!read_error_) {
        fail(fmt::format("the file ends inside the packet's {} captured bytes (cut short)", caplen));
      }
      done_ = true;
      return false;
    }
    h = data_ + pos_;
    record.ts_ns = static_cast<std::int64_t>(seconds) * 1'000'000'000 +
                   static_cast<std::int64_t>(nano_ ? fraction : fraction * 1000ull);
    record.caplen = caplen;
    record.wirelen = wirelen;
    record.data = h + kRecordHeader;
    pos_ += kRecordHeader + caplen;
    offset_ += kRecordHeader + caplen;
    ++packets_;
    return true;
  }

  // Records after the first only while they lie whole in the buffer:
  // reading more into it would move the earlier ones.
  std::size_t next_batch(Record* records, std::size_t max) override {
    std::size_t n = 0;
    while (n < max && (n == 0 || buffered()) && next(records[n])) ++n;
    return n;
  }

 private:
  static bool known_magic(std::uint32_t m) {
    for (std::uint32_t k : {kMagicMicro, kMagicNano}) {
      if (m == k || m == __builtin_bswap32(k)) return true;
    }
    return false;
  }

  // Whether the next record lies whole in what is read already.
  bool buffered() const {
    if (end_ - pos_ < kRecordHeader) return false;
    return end_ - pos_ - kRecordHeader >= load32(data_ + pos_ + 8, swap_);
  }

  bool fail(const std::string& what) {
    damage_ = fmt::format("{}: packet {} at byte {}: {}", path_, packets_ + 1, offset_, what);
    done_ = true;
    return false;
  }

  // At least `bytes` unread bytes at data_, reading more when needed. The
  // check is inline: most records are read already.
  bool ensure(std::size_t bytes) { return end_ - pos_ >= bytes || refill(bytes); }

  bool refill(std::size_t bytes) {
    if (eof_) return false;
    if (pos_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
    }
    const std::size_t chunk = buffer_.empty() ? kFirstChunk : kReadChunk;
    if (buffer_.size() < std::max(bytes, chunk)) buffer_.resize(std::max(bytes, chunk));
    data_ = buffer_.data();
    while (end_ < buffer_.size()) {
      const ssize_t n = read(fd_, buffer_.data() + end_, buffer_.size() - end_);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        damage_ =
            fmt::format("{}: read error after packet {} (byte {}): {}", path_, packets_, offset_, std::strerror(errno));
        read_error_ = true;
        eof_ = true;
        break;
      }
      if (n == 0) {
        eof_ = true;
        break;
      }
      end_ += static_cast<std::size_t>(n);
      if (end_ - pos_ >= bytes) break;
    }
    return end_ - pos_ >= bytes;
  }

  int fd_;
  bool owns_fd_;
  std::vector<std::uint8_t> buffer_;
  const std::uint8_t* data_ = nullptr;  // buffer_'s
  std::size_t pos_ = 0, end_ = 0;
  std::uint64_t offset_ = 0;  // file offset of data_[pos_]
  bool eof_ = false, done_ = false, swap_ = false, nano_ = false, read_error_ = false;
  std::uint32_t max_caplen_ = kMaxCaplen;
};

// pcapng (and anything else libpcap reads), with nanosecond stamps.
class LibpcapReader final : public PcapReader {
 public:
  explicit LibpcapReader(const std::string& path) {
    path_ = path;
    char error[PCAP_ERRBUF_SIZE] = {};
    pcap_ = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, error);
    if (pcap_ == nullptr) throw InputError(path, 0, fmt::format("cannot read the capture: {}", error));
    linktype_ = static_cast<std::uint32_t>(pcap_datalink(pcap_));
    snaplen_ = static_cast<std::uint32_t>(pcap_snapshot(pcap_));
  }
  ~LibpcapReader() override { pcap_close(pcap_); }
  LibpcapReader(const LibpcapReader&) = delete;
  LibpcapReader& operator=(const LibpcapReader&) = delete;

  bool next(Record& record) override {
    if (done_) return false;
    pcap_pkthdr* header = nullptr;
    const std::uint8_t* data = nullptr;
    const int rc = pcap_next_ex(pcap_, &header, &data);
    if (rc != 1) {
      done_ = true;
      if (rc == PCAP_ERROR) {
        damage_ = fmt::format("{}: after packet {}: {}", path_, packets_, pcap_geterr(pcap_));
      }
      return false;
    }
    record.ts_ns = static_cast<std::int64_t>(header->ts.tv_sec) * 1'000'000'000 + header->ts.tv_usec;
    record.caplen = header->caplen;
    record.wirelen = header->len;
    record.data = data;
    ++packets_;
    return true;
  }

 private:
  pcap_t* pcap_ = nullptr;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<PcapReader> PcapReader::open(const std::string& path) {
  const bool stdin_input = path == "-";
  const int fd = stdin_input ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, 0, fmt::format("cannot open the capture: {}", std::strerror(errno)));
  if (!stdin_input) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);  // a larger readahead: read once, front to back
  auto reader = std::make_unique<ClassicReader>(fd, stdin_input ? "stdin" : path, !stdin_input);
  if (reader->start() != ClassicReader::Start::pcapng) return reader;
  if (stdin_input) throw InputError("stdin", 0, "pcapng on stdin is not supported: give the file's path");
  reader.reset();
  return std::make_unique<LibpcapReader>(path);
}

std::unique_ptr<PcapReader> PcapReader::from_bytes(std::string_view bytes, std::string name) {
  auto reader = std::make_unique<ClassicReader>(-1, std::move(name), false);
  reader->preload(bytes);
  if (reader->start() == ClassicReader::Start::pcapng) {
    throw InputError(reader->path(), 0, "pcapng is read from files only");
  }
  return reader;
}

}  // namespace xtk::capture
