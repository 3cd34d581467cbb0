// SPDX-License-Identifier: GPL-2.0
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>

#include "error.h"
#include "transport.h"

namespace flowbulk {

namespace {

// Large enough for any single dump datagram the kernel builds for us (it sizes
// dump skbs to at most 32 KiB), so MSG_TRUNC never cuts a reply.
constexpr size_t kReceiveBufferSize = size_t{64} * 1024;

// The kernel answers synchronously; a reply that takes longer than this is a
// bug somewhere, and a clear error beats a hung router script.
constexpr time_t kReceiveTimeoutSeconds = 30;

}  // namespace

MnlTransport::MnlTransport(int netlink_protocol) : socket_(mnl_socket_open(netlink_protocol)) {
  if (socket_ == nullptr) {
    throw system_error("cannot open netlink socket", errno);
  }
  int enable = 1;
  // Extended acks carry the kernel's human-readable reason; capped acks keep
  // error replies small (we do not need our request echoed back).
  mnl_socket_setsockopt(socket_, NETLINK_EXT_ACK, &enable, sizeof(enable));
  mnl_socket_setsockopt(socket_, NETLINK_CAP_ACK, &enable, sizeof(enable));
  timeval timeout{.tv_sec = kReceiveTimeoutSeconds, .tv_usec = 0};
  setsockopt(mnl_socket_get_fd(socket_), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (mnl_socket_bind(socket_, 0, MNL_SOCKET_AUTOPID) < 0) {
    int saved = errno;
    mnl_socket_close(socket_);
    throw system_error("cannot bind netlink socket", saved);
  }
}

MnlTransport::~MnlTransport() {
  mnl_socket_close(socket_);
}

void MnlTransport::send(std::span<const uint8_t> datagram) {
  if (mnl_socket_sendto(socket_, datagram.data(), datagram.size()) < 0) {
    throw system_error("cannot send netlink message", errno);
  }
}

Datagram MnlTransport::receive() {
  Datagram buffer(kReceiveBufferSize);
  ssize_t length = 0;
  do {
    // A signal (monitor's Ctrl-C) must not cut an exchange in half.
    length = mnl_socket_recvfrom(socket_, buffer.data(), buffer.size());
  } while (length < 0 && errno == EINTR);
  if (length < 0) {
    int saved = errno;
    if (saved == EAGAIN || saved == EWOULDBLOCK) {
      throw Error(
          "no reply from the kernel within " + std::to_string(kReceiveTimeoutSeconds) + " s",
          ETIMEDOUT);
    }
    throw system_error("cannot receive netlink message", saved);
  }
  buffer.resize(static_cast<size_t>(length));
  return buffer;
}

uint32_t MnlTransport::port_id() const {
  return mnl_socket_get_portid(socket_);
}

std::unique_ptr<Transport> MnlTransportFactory::open(int netlink_protocol) {
  return std::make_unique<MnlTransport>(netlink_protocol);
}

}  // namespace flowbulk
