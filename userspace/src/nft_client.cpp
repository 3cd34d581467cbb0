// SPDX-License-Identifier: GPL-2.0
#include "nft_client.h"

#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "error.h"

namespace flowbulk {

namespace {

// Every batch we build is a handful of small messages.
constexpr size_t kBatchBufferSize = size_t{64} * 1024;

// An nfnetlink batch: begin, the messages, end. The kernel applies it as one
// transaction.
class NftBatch {
 public:
  explicit NftBatch(NetlinkChannel& channel)
      : channel_(channel),
        buffer_(kBatchBufferSize),
        batch_(mnl_nlmsg_batch_start(buffer_.data(), buffer_.size())) {
    nftnl_batch_begin(static_cast<char*>(mnl_nlmsg_batch_current(batch_.get())),
                      channel_.next_sequence());
    mnl_nlmsg_batch_next(batch_.get());
  }

  // Starts the next message; the caller fills the payload through libnftnl.
  nlmsghdr* add(uint16_t message_type, uint8_t family, uint16_t flags) {
    nlmsghdr* message =
        nftnl_nlmsg_build_hdr(static_cast<char*>(mnl_nlmsg_batch_current(batch_.get())),
                              message_type, family, flags | NLM_F_ACK, channel_.next_sequence());
    pending_ = true;
    return message;
  }

  // Closes the message started by add() once its payload is in.
  void finish_message() {
    if (pending_ && !mnl_nlmsg_batch_next(batch_.get())) {
      throw Error("netlink batch is full", ENOBUFS);
    }
    pending_ = false;
  }

  void commit() {
    finish_message();
    nftnl_batch_end(static_cast<char*>(mnl_nlmsg_batch_current(batch_.get())),
                    channel_.next_sequence());
    mnl_nlmsg_batch_next(batch_.get());
    const auto* head = static_cast<const uint8_t*>(mnl_nlmsg_batch_head(batch_.get()));
    channel_.transact(std::span<const uint8_t>(head, mnl_nlmsg_batch_size(batch_.get())));
  }

 private:
  NetlinkChannel& channel_;
  std::vector<uint8_t> buffer_;
  MnlBatchPtr batch_;
  bool pending_ = false;
};

std::vector<uint8_t> build_dump_request(NetlinkChannel& channel, uint16_t message_type,
                                        uint8_t family) {
  std::vector<uint8_t> buffer(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* message = nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(buffer.data()), message_type,
                                            family, NLM_F_DUMP, channel.next_sequence());
  buffer.resize(message->nlmsg_len);
  return buffer;
}

NftnlTablePtr make_table(uint8_t family, const std::string& name) {
  NftnlTablePtr table(nftnl_table_alloc());
  if (!table) {
    throw Error("out of memory", ENOMEM);
  }
  nftnl_table_set_u32(table.get(), NFTNL_TABLE_FAMILY, family);
  nftnl_table_set_str(table.get(), NFTNL_TABLE_NAME, name.c_str());
  return table;
}

NftnlFlowtablePtr make_flowtable(const FlowtableRef& ref) {
  NftnlFlowtablePtr flowtable(nftnl_flowtable_alloc());
  if (!flowtable) {
    throw Error("out of memory", ENOMEM);
  }
  nftnl_flowtable_set_u32(flowtable.get(), NFTNL_FLOWTABLE_FAMILY, ref.family);
  nftnl_flowtable_set_str(flowtable.get(), NFTNL_FLOWTABLE_TABLE, ref.table.c_str());
  nftnl_flowtable_set_str(flowtable.get(), NFTNL_FLOWTABLE_NAME, ref.flowtable.c_str());
  return flowtable;
}

NftnlExprPtr make_expr(const char* name) {
  NftnlExprPtr expr(nftnl_expr_alloc(name));
  if (!expr) {
    throw Error(std::string("libnftnl does not know the expression ") + name, ENOMEM);
  }
  return expr;
}

// `meta l4proto PROTOCOL [counter] flow add @FLOWTABLE`, as nft builds it.
NftnlRulePtr make_offload_rule(const OffloadSpec& spec, uint8_t l4protocol) {
  NftnlRulePtr rule(nftnl_rule_alloc());
  if (!rule) {
    throw Error("out of memory", ENOMEM);
  }
  nftnl_rule_set_u32(rule.get(), NFTNL_RULE_FAMILY, spec.flowtable.family);
  nftnl_rule_set_str(rule.get(), NFTNL_RULE_TABLE, spec.flowtable.table.c_str());
  nftnl_rule_set_str(rule.get(), NFTNL_RULE_CHAIN, spec.chain.c_str());

  NftnlExprPtr meta = make_expr("meta");
  nftnl_expr_set_u32(meta.get(), NFTNL_EXPR_META_KEY, NFT_META_L4PROTO);
  nftnl_expr_set_u32(meta.get(), NFTNL_EXPR_META_DREG, NFT_REG_1);
  nftnl_rule_add_expr(rule.get(), meta.release());  // the rule owns it now

  NftnlExprPtr compare = make_expr("cmp");
  nftnl_expr_set_u32(compare.get(), NFTNL_EXPR_CMP_SREG, NFT_REG_1);
  nftnl_expr_set_u32(compare.get(), NFTNL_EXPR_CMP_OP, NFT_CMP_EQ);
  nftnl_expr_set_data(compare.get(), NFTNL_EXPR_CMP_DATA, &l4protocol, sizeof(l4protocol));
  nftnl_rule_add_expr(rule.get(), compare.release());

  if (spec.counter) {
    nftnl_rule_add_expr(rule.get(), make_expr("counter").release());
  }

  NftnlExprPtr offload = make_expr("flow_offload");
  nftnl_expr_set_str(offload.get(), NFTNL_EXPR_FLOW_TABLE_NAME, spec.flowtable.flowtable.c_str());
  nftnl_rule_add_expr(rule.get(), offload.release());
  return rule;
}

}  // namespace

NftClient::NftClient(std::unique_ptr<Transport> transport) : channel_(std::move(transport)) {}

void NftClient::add_table(uint8_t family, const std::string& name) {
  NftBatch batch(channel_);
  NftnlTablePtr table = make_table(family, name);
  // EXCL: an existing table is an error here (nft's `create`, not `add`),
  // so a typo cannot silently reuse someone else's table.
  nftnl_table_nlmsg_build_payload(batch.add(NFT_MSG_NEWTABLE, family, NLM_F_CREATE | NLM_F_EXCL),
                                  table.get());
  batch.commit();
}

void NftClient::delete_table(uint8_t family, const std::string& name) {
  NftBatch batch(channel_);
  NftnlTablePtr table = make_table(family, name);
  nftnl_table_nlmsg_build_payload(batch.add(NFT_MSG_DELTABLE, family, 0), table.get());
  batch.commit();
}

std::vector<NftnlTablePtr> NftClient::list_tables(std::optional<uint8_t> family) {
  std::vector<NftnlTablePtr> tables;
  channel_.transact(build_dump_request(channel_, NFT_MSG_GETTABLE, family.value_or(NFPROTO_UNSPEC)),
                    [&tables](const nlmsghdr& reply) {
                      NftnlTablePtr table(nftnl_table_alloc());
                      if (table && nftnl_table_nlmsg_parse(&reply, table.get()) >= 0) {
                        tables.push_back(std::move(table));
                      }
                    });
  return tables;
}

void NftClient::add_flowtable(const FlowtableSpec& spec) {
  NftBatch batch(channel_);
  NftnlFlowtablePtr flowtable = make_flowtable(spec.ref);
  nftnl_flowtable_set_u32(flowtable.get(), NFTNL_FLOWTABLE_HOOKNUM, NF_NETDEV_INGRESS);
  nftnl_flowtable_set_s32(flowtable.get(), NFTNL_FLOWTABLE_PRIO, spec.priority);
  std::vector<const char*> devices;
  devices.reserve(spec.devices.size() + 1);
  for (const std::string& device : spec.devices) {
    devices.push_back(device.c_str());
  }
  devices.push_back(nullptr);  // libnftnl wants a NULL-terminated array
  nftnl_flowtable_set_array(flowtable.get(), NFTNL_FLOWTABLE_DEVICES, devices.data());
  if (spec.counter) {
    nftnl_flowtable_set_u32(flowtable.get(), NFTNL_FLOWTABLE_FLAGS, NFT_FLOWTABLE_COUNTER);
  }
  nftnl_flowtable_nlmsg_build_payload(
      batch.add(NFT_MSG_NEWFLOWTABLE, spec.ref.family, NLM_F_CREATE | NLM_F_EXCL), flowtable.get());
  batch.commit();
}

void NftClient::delete_flowtable(const FlowtableRef& ref) {
  NftBatch batch(channel_);
  NftnlFlowtablePtr flowtable = make_flowtable(ref);
  nftnl_flowtable_nlmsg_build_payload(batch.add(NFT_MSG_DELFLOWTABLE, ref.family, 0),
                                      flowtable.get());
  batch.commit();
}

std::vector<NftnlFlowtablePtr> NftClient::list_flowtables(std::optional<uint8_t> family) {
  std::vector<NftnlFlowtablePtr> flowtables;
  channel_.transact(
      build_dump_request(channel_, NFT_MSG_GETFLOWTABLE, family.value_or(NFPROTO_UNSPEC)),
      [&flowtables](const nlmsghdr& reply) {
        NftnlFlowtablePtr flowtable(nftnl_flowtable_alloc());
        if (flowtable && nftnl_flowtable_nlmsg_parse(&reply, flowtable.get()) >= 0) {
          flowtables.push_back(std::move(flowtable));
        }
      });
  return flowtables;
}

void NftClient::add_offload(const OffloadSpec& spec) {
  NftBatch batch(channel_);
  const FlowtableRef& ref = spec.flowtable;

  NftnlChainPtr chain(nftnl_chain_alloc());
  if (!chain) {
    throw Error("out of memory", ENOMEM);
  }
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_FAMILY, ref.family);
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_TABLE, ref.table.c_str());
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_NAME, spec.chain.c_str());
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_TYPE, "filter");
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_HOOKNUM, NF_INET_FORWARD);
  nftnl_chain_set_s32(chain.get(), NFTNL_CHAIN_PRIO, 0);  // priority filter
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_POLICY, NF_ACCEPT);
  // No EXCL: like `nft add chain`, an existing forward chain with the same
  // hook is reused, so several flowtables can share it.
  nftnl_chain_nlmsg_build_payload(batch.add(NFT_MSG_NEWCHAIN, ref.family, NLM_F_CREATE),
                                  chain.get());
  batch.finish_message();

  std::vector<uint8_t> protocols;
  if (spec.protocol != OffloadProtocol::kUdp) {
    protocols.push_back(IPPROTO_TCP);
  }
  if (spec.protocol != OffloadProtocol::kTcp) {
    protocols.push_back(IPPROTO_UDP);
  }
  for (uint8_t protocol : protocols) {
    NftnlRulePtr rule = make_offload_rule(spec, protocol);
    nftnl_rule_nlmsg_build_payload(
        batch.add(NFT_MSG_NEWRULE, ref.family, NLM_F_CREATE | NLM_F_APPEND), rule.get());
    batch.finish_message();
  }
  batch.commit();
}

bool NftClient::table_exists(uint8_t family, const std::string& name) {
  auto tables = list_tables(family);
  return std::any_of(tables.begin(), tables.end(), [&](const NftnlTablePtr& table) {
    return name == nftnl_table_get_str(table.get(), NFTNL_TABLE_NAME);
  });
}

bool NftClient::flowtable_exists(const FlowtableRef& ref) {
  auto flowtables = list_flowtables(ref.family);
  return std::any_of(flowtables.begin(), flowtables.end(), [&](const NftnlFlowtablePtr& ft) {
    return ref.table == nftnl_flowtable_get_str(ft.get(), NFTNL_FLOWTABLE_TABLE) &&
           ref.flowtable == nftnl_flowtable_get_str(ft.get(), NFTNL_FLOWTABLE_NAME);
  });
}

}  // namespace flowbulk
