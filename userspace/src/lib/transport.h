// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace flowbulk {

using Datagram = std::vector<uint8_t>;

// One netlink socket, reduced to what the request/reply engine needs, so
// unit tests can put a scripted kernel behind it.
class Transport {
 public:
  virtual ~Transport() = default;
  // Sends one datagram (a message or a whole batch).
  virtual void send(std::span<const uint8_t> datagram) = 0;
  // Blocks until the next datagram from the kernel.
  virtual Datagram receive() = 0;
  // The netlink port id the kernel addresses replies to.
  virtual uint32_t port_id() const = 0;
};

// Opens a transport per netlink protocol (NETLINK_GENERIC, NETLINK_NETFILTER).
class TransportFactory {
 public:
  virtual ~TransportFactory() = default;
  virtual std::unique_ptr<Transport> open(int netlink_protocol) = 0;
};

// The real thing: a libmnl socket with extended acks enabled.
class MnlTransport final : public Transport {
 public:
  explicit MnlTransport(int netlink_protocol);
  ~MnlTransport() override;
  MnlTransport(const MnlTransport&) = delete;
  MnlTransport& operator=(const MnlTransport&) = delete;

  void send(std::span<const uint8_t> datagram) override;
  Datagram receive() override;
  uint32_t port_id() const override;

 private:
  struct mnl_socket* socket_;
};

class MnlTransportFactory final : public TransportFactory {
 public:
  std::unique_ptr<Transport> open(int netlink_protocol) override;
};

}  // namespace flowbulk
