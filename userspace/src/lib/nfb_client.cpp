// SPDX-License-Identifier: GPL-2.0
#include "nfb_client.h"

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <nf_flow_bulk.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "error.h"
#include "names.h"

namespace flowbulk {

namespace {

// Room for a header and our few short attributes; names are bounded by
// NFT_NAME_MAXLEN (256) each.
constexpr size_t kRequestBufferSize = 4096;

template <size_t N>
using AttributeTable = std::array<const nlattr*, N>;

// libmnl's idiom: unknown attribute types (a newer kernel) are skipped.
template <size_t N>
int index_attribute(const nlattr* attribute, void* data) {
  auto* table = static_cast<AttributeTable<N>*>(data);
  const uint16_t type = mnl_attr_get_type(attribute);
  if (type < N) {
    (*table)[type] = attribute;
  }
  return MNL_CB_OK;
}

template <size_t N>
AttributeTable<N> parse_genl(const nlmsghdr& message) {
  AttributeTable<N> table{};
  mnl_attr_parse(&message, sizeof(genlmsghdr), index_attribute<N>, &table);
  return table;
}

template <size_t N>
AttributeTable<N> parse_nested(const nlattr* nest) {
  AttributeTable<N> table{};
  mnl_attr_parse_nested(nest, index_attribute<N>, &table);
  return table;
}

// mnl_attr_for_each_nested() relies on C's implicit void* conversion.
template <typename Visitor>
void for_each_nested(const nlattr* nest, Visitor&& visit) {
  const auto* begin = static_cast<const uint8_t*>(mnl_attr_get_payload(nest));
  const uint8_t* end = begin + mnl_attr_get_payload_len(nest);
  for (const auto* attribute = reinterpret_cast<const nlattr*>(begin);
       mnl_attr_ok(attribute, static_cast<int>(end - reinterpret_cast<const uint8_t*>(attribute)));
       attribute = mnl_attr_next(attribute)) {
    visit(attribute);
  }
}

std::optional<uint64_t> get_u64(const nlattr* attribute) {
  if (attribute == nullptr || mnl_attr_validate(attribute, MNL_TYPE_U64) < 0) {
    return std::nullopt;
  }
  return mnl_attr_get_u64(attribute);
}

std::optional<uint8_t> get_u8(const nlattr* attribute) {
  if (attribute == nullptr || mnl_attr_validate(attribute, MNL_TYPE_U8) < 0) {
    return std::nullopt;
  }
  return mnl_attr_get_u8(attribute);
}

std::optional<uint32_t> get_u32(const nlattr* attribute) {
  if (attribute == nullptr || mnl_attr_validate(attribute, MNL_TYPE_U32) < 0) {
    return std::nullopt;
  }
  return mnl_attr_get_u32(attribute);
}

std::optional<std::string> get_string(const nlattr* attribute) {
  if (attribute == nullptr || mnl_attr_validate(attribute, MNL_TYPE_NUL_STRING) < 0) {
    return std::nullopt;
  }
  return std::string(mnl_attr_get_str(attribute));
}

// Reason and histogram nests: attribute type = index + 1, a u64 each.
std::vector<uint64_t> parse_counter_nest(const nlattr* nest) {
  std::vector<uint64_t> counters;
  if (nest == nullptr) {
    return counters;
  }
  for_each_nested(nest, [&counters](const nlattr* attribute) {
    const uint16_t type = mnl_attr_get_type(attribute);
    std::optional<uint64_t> value = get_u64(attribute);
    if (type == 0 || !value) {
      return;
    }
    if (counters.size() < type) {
      counters.resize(type, 0);
    }
    counters[type - 1] = *value;
  });
  return counters;
}

void add_counters(std::vector<uint64_t>& sum, const std::vector<uint64_t>& more) {
  if (sum.size() < more.size()) {
    sum.resize(more.size(), 0);
  }
  for (size_t i = 0; i < more.size(); ++i) {
    sum[i] += more[i];
  }
}

Attachment parse_attachment(const nlmsghdr& message) {
  auto attributes = parse_genl<NFB_A_MAX + 1>(message);
  Attachment attachment;
  attachment.flowtable.family = static_cast<uint8_t>(get_u32(attributes[NFB_A_FAMILY]).value_or(0));
  attachment.flowtable.table = get_string(attributes[NFB_A_TABLE]).value_or("");
  attachment.flowtable.flowtable = get_string(attributes[NFB_A_FLOWTABLE]).value_or("");
  if (auto priority = get_u32(attributes[NFB_A_PRIORITY])) {
    attachment.flowtable_priority = static_cast<int32_t>(*priority);
  }
  attachment.scans = get_u64(attributes[NFB_A_SCANS]);
  attachment.state = get_u8(attributes[NFB_A_STATE]);
  if (const nlattr* devices = attributes[NFB_A_DEVICES]) {
    for_each_nested(devices, [&attachment](const nlattr* device) {
      if (mnl_attr_get_type(device) != NFB_A_DEVICE) {
        return;
      }
      auto device_attributes = parse_nested<NFB_DEV_A_MAX + 1>(device);
      std::optional<bool> adjacent;
      if (auto flag = get_u8(device_attributes[NFB_DEV_A_ADJACENT])) {
        adjacent = *flag != 0;
      }
      attachment.devices.push_back(AttachedDevice{
          .ifindex = get_u32(device_attributes[NFB_DEV_A_IFINDEX]).value_or(0),
          .ifname = get_string(device_attributes[NFB_DEV_A_IFNAME]).value_or(""),
          .adjacent = adjacent,
          .checks = get_u64(device_attributes[NFB_DEV_A_CHECKS]),
      });
    });
  }
  return attachment;
}

std::optional<CpuStats> parse_cpu_stats(const nlmsghdr& message) {
  auto attributes = parse_genl<NFB_A_MAX + 1>(message);
  if (attributes[NFB_A_STATS] == nullptr) {
    return std::nullopt;
  }
  auto stats = parse_nested<NFB_STATS_A_MAX + 1>(attributes[NFB_A_STATS]);
  CpuStats cpu;
  cpu.cpu = get_u32(stats[NFB_STATS_A_CPU]).value_or(0);
  cpu.packets = get_u64(stats[NFB_STATS_A_PACKETS]).value_or(0);
  cpu.bulks = get_u64(stats[NFB_STATS_A_BULKS]).value_or(0);
  cpu.histogram = parse_counter_nest(stats[NFB_STATS_A_HIST]);
  if (cpu.histogram.size() > kMaxHistogramBuckets) {
    // Indexes come from the kernel: beyond 63 a bucket's 2^i does not
    // exist (and 1 << i would be undefined). Counted in the last bucket.
    for (size_t bucket = kMaxHistogramBuckets; bucket < cpu.histogram.size(); ++bucket) {
      cpu.histogram[kMaxHistogramBuckets - 1] += cpu.histogram[bucket];
    }
    cpu.histogram.resize(kMaxHistogramBuckets);
  }
  cpu.decline = parse_counter_nest(stats[NFB_STATS_A_DECLINE]);
  cpu.fallback = parse_counter_nest(stats[NFB_STATS_A_FALLBACK]);
  cpu.drop = parse_counter_nest(stats[NFB_STATS_A_DROP]);
  cpu.taken_encap = parse_counter_nest(stats[NFB_STATS_A_TAKEN_ENCAP]);
  cpu.taken_xmit = parse_counter_nest(stats[NFB_STATS_A_TAKEN_XMIT]);
  return cpu;
}

}  // namespace

CpuStats& CpuStats::operator+=(const CpuStats& other) {
  packets += other.packets;
  bulks += other.bulks;
  add_counters(histogram, other.histogram);
  add_counters(decline, other.decline);
  add_counters(fallback, other.fallback);
  add_counters(drop, other.drop);
  add_counters(taken_encap, other.taken_encap);
  add_counters(taken_xmit, other.taken_xmit);
  return *this;
}

CpuStats total_stats(const std::vector<CpuStats>& per_cpu) {
  CpuStats total;
  for (const CpuStats& cpu : per_cpu) {
    total += cpu;
  }
  return total;
}

NfbClient::NfbClient(std::unique_ptr<Transport> transport) : channel_(std::move(transport)) {}

uint16_t NfbClient::family_id() {
  if (family_id_) {
    return *family_id_;
  }
  std::vector<uint8_t> buffer(kRequestBufferSize);
  nlmsghdr* message = mnl_nlmsg_put_header(buffer.data());
  message->nlmsg_type = GENL_ID_CTRL;
  message->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  message->nlmsg_seq = channel_.next_sequence();
  auto* genl = static_cast<genlmsghdr*>(mnl_nlmsg_put_extra_header(message, sizeof(genlmsghdr)));
  genl->cmd = CTRL_CMD_GETFAMILY;
  genl->version = 1;
  mnl_attr_put_strz(message, CTRL_ATTR_FAMILY_NAME, NFB_GENL_NAME);
  buffer.resize(message->nlmsg_len);

  std::optional<uint16_t> resolved;
  std::optional<uint32_t> version;
  try {
    channel_.transact(buffer, [&resolved, &version](const nlmsghdr& reply) {
      auto attributes = parse_genl<CTRL_ATTR_MAX + 1>(reply);
      const nlattr* id = attributes[CTRL_ATTR_FAMILY_ID];
      if (id != nullptr && mnl_attr_validate(id, MNL_TYPE_U16) >= 0) {
        resolved = mnl_attr_get_u16(id);
      }
      version = get_u32(attributes[CTRL_ATTR_VERSION]);
    });
  } catch (const KernelError& error) {
    if (error.sys_errno() == ENOENT) {
      throw Error(
          "the nf_flow_bulk kernel module is not loaded and could not be loaded on demand "
          "(is it installed? try: modprobe nf_flow_bulk)",
          ENOENT, error.extack());
    }
    throw;
  }
  if (!resolved) {
    throw Error("the kernel's reply to the family lookup carried no family id", EPROTO);
  }
  // Until 1.0 an interface version changes attribute and counter numbers
  // (uapi/nf_flow_bulk.h): read with another version's numbers, the
  // module's replies would be misread, not refused.
  if (version != static_cast<uint32_t>(NFB_GENL_VERSION)) {
    throw Error("the loaded nf_flow_bulk module speaks interface version " +
                    (version ? std::to_string(*version) : std::string("(none)")) +
                    ", this flowbulk version " + std::to_string(NFB_GENL_VERSION) +
                    ": install the tool and the module from the same release",
                EPROTO);
  }
  family_id_ = resolved;
  return *resolved;
}

std::vector<uint8_t> NfbClient::build_request(uint8_t command, uint16_t flags,
                                              const FlowtableRef* flowtable) {
  std::vector<uint8_t> buffer(kRequestBufferSize);
  nlmsghdr* message = mnl_nlmsg_put_header(buffer.data());
  message->nlmsg_type = family_id();
  message->nlmsg_flags = NLM_F_REQUEST | flags;
  message->nlmsg_seq = channel_.next_sequence();
  auto* genl = static_cast<genlmsghdr*>(mnl_nlmsg_put_extra_header(message, sizeof(genlmsghdr)));
  genl->cmd = command;
  genl->version = NFB_GENL_VERSION;
  if (flowtable != nullptr) {
    mnl_attr_put_u32(message, NFB_A_FAMILY, flowtable->family);
    mnl_attr_put_strz(message, NFB_A_TABLE, flowtable->table.c_str());
    mnl_attr_put_strz(message, NFB_A_FLOWTABLE, flowtable->flowtable.c_str());
  }
  buffer.resize(message->nlmsg_len);
  return buffer;
}

void NfbClient::attach(const FlowtableRef& flowtable) {
  channel_.transact(build_request(NFB_CMD_ATTACH, NLM_F_ACK, &flowtable));
}

void NfbClient::detach(const FlowtableRef& flowtable) {
  channel_.transact(build_request(NFB_CMD_DETACH, NLM_F_ACK, &flowtable));
}

std::vector<Attachment> NfbClient::list_attachments() {
  std::vector<Attachment> attachments;
  channel_.transact(
      build_request(NFB_CMD_GET_ATTACH, NLM_F_DUMP, nullptr),
      [&attachments](const nlmsghdr& reply) { attachments.push_back(parse_attachment(reply)); });
  return attachments;
}

std::vector<CpuStats> NfbClient::get_stats() {
  std::vector<CpuStats> per_cpu;
  channel_.transact(build_request(NFB_CMD_GET_STATS, NLM_F_DUMP, nullptr),
                    [&per_cpu](const nlmsghdr& reply) {
                      if (auto cpu = parse_cpu_stats(reply)) {
                        per_cpu.push_back(std::move(*cpu));
                      }
                    });
  std::sort(per_cpu.begin(), per_cpu.end(),
            [](const CpuStats& a, const CpuStats& b) { return a.cpu < b.cpu; });
  return per_cpu;
}

void NfbClient::reset_stats() {
  channel_.transact(build_request(NFB_CMD_RESET_STATS, NLM_F_ACK, nullptr));
}

}  // namespace flowbulk
