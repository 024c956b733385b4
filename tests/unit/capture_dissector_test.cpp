// The packet dissector on hand-built frames: every link type, VLAN and QinQ
// tags, IPv4 options and fragments, IPv6 extension headers and fragments,
// TCP, UDP, RoCEv2, and frames cut by the snaplen or malformed.
#include <gtest/gtest.h>

#include "capture/dissector.hpp"
#include "capture_frames.hpp"
#include "core/error.hpp"

namespace xtk::capture {
namespace {

using namespace testing;

Packet dissect_frame(const Bytes& frame, std::uint32_t linktype = kLinkEthernet, std::size_t caplen = SIZE_MAX,
                     std::uint32_t wire = 0) {
  Packet p;
  const auto cap = static_cast<std::uint32_t>(std::min(caplen, frame.size()));
  dissect(linktype, frame.data(), cap, wire ? wire : static_cast<std::uint32_t>(frame.size()), p);
  return p;
}

Bytes tcp4_frame(const std::vector<std::uint16_t>& vlans = {}, std::uint8_t tos = 0) {
  Bytes f = ethernet(0x0800, vlans);
  append(f, ipv4("10.77.0.1", "10.77.0.2", 6, 20 + 1000, tos));
  append(f, tcp(40000, 7000));
  return padded(f, f.size() + 1000);
}

TEST(CaptureDissector, TcpOverIpv4KeysTheFiveTupleWithWireBytes) {
  const auto f = tcp4_frame();
  const Packet p = dissect_frame(f, kLinkEthernet, 128);  // a snaplen-128 capture of a 1054-byte frame
  EXPECT_EQ(p.key.kind, FlowKind::tcp);
  EXPECT_EQ(p.key.text(), "tcp 10.77.0.1:40000>10.77.0.2:7000");
  EXPECT_EQ(p.key.src_text(), "10.77.0.1");
  EXPECT_EQ(p.key.dst_text(), "10.77.0.2");
  EXPECT_EQ(p.wire_bytes, f.size());
  EXPECT_EQ(p.problem, Problem::none);
  EXPECT_FALSE(p.tagged);
}

TEST(CaptureDissector, VlanAndQinQTagsAreSkippedAndTheOuterIdKept) {
  const Packet one = dissect_frame(tcp4_frame({0x2064}));  // PCP 1, VID 100
  EXPECT_TRUE(one.tagged);
  EXPECT_EQ(one.vlan, 100);
  EXPECT_EQ(one.key.text(), "tcp 10.77.0.1:40000>10.77.0.2:7000");
  const Packet two = dissect_frame(tcp4_frame({200, 300}));
  EXPECT_EQ(two.vlan, 200);
  EXPECT_EQ(two.key.kind, FlowKind::tcp);
  EXPECT_EQ(two.key.dst_port, 7000);
}

TEST(CaptureDissector, EcnCongestionExperiencedIsRead) {
  EXPECT_EQ(dissect_frame(tcp4_frame({}, 0x03)).ecn, 3);
  EXPECT_EQ(dissect_frame(tcp4_frame({}, 0xb8)).ecn, 0);  // DSCP 46, not ECT
}

TEST(CaptureDissector, Ipv4OptionsMoveTheTransportHeader) {
  Bytes f = ethernet(0x0800);
  append(f, ipv4("10.0.0.1", "10.0.0.2", 17, 8 + 10, 0, 0, 2));
  append(f, udp(5000, 53, 10));
  f.resize(f.size() + 10);
  EXPECT_EQ(dissect_frame(f).key.text(), "udp 10.0.0.1:5000>10.0.0.2:53");
}

TEST(CaptureDissector, Ipv4FragmentsKeyWithoutPortsSoAllPiecesMatch) {
  Bytes first = ethernet(0x0800);
  append(first, ipv4("10.0.0.1", "10.0.0.2", 17, 1480, 0, 0x2000));  // more fragments, offset 0
  append(first, udp(5000, 9000, 3000));
  Bytes later = ethernet(0x0800);
  append(later, ipv4("10.0.0.1", "10.0.0.2", 17, 1000, 0, 185));  // offset 185 x 8
  later.resize(later.size() + 1000, 0xee);                        // payload bytes that would read as ports
  const Packet a = dissect_frame(padded(first, 1514));
  const Packet b = dissect_frame(later);
  EXPECT_TRUE(a.fragment);
  EXPECT_TRUE(b.fragment);
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.key.text(), "ip proto=17 10.0.0.1>10.0.0.2");
}

TEST(CaptureDissector, Ipv6WithExtensionHeadersReachesUdp) {
  Bytes f = ethernet(0x86dd, {7});
  append(f, ipv6("fd77::1", "fd77::2", 0, 8 + 8 + 8 + 4, 0x03));
  append(f, ipv6_options(60));
  append(f, ipv6_options(17));
  append(f, udp(1234, 5678, 4));
  f.resize(f.size() + 4);
  const Packet p = dissect_frame(f);
  EXPECT_EQ(p.key.text(), "udp [fd77::1]:1234>[fd77::2]:5678");
  EXPECT_EQ(p.key.src_text(), "fd77::1");
  EXPECT_EQ(p.ecn, 3);
  EXPECT_EQ(p.vlan, 7);
}

TEST(CaptureDissector, Ipv6FragmentsKeyWithoutPorts) {
  Bytes f = ethernet(0x86dd);
  append(f, ipv6("fd77::1", "fd77::2", 44, 8 + 100));
  append(f, ipv6_fragment(6, 100, false));  // the last piece: offset, no more
  f.resize(f.size() + 100, 0xee);
  const Packet p = dissect_frame(f);
  EXPECT_TRUE(p.fragment);
  EXPECT_EQ(p.key.text(), "ip proto=6 fd77::1>fd77::2");
  Bytes whole = ethernet(0x86dd);
  append(whole, ipv6("fd77::1", "fd77::2", 44, 8 + 20));
  append(whole, ipv6_fragment(6, 0, false));  // an atomic fragment: offset 0, no more: ports are there
  append(whole, tcp(1, 2));
  EXPECT_EQ(dissect_frame(whole).key.text(), "tcp [fd77::1]:1>[fd77::2]:2");
}

TEST(CaptureDissector, RoceV2IsKeyedByDestinationQpWithBthFields) {
  Bytes f = ethernet(0x0800, {});
  append(f, ipv4("10.0.0.1", "10.0.0.2", 17, 8 + 12 + 1024 + 4, 0x02));
  append(f, udp(49152, kRoceV2Port, 12 + 1024 + 4));
  append(f, bth(0x0a, 0x0012ab, 0x00beef, true));  // RC RDMA WRITE Only
  const auto frame = padded(f, f.size() + 1028);
  const Packet p = dissect_frame(frame, kLinkEthernet, 128);
  EXPECT_EQ(p.key.kind, FlowKind::roce);
  EXPECT_EQ(p.key.text(), "roce qp=0x12ab 10.0.0.1>10.0.0.2");
  EXPECT_EQ(p.opcode, 0x0a);
  EXPECT_EQ(p.psn, 0x00beefu);
  EXPECT_TRUE(p.becn);
  EXPECT_FALSE(p.fecn);
  EXPECT_EQ(p.wire_bytes, frame.size());
  // Another source port (ECMP entropy), same QP: the same flow.
  Bytes g = ethernet(0x0800);
  append(g, ipv4("10.0.0.1", "10.0.0.2", 17, 8 + 12));
  append(g, udp(50000, kRoceV2Port, 12));
  append(g, bth(0x11, 0x0012ab, 1));
  EXPECT_EQ(dissect_frame(g).key, p.key);
}

TEST(CaptureDissector, NonIpFramesKeyByEtherTypeAndMacs) {
  Bytes arp = ethernet(0x0806, {}, 1, 0xff);
  arp.resize(60);
  const Packet p = dissect_frame(arp);
  EXPECT_EQ(p.key.kind, FlowKind::ethernet);
  EXPECT_EQ(p.key.text(), "eth type=0x0806 02:00:00:00:00:01>02:00:00:00:00:ff");
  EXPECT_EQ(p.key.family, 0);
}

TEST(CaptureDissector, CutAndMalformedHeadersAreReportedNotMisread) {
  const auto f = tcp4_frame();
  const Packet cut_tcp = dissect_frame(f, kLinkEthernet, 14 + 20 + 2);  // two bytes of TCP
  EXPECT_EQ(cut_tcp.problem, Problem::cut);
  EXPECT_EQ(cut_tcp.key.text(), "ip proto=6 10.77.0.1>10.77.0.2");
  const Packet cut_ip = dissect_frame(f, kLinkEthernet, 20);
  EXPECT_EQ(cut_ip.problem, Problem::cut);
  EXPECT_EQ(cut_ip.key.kind, FlowKind::ethernet);
  const Packet cut_eth = dissect_frame(f, kLinkEthernet, 10);
  EXPECT_EQ(cut_eth.problem, Problem::cut);
  EXPECT_EQ(cut_eth.key.kind, FlowKind::none);
  EXPECT_EQ(cut_eth.wire_bytes, f.size());
  Bytes bad = f;
  bad[14] = 0x43;  // IPv4 with a 12-byte header
  const Packet malformed = dissect_frame(bad);
  EXPECT_EQ(malformed.problem, Problem::malformed);
  EXPECT_EQ(malformed.key.text(), "eth type=0x0800 02:00:00:00:00:01>02:00:00:00:00:02");
}

TEST(CaptureDissector, LinuxCookedCapturesCountAnEthernetHeaderOnTheWire) {
  Bytes sll;
  put16(sll, 4);  // outgoing
  put16(sll, 1);  // ARPHRD_ETHER
  put16(sll, 6);
  append(sll, mac(9));
  put16(sll, 0);
  put16(sll, 0x0800);
  append(sll, ipv4("10.0.0.9", "10.0.0.1", 6, 20));
  append(sll, tcp(1, 2));
  const Packet p = dissect_frame(sll, kLinkLinuxSll);
  EXPECT_EQ(p.key.text(), "tcp 10.0.0.9:1>10.0.0.1:2");
  EXPECT_EQ(p.wire_bytes, sll.size() - 16 + 14);

  Bytes sll2;
  put16(sll2, 0x86dd);
  put16(sll2, 0);
  put32(sll2, 3);  // ifindex
  put16(sll2, 1);
  sll2.push_back(0);
  sll2.push_back(6);
  append(sll2, mac(9));
  put16(sll2, 0);
  append(sll2, ipv6("fd00::9", "fd00::1", 17, 8));
  append(sll2, udp(1, 2, 0));
  const Packet q = dissect_frame(sll2, kLinkLinuxSll2);
  EXPECT_EQ(q.key.text(), "udp [fd00::9]:1>[fd00::1]:2");
  EXPECT_EQ(q.wire_bytes, sll2.size() - 20 + 14);
}

TEST(CaptureDissector, RawIpLinkTypes) {
  Bytes v4 = ipv4("192.0.2.1", "192.0.2.2", 1, 8);
  v4.resize(28);
  EXPECT_EQ(dissect_frame(v4, kLinkRaw).key.text(), "icmp 192.0.2.1>192.0.2.2");
  EXPECT_EQ(dissect_frame(v4, kLinkIpv4).key.text(), "icmp 192.0.2.1>192.0.2.2");
  Bytes v6 = ipv6("2001:db8::1", "2001:db8::2", 58, 8);
  v6.resize(48);
  EXPECT_EQ(dissect_frame(v6, kLinkDltRaw).key.text(), "icmp6 2001:db8::1>2001:db8::2");
  EXPECT_EQ(dissect_frame(v6, kLinkIpv6).key.text(), "icmp6 2001:db8::1>2001:db8::2");
  EXPECT_EQ(dissect_frame({0x45}, kLinkRaw).key.kind, FlowKind::none);
  EXPECT_FALSE(linktype_supported(105));  // 802.11
  EXPECT_EQ(linktype_name(105), "link type 105");
}

TEST(CaptureDissector, DirectionKeyAndAddressParsing) {
  const Packet p = dissect_frame(tcp4_frame());
  EXPECT_EQ(p.key.direction().text(), "ip 10.77.0.1>10.77.0.2");
  const Address a = parse_address("10.77.0.1");
  EXPECT_TRUE(a.matches_src(p.key));
  EXPECT_FALSE(a.matches_dst(p.key));
  EXPECT_TRUE(parse_address("fd77::2").family == 6);
  EXPECT_THROW(parse_address("h1"), UsageError);
}

}  // namespace
}  // namespace xtk::capture
