#include <gtest/gtest.h>

#include "core/error.hpp"
#include "transport/socket.hpp"
#include "transport/wire.hpp"

namespace xtk {

TEST(Wire, HeaderRoundTripInNetworkOrder) {
  FlowHeader h;
  h.direction = Direction::pull;
  h.flow_id = 0x0102030405060708ULL;
  h.size_bytes = 1500;
  h.token = token_from_phrase("secret");
  h.dscp = 46;
  h.rate_bps = 0x1122334455667788ULL;
  h.congestion_control = "bbr";
  const auto bytes = encode(h);
  EXPECT_EQ(bytes[0], 'X');
  EXPECT_EQ(bytes[3], 'F');
  EXPECT_EQ(bytes[4], kWireVersion);
  EXPECT_EQ(bytes[5], 1);
  EXPECT_EQ(bytes[8], 0x01);  // big-endian flow id
  EXPECT_EQ(bytes[15], 0x08);
  EXPECT_EQ(bytes[7], 46);
  EXPECT_EQ(bytes[32], 0x11);
  EXPECT_EQ(bytes[39], 0x88);
  EXPECT_EQ(bytes[40], 'b');
  EXPECT_EQ(bytes[43], 0);
  std::string reason;
  const auto back = decode(bytes, &reason);
  ASSERT_TRUE(back) << reason;
  EXPECT_EQ(back->direction, Direction::pull);
  EXPECT_FALSE(back->stream);
  EXPECT_EQ(back->flow_id, h.flow_id);
  EXPECT_EQ(back->size_bytes, 1500u);
  EXPECT_EQ(back->token, h.token);
  EXPECT_EQ(back->dscp, 46);
  EXPECT_EQ(back->rate_bps, h.rate_bps);
  EXPECT_EQ(back->congestion_control, "bbr");
  EXPECT_FALSE(back->last);
}

TEST(Wire, LastFlowIsFlagBitOne) {
  FlowHeader h;
  h.last = true;
  const auto bytes = encode(h);
  EXPECT_EQ(bytes[6], 2);
  const auto back = decode(bytes, nullptr);
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->last);
  EXPECT_FALSE(back->stream);
}

TEST(Wire, BadHeadersSayWhy) {
  auto bytes = encode(FlowHeader{});
  std::string reason;
  auto bad = bytes;
  bad[0] = 'Y';
  EXPECT_FALSE(decode(bad, &reason));
  EXPECT_EQ(reason, "bad magic 0x59544b46");
  bad = bytes;
  bad[4] = 9;
  EXPECT_FALSE(decode(bad, &reason));
  EXPECT_EQ(reason, "wire version 9 (this xtk speaks 3)");
  bad = bytes;
  bad[5] = 2;
  EXPECT_FALSE(decode(bad, &reason));
  EXPECT_EQ(reason, "bad direction 2");
  bad = bytes;
  bad[6] = 4;
  EXPECT_FALSE(decode(bad, &reason));
  EXPECT_EQ(reason, "unknown flags");
  bad = bytes;
  bad[7] = 64;
  EXPECT_FALSE(decode(bad, &reason));
  EXPECT_EQ(reason, "dscp 64 is above 63");
  bad = bytes;
  bad[40] = 'B';
  EXPECT_FALSE(decode(bad, &reason));
  EXPECT_EQ(reason, "bad congestion control name");
}

TEST(Wire, AckAndTokens) {
  EXPECT_EQ(decode_ack(encode_ack(42)), 42u);
  EXPECT_EQ(token_from_phrase(""), 0u);
  EXPECT_EQ(token_from_phrase("a"), token_from_phrase("a"));
  EXPECT_NE(token_from_phrase("a"), token_from_phrase("b"));
}

TEST(Socket, AddressesWithAndWithoutPorts) {
  EXPECT_EQ(resolve_address("127.0.0.1:7100", 7000, "t").to_string(), "127.0.0.1:7100");
  EXPECT_EQ(resolve_address("127.0.0.1", 7000, "t").to_string(), "127.0.0.1:7000");
  EXPECT_EQ(resolve_address("[::1]:7100", 7000, "t").to_string(), "[::1]:7100");
  EXPECT_EQ(resolve_address("::1", 7000, "t").to_string(), "[::1]:7000");
  EXPECT_EQ(resolve_address("fd77::2", 7000, "t").to_string(), "[fd77::2]:7000");
  EXPECT_THROW(resolve_address("127.0.0.1:http", 7000, "t"), UsageError);
  EXPECT_THROW(resolve_address("no-such-host.invalid", 7000, "t"), UsageError);
  EXPECT_TRUE(is_numeric_host("10.0.0.1:5"));
  EXPECT_TRUE(is_numeric_host("[fd77::1]:5"));
  EXPECT_FALSE(is_numeric_host("h1"));
}

}  // namespace xtk
