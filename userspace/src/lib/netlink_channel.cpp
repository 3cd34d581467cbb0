// SPDX-License-Identifier: GPL-2.0
#include "netlink_channel.h"

#include <libmnl/libmnl.h>

#include <cerrno>
#include <ctime>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "error.h"

namespace flowbulk {

namespace {

int collect_extack(const nlattr* attribute, void* data) {
  auto* status = static_cast<NetlinkStatus*>(data);
  if (mnl_attr_get_type(attribute) == NLMSGERR_ATTR_MSG &&
      mnl_attr_validate(attribute, MNL_TYPE_NUL_STRING) >= 0) {
    status->extack = mnl_attr_get_str(attribute);
  }
  return MNL_CB_OK;
}

}  // namespace

NetlinkStatus parse_error_message(const nlmsghdr& message) {
  NetlinkStatus status;
  const auto* header = &message;
  if (message.nlmsg_type == NLMSG_DONE) {
    // A dump that failed part-way ends with DONE carrying the error.
    if (mnl_nlmsg_get_payload_len(header) >= sizeof(int)) {
      status.error = *static_cast<const int*>(mnl_nlmsg_get_payload(header));
    }
    if (status.error != 0 && (message.nlmsg_flags & NLM_F_ACK_TLVS) != 0) {
      mnl_attr_parse(header, sizeof(int), collect_extack, &status);
    }
    return status;
  }
  if (mnl_nlmsg_get_payload_len(header) < sizeof(nlmsgerr)) {
    status.error = -EBADMSG;
    return status;
  }
  const auto* error = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(header));
  status.error = error->error;
  if ((message.nlmsg_flags & NLM_F_ACK_TLVS) == 0) {
    return status;
  }
  // The TLVs follow the echoed request: only its header when capped.
  size_t offset = sizeof(nlmsgerr);
  if ((message.nlmsg_flags & NLM_F_CAPPED) == 0) {
    offset += error->msg.nlmsg_len - sizeof(nlmsghdr);
  }
  if (offset < mnl_nlmsg_get_payload_len(header)) {
    mnl_attr_parse(header, static_cast<unsigned>(offset), collect_extack, &status);
  }
  return status;
}

NetlinkChannel::NetlinkChannel(std::unique_ptr<Transport> transport)
    // Start from the clock like nft does, so replies to an earlier process
    // that used the same port id cannot be mistaken for ours.
    : transport_(std::move(transport)), sequence_(static_cast<uint32_t>(time(nullptr))) {}

namespace {

// Whether every message of the request is a dump (a read that can be sent
// again as it is).
bool only_dumps(std::span<const uint8_t> request) {
  int remaining = static_cast<int>(request.size());
  bool any = false;
  for (const auto* message = reinterpret_cast<const nlmsghdr*>(request.data());
       mnl_nlmsg_ok(message, remaining); message = mnl_nlmsg_next(message, &remaining)) {
    if ((message->nlmsg_flags & NLM_F_DUMP) != NLM_F_DUMP) {
      return false;
    }
    any = true;
  }
  return any;
}

}  // namespace

void NetlinkChannel::transact(std::span<const uint8_t> request, const MessageHandler& on_data) {
  if (!only_dumps(request)) {
    if (exchange(request, on_data)) {
      throw Error("the kernel's reply was interrupted by a concurrent change; try again", EINTR);
    }
    return;
  }
  std::vector<uint8_t> attempt(request.begin(), request.end());
  for (int tries = 1;; ++tries) {
    // Held back until the dump turns out complete: an interrupted one may
    // have missed or repeated objects.
    std::vector<std::vector<uint8_t>> messages;
    const bool interrupted = exchange(attempt, [&messages](const nlmsghdr& message) {
      const auto* bytes = reinterpret_cast<const uint8_t*>(&message);
      messages.emplace_back(bytes, bytes + message.nlmsg_len);
    });
    if (!interrupted) {
      if (on_data) {
        for (const std::vector<uint8_t>& message : messages) {
          on_data(*reinterpret_cast<const nlmsghdr*>(message.data()));
        }
      }
      return;
    }
    if (tries == kDumpAttempts) {
      throw Error("the kernel's dump was interrupted by concurrent changes " +
                      std::to_string(kDumpAttempts) + " times in a row; try again",
                  EINTR);
    }
    // Again, with new sequence numbers: late replies to this attempt are
    // then told apart and dropped.
    int remaining = static_cast<int>(attempt.size());
    for (auto* message = reinterpret_cast<nlmsghdr*>(attempt.data());
         mnl_nlmsg_ok(message, remaining); message = mnl_nlmsg_next(message, &remaining)) {
      message->nlmsg_seq = next_sequence();
    }
  }
}

bool NetlinkChannel::exchange(std::span<const uint8_t> request, const MessageHandler& on_data) {
  std::set<uint32_t> sent_sequences;
  std::set<uint32_t> awaited;
  const auto* buffer = request.data();
  int remaining = static_cast<int>(request.size());
  for (const auto* message = reinterpret_cast<const nlmsghdr*>(buffer);
       mnl_nlmsg_ok(message, remaining); message = mnl_nlmsg_next(message, &remaining)) {
    sent_sequences.insert(message->nlmsg_seq);
    if ((message->nlmsg_flags & (NLM_F_ACK | NLM_F_DUMP)) != 0) {
      awaited.insert(message->nlmsg_seq);
    }
  }
  transport_->send(request);

  std::optional<NetlinkStatus> first_error;
  bool interrupted = false;
  bool batch_failed = false;
  while (!awaited.empty()) {
    Datagram datagram = transport_->receive();
    int length = static_cast<int>(datagram.size());
    for (const auto* message = reinterpret_cast<const nlmsghdr*>(datagram.data());
         mnl_nlmsg_ok(message, length); message = mnl_nlmsg_next(message, &length)) {
      // Replies to someone else, or left over from an earlier request.
      if (!mnl_nlmsg_portid_ok(message, transport_->port_id()) ||
          !sent_sequences.contains(message->nlmsg_seq)) {
        continue;
      }
      if ((message->nlmsg_flags & NLM_F_DUMP_INTR) != 0) {
        interrupted = true;
      }
      switch (message->nlmsg_type) {
        case NLMSG_NOOP:
          break;
        case NLMSG_ERROR:
        case NLMSG_DONE: {
          NetlinkStatus status = parse_error_message(*message);
          if (status.error != 0 && !first_error) {
            first_error = status;
          }
          // An error against a message that asked for no ack (the batch
          // begin: no permission, failed commit) ends the whole exchange;
          // acks that may still follow are filtered out by sequence later.
          if (status.error != 0 && !awaited.contains(message->nlmsg_seq)) {
            batch_failed = true;
          }
          awaited.erase(message->nlmsg_seq);
          break;
        }
        default:
          if (on_data && !first_error) {
            on_data(*message);
          }
          break;
      }
    }
    if (batch_failed) {
      break;
    }
  }
  if (first_error) {
    throw KernelError(-first_error->error, first_error->extack);
  }
  return interrupted;
}

}  // namespace flowbulk
