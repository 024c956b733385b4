// The messages between the ranks and rank 0's rendezvous (the control plane:
// key-value store, barriers, failures, liveness). One frame per message:
//
//   u32 length of the rest, u8 type, u64 id, u64 number, u32 key length, key,
//   u32 value length, value            (integers big-endian)
//
// `id` pairs a request with its reply (or names a rank in HELLO); `number`
// carries a count, a flag or a progress step; `key` and `value` are bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xtk::collective {

enum class MessageType : std::uint8_t {
  hello = 1,  // id = rank, number = pid << 32 | world size, key = host name
  set,        // key, value
  get,        // id = request, key; number 1 = erase after reading. Answered by `value` once the key is set
  value,      // id = request, value
  barrier,    // id = request, key = barrier name. Answered by `released` once every rank arrived
  released,   // id = request
  fail,       // number = FailKind, value = what went wrong on this rank
  abort,      // value = why the job stops (every rank exits with it)
  ping,       // id = ping round
  pong,       // id = ping round, number = progress step, value = where the rank is
  bye,        // this rank finished: its disconnect is not a failure
  clock,      // id = request. Answered by `value` with number = rank 0's CLOCK_REALTIME (ns) on receipt
};

// A rank's own error (bad file, ...) vs. a rank that waited on others in vain.
enum class FailKind : std::uint64_t { local = 0, waiting = 1 };

struct Message {
  MessageType type = MessageType::hello;
  std::uint64_t id = 0;
  std::uint64_t number = 0;
  std::string key;
  std::string value;
};

inline constexpr std::size_t kMaxMessageBytes = 256u << 20;

std::string encode_message(const Message& message);

// Accumulates received bytes and cuts them into messages.
class MessageDecoder {
 public:
  void feed(const char* data, std::size_t size);
  // The next whole message, nullopt when more bytes are needed. Throws Error on a malformed frame.
  std::optional<Message> next();

 private:
  std::string buffer_;
  std::size_t offset_ = 0;
};

// Writes all of `bytes` to a socket, waiting for room up to `timeout_ms` each
// time it is full. False when the peer is gone or did not read in time.
bool send_all(int fd, const std::string& bytes, int timeout_ms);

// TCP keepalive probes: a peer whose host vanishes without closing (power,
// cable) is noticed in about 11 s even when nothing is being sent.
void set_keep_alive(int fd);

}  // namespace xtk::collective
