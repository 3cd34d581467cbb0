// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>

#include "transport.h"

namespace flowbulk {

// A scripted kernel for unit tests (never part of the tool itself). Each send() consumes the next
// expected exchange; its responder sees the request (so replies can carry the right sequence
// numbers and tests can assert on what was built) and returns the datagrams that later receive()
// calls hand out, in order.
class ReplayTransport final : public Transport {
 public:
  using Responder = std::function<std::vector<Datagram>(std::span<const uint8_t> request)>;

  explicit ReplayTransport(uint32_t port_id = 4242) : port_id_(port_id) {}

  void expect(Responder responder) { script_.push_back(std::move(responder)); }

  void send(std::span<const uint8_t> datagram) override;
  Datagram receive() override;
  uint32_t port_id() const override { return port_id_; }

  const std::vector<Datagram>& sent() const { return sent_; }
  // True when every scripted exchange happened and every reply was read.
  bool exhausted() const { return script_.empty() && pending_replies_.empty(); }

 private:
  uint32_t port_id_;
  std::deque<Responder> script_;
  std::deque<Datagram> pending_replies_;
  std::vector<Datagram> sent_;
};

// Hands out one shared ReplayTransport per netlink protocol, so the test keeps
// access to the script and the sent messages after the code under test has
// opened (and closed) its sockets.
class ReplayTransportFactory final : public TransportFactory {
 public:
  ReplayTransport& transport(int netlink_protocol);
  // From now on open(netlink_protocol) talks to `target` (a semantic fake
  // kernel) instead of the script.
  void serve(int netlink_protocol, Transport& target) { served_[netlink_protocol] = &target; }
  std::unique_ptr<Transport> open(int netlink_protocol) override;
  int opened(int netlink_protocol) const;

 private:
  std::map<int, std::unique_ptr<ReplayTransport>> transports_;
  std::map<int, int> open_count_;
  std::map<int, Transport*> served_;
};

}  // namespace flowbulk
