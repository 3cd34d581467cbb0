// SPDX-License-Identifier: GPL-2.0
#pragma once

// Builders for what the kernel would answer, for the replay transport.
// Replies are made from the request they answer (sequence number and port
// id copied), like the kernel does.

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <nf_flow_bulk.h>

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "replay_transport.h"

namespace flowbulk::testing {

// The messages of a datagram, in order.
std::vector<const nlmsghdr*> messages_of(std::span<const uint8_t> datagram);

// One message under construction; datagram() returns its bytes.
class MessageBuilder {
 public:
  MessageBuilder(uint16_t type, uint16_t flags, uint32_t seq, uint32_t port_id);
  nlmsghdr* header() { return header_; }
  // For genetlink replies.
  MessageBuilder& genl(uint8_t command, uint8_t version = 1);
  Datagram datagram() const;

 private:
  std::vector<uint8_t> buffer_;
  nlmsghdr* header_;
};

// Several messages in one datagram (a dump part).
Datagram concat(const std::vector<Datagram>& parts);

Datagram ack(const nlmsghdr& request);
Datagram error_reply(const nlmsghdr& request, int sys_errno, const std::string& extack = {});
Datagram done(const nlmsghdr& request);

// A scripted reply to CTRL_CMD_GETFAMILY for nf_flow_bulk.
// The family lookup's reply; VERSION: the module's interface version.
ReplayTransport::Responder resolve_family(uint16_t family_id, uint32_t version = NFB_GENL_VERSION);
ReplayTransport::Responder family_absent();
// Ack every message that asked for one.
ReplayTransport::Responder ack_all();
// Error on the index-th message (0-based, counting every message, batch
// markers included), ack for the others that asked.
ReplayTransport::Responder fail_message(size_t index, int sys_errno,
                                        const std::string& extack = {});
// Data replies for a dump request, then DONE.
ReplayTransport::Responder dump_reply(
    std::function<std::vector<Datagram>(const nlmsghdr& request)> build_parts);

constexpr uint16_t kFakeFamilyId = 0x2a;

// A device of an attachment; `adjacent` as NFB_DEV_A_ADJACENT, `checks` as
// NFB_DEV_A_CHECKS (none: a module older than the attribute).
struct FakeAttachedDevice {
  FakeAttachedDevice(uint32_t index, const char* name, std::optional<uint8_t> flag = std::nullopt,
                     std::optional<uint64_t> count = std::nullopt)
      : ifindex(index), ifname(name), adjacent(flag), checks(count) {}
  uint32_t ifindex;
  const char* ifname;
  std::optional<uint8_t> adjacent;
  std::optional<uint64_t> checks;
};

// NFB_CMD_GET_ATTACH dump message (family ip); `scans` as NFB_A_SCANS,
// `state` as NFB_A_STATE.
Datagram attachment_message(const nlmsghdr& request, const char* table, const char* name,
                            int32_t priority, const std::vector<FakeAttachedDevice>& devices,
                            std::optional<uint64_t> scans = std::nullopt,
                            std::optional<uint8_t> state = std::nullopt);
// NFB_CMD_GET_STATS dump message; fallback {0,1,0,0,0}, drop {...,2},
// taken_encap {packets/2 none, the rest vlan}, taken_xmit {the rest neigh,
// packets/4 direct}.
Datagram stats_message(const nlmsghdr& request, uint32_t cpu, uint64_t packets, uint64_t bulks,
                       const std::vector<uint64_t>& histogram,
                       const std::vector<uint64_t>& decline);

}  // namespace flowbulk::testing
