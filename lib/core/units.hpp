// Parsing and printing of quantities with units, the way users type them.
//
// Rates are bits per second with SI prefixes (25G, 800M, 1.5Gbps, 10gbit).
// Sizes are bytes: 4KB = 4000 (SI), 4KiB = 4K = 4096 (the bare K, M, G, T are
// binary, as in nccl-tests' -b 8 -e 1G and DDP's bucket_cap_mb). Durations accept
// ns, us, ms, s, m (a bare number is seconds). Every parser throws UsageError
// naming the text it could not read, so callers add the flag name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xtk {

double parse_rate_bps(std::string_view text);
std::uint64_t parse_bytes(std::string_view text);
// A size the kernel takes as a socket option's int (SO_SNDBUF, SO_RCVBUF).
int parse_socket_buffer_bytes(std::string_view text);
// FLOP/s above 0 with an SI prefix and an optional FLOPS or FLOP/s: 989T, 1.98P, 312e12, 989TFLOPS.
double parse_flops(std::string_view text);
std::int64_t parse_duration_ns(std::string_view text);

// Strict decimal parsing of a whole token; nullopt-free: throws UsageError.
double parse_number(std::string_view text);

// A wall-clock moment, ns since the Unix epoch: Unix seconds ("1764126000.5")
// or ISO 8601 in UTC ("2026-11-26T03:00:00Z", "...T03:00:00.25+00:00").
std::int64_t parse_wall_clock_ns(const std::string& text);

// "0,2-3" -> {0, 2, 3}, in order; each CPU must be online. Throws UsageError naming `flag`.
std::vector<int> parse_cpu_list(const std::string& text, const std::string& flag);

// A load given as an absolute rate ("8G") or as a share of a link ("0.8", "80%").
struct Load {
  double rate_bps = 0;  // set when absolute
  double fraction = 0;  // set when relative to the link
  bool is_fraction = false;
  double resolve_bps(double link_bps) const;
};
Load parse_load(std::string_view text);
// A share of something: "30%" or "0.3".
double parse_share(std::string_view text);

// A TCP congestion control's name as the kernel takes it: lower-case letters,
// digits and '_', at most kCongestionControlNameMax (TCP_CA_NAME_MAX is 16
// with the terminator). Empty passes: "the default".
inline constexpr std::size_t kCongestionControlNameMax = 15;
// What a name may be, for error messages.
inline constexpr std::string_view kCongestionControlNameRule = "lower-case letters, digits, '_'; at most 15";
bool valid_congestion_control(std::string_view name);

// The headers of an IPv4 TCP frame as Linux counts its length (Ethernet 14,
// IPv4 20, TCP with the timestamp option 32). A GSO or GRO super-packet is
// counted once with them, so a frame's payload is its length less these,
// however many segments it carries on the wire.
inline constexpr int kTcpFrameHeaderBytes = 14 + 20 + 32;

std::string format_rate(double bps);           // "25.00 Gbit/s"
std::string format_bytes(double bytes);        // "1.63 MiB" (IEC)
std::string format_duration(std::int64_t ns);  // "1.500 ms"

}  // namespace xtk
