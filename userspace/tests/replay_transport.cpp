// SPDX-License-Identifier: GPL-2.0
#include "replay_transport.h"

#include <cerrno>

#include "error.h"

namespace flowbulk {

void ReplayTransport::send(std::span<const uint8_t> datagram) {
  sent_.emplace_back(datagram.begin(), datagram.end());
  if (script_.empty()) {
    throw Error("replay: unexpected request #" + std::to_string(sent_.size()), EPROTO);
  }
  Responder responder = std::move(script_.front());
  script_.pop_front();
  for (Datagram& reply : responder(datagram)) {
    pending_replies_.push_back(std::move(reply));
  }
}

Datagram ReplayTransport::receive() {
  if (pending_replies_.empty()) {
    // A real socket would block forever here: report it as the timeout it is.
    throw Error("replay: receive() with no reply scripted", ETIMEDOUT);
  }
  Datagram reply = std::move(pending_replies_.front());
  pending_replies_.pop_front();
  return reply;
}

namespace {

// open() returns owning pointers; this forwards to the factory-owned script.
class BorrowedTransport final : public Transport {
 public:
  explicit BorrowedTransport(Transport& target) : target_(target) {}
  void send(std::span<const uint8_t> datagram) override { target_.send(datagram); }
  Datagram receive() override { return target_.receive(); }
  uint32_t port_id() const override { return target_.port_id(); }

 private:
  Transport& target_;
};

}  // namespace

ReplayTransport& ReplayTransportFactory::transport(int netlink_protocol) {
  auto& slot = transports_[netlink_protocol];
  if (!slot) {
    slot = std::make_unique<ReplayTransport>();
  }
  return *slot;
}

std::unique_ptr<Transport> ReplayTransportFactory::open(int netlink_protocol) {
  ++open_count_[netlink_protocol];
  if (auto served = served_.find(netlink_protocol); served != served_.end()) {
    return std::make_unique<BorrowedTransport>(*served->second);
  }
  return std::make_unique<BorrowedTransport>(transport(netlink_protocol));
}

int ReplayTransportFactory::opened(int netlink_protocol) const {
  auto it = open_count_.find(netlink_protocol);
  return it == open_count_.end() ? 0 : it->second;
}

}  // namespace flowbulk
