// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <linux/netlink.h>

#include <functional>
#include <memory>
#include <span>
#include <string>

#include "transport.h"

namespace flowbulk {

// Request/reply engine over a Transport: sends one datagram (a message or a
// netfilter batch) and reads replies until every message that asked for an
// ack (NLM_F_ACK) has been answered and every dump (NLM_F_DUMP) has ended.
// Data messages go to the handler; the first error (with the kernel's extack
// message) is thrown as KernelError once the exchange is complete, so the
// socket is never left with unread replies.
//
// A dump the kernel marks interrupted (NLM_F_DUMP_INTR: what it lists
// changed while it was being dumped) is sent again with new sequence
// numbers, as nft does, up to kDumpAttempts times; the handler sees only the
// messages of the attempt that was not interrupted.
class NetlinkChannel {
 public:
  using MessageHandler = std::function<void(const nlmsghdr&)>;
  static constexpr int kDumpAttempts = 10;

  explicit NetlinkChannel(std::unique_ptr<Transport> transport);

  uint32_t next_sequence() { return ++sequence_; }
  uint32_t port_id() const { return transport_->port_id(); }

  void transact(std::span<const uint8_t> request, const MessageHandler& on_data = {});

 private:
  // One request and its replies; returns whether a reply carried
  // NLM_F_DUMP_INTR.
  bool exchange(std::span<const uint8_t> request, const MessageHandler& on_data);

  std::unique_ptr<Transport> transport_;
  uint32_t sequence_;
};

// The error and extack message of an NLMSG_ERROR (or of a failed NLMSG_DONE).
struct NetlinkStatus {
  int error = 0;  // 0 or a negative errno, as the kernel puts it
  std::string extack;
};
NetlinkStatus parse_error_message(const nlmsghdr& message);

}  // namespace flowbulk
