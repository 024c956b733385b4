// The verbs resources of one worker: the device and port it opened (checked
// up front, with errors that say what to do), a protection domain, registered
// buffers, and one completion queue whose completion channel sits in the
// worker's Poller, dispatching each completion to its channel by id.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/rdma/queue_pair.hpp"
#include "transport/transport.hpp"

namespace xtk::rdma {

// The devices verbs sees on this host, by name; empty without any.
std::vector<std::string> device_names();

class Device {
 public:
  // Opens settings.device (the first device when empty) and checks its port
  // is active and the GID index exists; throws Error saying what to do.
  explicit Device(const DeviceSettings& settings);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& name() const { return name_; }
  // This end's addressing for QpInfo: LID, GID (zero without a GID index), MTU.
  void describe(QpInfo& info) const;

 private:
  std::string name_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_port_attr port_{};
  ibv_gid gid_{};
  DeviceSettings settings_;
};

// A zeroed buffer registered with the device for local and remote writes.
class RegisteredBuffer {
 public:
  // Throws Error naming RLIMIT_MEMLOCK when the kernel refuses to pin it.
  RegisteredBuffer(Device& device, std::size_t bytes);
  ~RegisteredBuffer();
  RegisteredBuffer(const RegisteredBuffer&) = delete;
  RegisteredBuffer& operator=(const RegisteredBuffer&) = delete;
  char* data() { return bytes_.data(); }
  std::size_t size() const { return bytes_.size(); }
  std::uint32_t lkey() const { return mr_->lkey; }
  std::uint32_t rkey() const { return mr_->rkey; }

 private:
  std::vector<char> bytes_;
  ibv_mr* mr_ = nullptr;
};

// Where a completion goes: a channel, by the id it posts its requests with.
class CompletionHandler {
 public:
  virtual void on_completion(const ibv_wc& wc, std::int64_t now) = 0;

 protected:
  ~CompletionHandler() = default;
};

class CompletionQueue final : public EventSource {
 public:
  CompletionQueue(Device& device, Poller& poller, int depth);
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  ibv_cq* cq() const { return cq_; }
  // The id a handler posts its work requests with (wr_id); completions of an
  // id removed meanwhile (a closed channel) are dropped.
  std::uint64_t add(CompletionHandler& handler);
  void remove(std::uint64_t id) { handlers_.erase(id); }

  // The completion channel's descriptor is readable: take every completion.
  void on_events(std::uint32_t events, std::int64_t now) override;
  // Takes what has completed without waiting (the worker's spin phase: Poller::add_busy_poll).
  void poll(std::int64_t now);

 private:
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  Poller& poller_;
  std::unordered_map<std::uint64_t, CompletionHandler*> handlers_;
  std::uint64_t next_id_ = 1;
};

// A queue pair on `cq` (its send and receive queues), in INIT.
ibv_qp* create_queue_pair(Device& device, CompletionQueue& cq, const DeviceSettings& settings);
// Moves `qp` through RTR to RTS towards `peer`; throws Error.
void connect_queue_pair(ibv_qp* qp, const DeviceSettings& settings, const QpInfo& local, const QpInfo& peer);

}  // namespace xtk::rdma
