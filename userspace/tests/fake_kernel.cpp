// SPDX-License-Identifier: GPL-2.0
#include "fake_kernel.h"

#include <nf_flow_bulk.h>

#include <cstring>

namespace flowbulk::testing {

std::vector<const nlmsghdr*> messages_of(std::span<const uint8_t> datagram) {
  std::vector<const nlmsghdr*> result;
  int remaining = static_cast<int>(datagram.size());
  for (const auto* message = reinterpret_cast<const nlmsghdr*>(datagram.data());
       mnl_nlmsg_ok(message, remaining); message = mnl_nlmsg_next(message, &remaining)) {
    result.push_back(message);
  }
  return result;
}

MessageBuilder::MessageBuilder(uint16_t type, uint16_t flags, uint32_t seq, uint32_t port_id)
    : buffer_(16384), header_(mnl_nlmsg_put_header(buffer_.data())) {
  header_->nlmsg_type = type;
  header_->nlmsg_flags = flags;
  header_->nlmsg_seq = seq;
  header_->nlmsg_pid = port_id;
}

MessageBuilder& MessageBuilder::genl(uint8_t command, uint8_t version) {
  auto* genl = static_cast<genlmsghdr*>(mnl_nlmsg_put_extra_header(header_, sizeof(genlmsghdr)));
  genl->cmd = command;
  genl->version = version;
  return *this;
}

Datagram MessageBuilder::datagram() const {
  return Datagram(buffer_.begin(), buffer_.begin() + header_->nlmsg_len);
}

Datagram concat(const std::vector<Datagram>& parts) {
  Datagram all;
  for (const Datagram& part : parts) {
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

namespace {

Datagram error_message(const nlmsghdr& request, int error, const std::string& extack) {
  uint16_t flags = NLM_F_CAPPED;
  if (!extack.empty()) {
    flags |= NLM_F_ACK_TLVS;
  }
  MessageBuilder builder(NLMSG_ERROR, flags, request.nlmsg_seq, request.nlmsg_pid);
  auto* payload =
      static_cast<nlmsgerr*>(mnl_nlmsg_put_extra_header(builder.header(), sizeof(nlmsgerr)));
  payload->error = error;
  payload->msg = request;
  if (!extack.empty()) {
    mnl_attr_put_strz(builder.header(), NLMSGERR_ATTR_MSG, extack.c_str());
  }
  return builder.datagram();
}

}  // namespace

Datagram ack(const nlmsghdr& request) {
  return error_message(request, 0, {});
}

Datagram error_reply(const nlmsghdr& request, int sys_errno, const std::string& extack) {
  return error_message(request, -sys_errno, extack);
}

Datagram done(const nlmsghdr& request) {
  MessageBuilder builder(NLMSG_DONE, NLM_F_MULTI, request.nlmsg_seq, request.nlmsg_pid);
  auto* status = static_cast<int*>(mnl_nlmsg_put_extra_header(builder.header(), sizeof(int)));
  *status = 0;
  return builder.datagram();
}

ReplayTransport::Responder resolve_family(uint16_t family_id, uint32_t version) {
  return [family_id, version](std::span<const uint8_t> sent) {
    const nlmsghdr& request = *messages_of(sent).front();
    MessageBuilder reply(GENL_ID_CTRL, 0, request.nlmsg_seq, request.nlmsg_pid);
    reply.genl(CTRL_CMD_NEWFAMILY, 2);
    mnl_attr_put_strz(reply.header(), CTRL_ATTR_FAMILY_NAME, "nf_flow_bulk");
    mnl_attr_put_u16(reply.header(), CTRL_ATTR_FAMILY_ID, family_id);
    mnl_attr_put_u32(reply.header(), CTRL_ATTR_VERSION, version);
    return std::vector<Datagram>{reply.datagram(), ack(request)};
  };
}

ReplayTransport::Responder family_absent() {
  return [](std::span<const uint8_t> sent) {
    return std::vector<Datagram>{error_reply(*messages_of(sent).front(), ENOENT)};
  };
}

ReplayTransport::Responder ack_all() {
  return [](std::span<const uint8_t> sent) {
    std::vector<Datagram> replies;
    for (const nlmsghdr* message : messages_of(sent)) {
      if ((message->nlmsg_flags & NLM_F_ACK) != 0) {
        replies.push_back(ack(*message));
      }
    }
    return replies;
  };
}

ReplayTransport::Responder fail_message(size_t index, int sys_errno, const std::string& extack) {
  return [=](std::span<const uint8_t> sent) {
    std::vector<Datagram> replies;
    const auto messages = messages_of(sent);
    for (size_t i = 0; i < messages.size(); ++i) {
      if (i == index) {
        replies.push_back(error_reply(*messages[i], sys_errno, extack));
      } else if ((messages[i]->nlmsg_flags & NLM_F_ACK) != 0) {
        replies.push_back(ack(*messages[i]));
      }
    }
    return replies;
  };
}

ReplayTransport::Responder dump_reply(
    std::function<std::vector<Datagram>(const nlmsghdr& request)> build_parts) {
  return [build_parts = std::move(build_parts)](std::span<const uint8_t> sent) {
    const nlmsghdr& request = *messages_of(sent).front();
    std::vector<Datagram> replies = build_parts(request);
    replies.push_back(done(request));
    return replies;
  };
}

Datagram attachment_message(const nlmsghdr& request, const char* table, const char* name,
                            int32_t priority, const std::vector<FakeAttachedDevice>& devices,
                            std::optional<uint64_t> scans, std::optional<uint8_t> state) {
  MessageBuilder reply(kFakeFamilyId, NLM_F_MULTI, request.nlmsg_seq, request.nlmsg_pid);
  reply.genl(NFB_CMD_GET_ATTACH);
  nlmsghdr* header = reply.header();
  mnl_attr_put_u32(header, NFB_A_FAMILY, 2 /* NFPROTO_IPV4 */);
  mnl_attr_put_strz(header, NFB_A_TABLE, table);
  mnl_attr_put_strz(header, NFB_A_FLOWTABLE, name);
  mnl_attr_put_u32(header, NFB_A_PRIORITY, static_cast<uint32_t>(priority));
  if (scans) {
    mnl_attr_put_u64(header, NFB_A_SCANS, *scans);
  }
  if (state) {
    mnl_attr_put_u8(header, NFB_A_STATE, *state);
  }
  mnl_attr_put_u32(header, 200, 7);  // from a newer kernel: must be skipped
  nlattr* nest = mnl_attr_nest_start(header, NFB_A_DEVICES);
  for (const FakeAttachedDevice& attached : devices) {
    nlattr* device = mnl_attr_nest_start(header, NFB_A_DEVICE);
    mnl_attr_put_u32(header, NFB_DEV_A_IFINDEX, attached.ifindex);
    mnl_attr_put_strz(header, NFB_DEV_A_IFNAME, attached.ifname);
    if (attached.adjacent) {
      mnl_attr_put_u8(header, NFB_DEV_A_ADJACENT, *attached.adjacent);
    }
    if (attached.checks) {
      mnl_attr_put_u64(header, NFB_DEV_A_CHECKS, *attached.checks);
    }
    mnl_attr_nest_end(header, device);
  }
  mnl_attr_nest_end(header, nest);
  return reply.datagram();
}

namespace {

void put_counters(nlmsghdr* header, uint16_t type, const std::vector<uint64_t>& values) {
  nlattr* nest = mnl_attr_nest_start(header, type);
  mnl_attr_put_u32(header, 0, 0);  // padding attribute, type 0: ignored
  for (size_t i = 0; i < values.size(); ++i) {
    mnl_attr_put_u64(header, static_cast<uint16_t>(i + 1), values[i]);
  }
  mnl_attr_nest_end(header, nest);
}

}  // namespace

Datagram stats_message(const nlmsghdr& request, uint32_t cpu, uint64_t packets, uint64_t bulks,
                       const std::vector<uint64_t>& histogram,
                       const std::vector<uint64_t>& decline) {
  MessageBuilder reply(kFakeFamilyId, NLM_F_MULTI, request.nlmsg_seq, request.nlmsg_pid);
  reply.genl(NFB_CMD_GET_STATS);
  nlmsghdr* header = reply.header();
  nlattr* stats = mnl_attr_nest_start(header, NFB_A_STATS);
  mnl_attr_put_u32(header, NFB_STATS_A_CPU, cpu);
  mnl_attr_put_u64(header, NFB_STATS_A_PACKETS, packets);
  mnl_attr_put_u64(header, NFB_STATS_A_BULKS, bulks);
  put_counters(header, NFB_STATS_A_HIST, histogram);
  put_counters(header, NFB_STATS_A_DECLINE, decline);
  put_counters(header, NFB_STATS_A_FALLBACK, {0, 1, 0, 0});
  put_counters(header, NFB_STATS_A_DROP, {0, 0, 0, 0, 2});  // nomem
  put_counters(header, NFB_STATS_A_TAKEN_ENCAP, {packets / 2, packets - packets / 2});
  put_counters(header, NFB_STATS_A_TAKEN_XMIT, {packets - packets / 4, packets / 4});
  mnl_attr_nest_end(header, stats);
  return reply.datagram();
}

}  // namespace flowbulk::testing
