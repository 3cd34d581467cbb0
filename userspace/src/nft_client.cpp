// SPDX-License-Identifier: GPL-2.0
#include "nft_client.h"

#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <linux/in.h>
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

namespace {

// `meta l4proto P [counter] flow add @FT` read back from a dumped rule, or
// nullopt for any other rule.
std::optional<OffloadRule> as_offload_rule(const nftnl_rule* rule) {
  std::vector<nftnl_expr*> expressions;
  nftnl_expr_iter* iter = nftnl_expr_iter_create(rule);
  if (iter == nullptr) {
    return std::nullopt;
  }
  for (nftnl_expr* expr = nftnl_expr_iter_next(iter); expr != nullptr;
       expr = nftnl_expr_iter_next(iter)) {
    expressions.push_back(expr);
  }
  nftnl_expr_iter_destroy(iter);
  auto name_of = [](const nftnl_expr* expr) {
    return text_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_NAME));
  };
  const bool counter = expressions.size() == 4;
  if ((expressions.size() != 3 && !counter) || name_of(expressions[0]) != "meta" ||
      name_of(expressions[1]) != "cmp" || (counter && name_of(expressions[2]) != "counter") ||
      name_of(expressions.back()) != "flow_offload") {
    return std::nullopt;
  }
  const nftnl_expr* meta = expressions[0];
  const nftnl_expr* compare = expressions[1];
  uint32_t length = 0;
  const auto* data =
      static_cast<const uint8_t*>(nftnl_expr_get(compare, NFTNL_EXPR_CMP_DATA, &length));
  if (nftnl_expr_get_u32(meta, NFTNL_EXPR_META_KEY) != NFT_META_L4PROTO ||
      nftnl_expr_get_u32(compare, NFTNL_EXPR_CMP_OP) != NFT_CMP_EQ ||
      nftnl_expr_get_u32(compare, NFTNL_EXPR_CMP_SREG) !=
          nftnl_expr_get_u32(meta, NFTNL_EXPR_META_DREG) ||
      data == nullptr || length != 1) {
    return std::nullopt;
  }
  return OffloadRule{
      .family = static_cast<uint8_t>(nftnl_rule_get_u32(rule, NFTNL_RULE_FAMILY)),
      .table = text_or_empty(nftnl_rule_get_str(rule, NFTNL_RULE_TABLE)),
      .chain = text_or_empty(nftnl_rule_get_str(rule, NFTNL_RULE_CHAIN)),
      .handle = nftnl_rule_get_u64(rule, NFTNL_RULE_HANDLE),
      .flowtable =
          text_or_empty(nftnl_expr_get_str(expressions.back(), NFTNL_EXPR_FLOW_TABLE_NAME)),
      .protocol = data[0],
      .counter = counter,
  };
}

}  // namespace

std::optional<ChainInfo> NftClient::find_chain(uint8_t family, const std::string& table,
                                               const std::string& name) {
  std::optional<ChainInfo> found;
  // The kernel's chain dump has no table filter: the family's chains, ours
  // picked out.
  channel_.transact(
      build_dump_request(channel_, NFT_MSG_GETCHAIN, family), [&](const nlmsghdr& reply) {
        NftnlChainPtr chain(nftnl_chain_alloc());
        if (!chain || nftnl_chain_nlmsg_parse(&reply, chain.get()) < 0 ||
            table != text_or_empty(nftnl_chain_get_str(chain.get(), NFTNL_CHAIN_TABLE)) ||
            name != text_or_empty(nftnl_chain_get_str(chain.get(), NFTNL_CHAIN_NAME))) {
          return;
        }
        ChainInfo info;
        info.name = name;
        info.handle = nftnl_chain_get_u64(chain.get(), NFTNL_CHAIN_HANDLE);
        info.base = nftnl_chain_is_set(chain.get(), NFTNL_CHAIN_HOOKNUM);
        info.type = text_or_empty(nftnl_chain_get_str(chain.get(), NFTNL_CHAIN_TYPE));
        info.hooknum = nftnl_chain_get_u32(chain.get(), NFTNL_CHAIN_HOOKNUM);
        info.priority = nftnl_chain_get_s32(chain.get(), NFTNL_CHAIN_PRIO);
        info.policy = nftnl_chain_get_u32(chain.get(), NFTNL_CHAIN_POLICY);
        found = std::move(info);
      });
  return found;
}

std::vector<OffloadRule> NftClient::list_offload_rules(std::optional<uint8_t> family,
                                                       const std::string& table,
                                                       const std::string& chain) {
  std::vector<uint8_t> request(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* message =
      nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(request.data()), NFT_MSG_GETRULE,
                            family.value_or(NFPROTO_UNSPEC), NLM_F_DUMP, channel_.next_sequence());
  if (!table.empty()) {
    // The kernel filters a rule dump by table and chain.
    NftnlRulePtr filter(nftnl_rule_alloc());
    if (!filter) {
      throw Error("out of memory", ENOMEM);
    }
    nftnl_rule_set_str(filter.get(), NFTNL_RULE_TABLE, table.c_str());
    if (!chain.empty()) {
      nftnl_rule_set_str(filter.get(), NFTNL_RULE_CHAIN, chain.c_str());
    }
    nftnl_rule_nlmsg_build_payload(message, filter.get());
  }
  request.resize(message->nlmsg_len);
  std::vector<OffloadRule> rules;
  channel_.transact(request, [&](const nlmsghdr& reply) {
    NftnlRulePtr rule(nftnl_rule_alloc());
    if (!rule || nftnl_rule_nlmsg_parse(&reply, rule.get()) < 0) {
      return;
    }
    if (auto offload = as_offload_rule(rule.get())) {
      // Filtered here too: an older kernel may ignore the dump filter.
      if ((table.empty() || offload->table == table) &&
          (chain.empty() || offload->chain == chain)) {
        rules.push_back(std::move(*offload));
      }
    }
  });
  return rules;
}

OffloadResult NftClient::add_offload(const OffloadSpec& spec) {
  const FlowtableRef& ref = spec.flowtable;
  std::vector<uint8_t> wanted;
  if (spec.protocol != OffloadProtocol::kUdp) {
    wanted.push_back(IPPROTO_TCP);
  }
  if (spec.protocol != OffloadProtocol::kTcp) {
    wanted.push_back(IPPROTO_UDP);
  }

  OffloadResult result;
  const std::optional<ChainInfo> chain = find_chain(ref.family, ref.table, spec.chain);
  if (chain && (!chain->base || chain->hooknum != NF_INET_FORWARD)) {
    throw Error("chain " + spec.chain + " exists and is not a base chain at hook forward", EEXIST);
  }
  if (!chain && (spec.position == RulePosition::kAfter || spec.position == RulePosition::kBefore)) {
    throw Error("chain " + spec.chain + " does not exist, so it has no rule with handle " +
                    std::to_string(spec.handle),
                ENOENT);
  }
  std::vector<uint8_t> missing;
  if (chain) {
    const auto existing = list_offload_rules(ref.family, ref.table, spec.chain);
    for (uint8_t protocol : wanted) {
      auto same = std::find_if(existing.begin(), existing.end(), [&](const OffloadRule& rule) {
        return rule.flowtable == ref.flowtable && rule.protocol == protocol;
      });
      if (same != existing.end()) {
        result.present.push_back(*same);
      } else {
        missing.push_back(protocol);
      }
    }
  } else {
    missing = wanted;
  }
  if (missing.empty()) {
    return result;  // nothing to change, and nothing sent
  }

  NftBatch batch(channel_);
  if (!chain) {
    NftnlChainPtr created(nftnl_chain_alloc());
    if (!created) {
      throw Error("out of memory", ENOMEM);
    }
    nftnl_chain_set_u32(created.get(), NFTNL_CHAIN_FAMILY, ref.family);
    nftnl_chain_set_str(created.get(), NFTNL_CHAIN_TABLE, ref.table.c_str());
    nftnl_chain_set_str(created.get(), NFTNL_CHAIN_NAME, spec.chain.c_str());
    nftnl_chain_set_str(created.get(), NFTNL_CHAIN_TYPE, "filter");
    nftnl_chain_set_u32(created.get(), NFTNL_CHAIN_HOOKNUM, NF_INET_FORWARD);
    nftnl_chain_set_s32(created.get(), NFTNL_CHAIN_PRIO, 0);  // priority filter
    // EXCL and no policy: if someone created the chain since we looked, the
    // kernel says EEXIST instead of updating their chain.
    nftnl_chain_nlmsg_build_payload(
        batch.add(NFT_MSG_NEWCHAIN, ref.family, NLM_F_CREATE | NLM_F_EXCL), created.get());
    batch.finish_message();
    result.chain_created = true;
  }
  // Rules placed at one spot one after the other: insertions at the top or
  // after a handle go in reverse order, so the chain reads tcp, udp.
  const bool reverse = spec.position == RulePosition::kTop || spec.position == RulePosition::kAfter;
  if (reverse) {
    std::reverse(missing.begin(), missing.end());
  }
  for (uint8_t protocol : missing) {
    NftnlRulePtr rule = make_offload_rule(spec, protocol);
    uint16_t flags = NLM_F_CREATE;
    if (spec.position == RulePosition::kBottom || spec.position == RulePosition::kAfter) {
      flags |= NLM_F_APPEND;
    }
    if (spec.position == RulePosition::kAfter || spec.position == RulePosition::kBefore) {
      nftnl_rule_set_u64(rule.get(), NFTNL_RULE_POSITION, spec.handle);
    }
    nftnl_rule_nlmsg_build_payload(batch.add(NFT_MSG_NEWRULE, ref.family, flags), rule.get());
    batch.finish_message();
  }
  batch.commit();

  // The handles the kernel gave: the offload rules that were not there.
  for (OffloadRule& rule : list_offload_rules(ref.family, ref.table, spec.chain)) {
    const bool old =
        std::any_of(result.present.begin(), result.present.end(),
                    [&](const OffloadRule& kept) { return kept.handle == rule.handle; });
    const bool ours = rule.flowtable == ref.flowtable &&
                      std::find(missing.begin(), missing.end(), rule.protocol) != missing.end();
    if (!old && ours) {
      result.added.push_back(std::move(rule));
    }
  }
  return result;
}

void NftClient::delete_rules(const std::vector<OffloadRule>& rules) {
  NftBatch batch(channel_);
  for (const OffloadRule& victim : rules) {
    NftnlRulePtr rule(nftnl_rule_alloc());
    if (!rule) {
      throw Error("out of memory", ENOMEM);
    }
    nftnl_rule_set_u32(rule.get(), NFTNL_RULE_FAMILY, victim.family);
    nftnl_rule_set_str(rule.get(), NFTNL_RULE_TABLE, victim.table.c_str());
    nftnl_rule_set_str(rule.get(), NFTNL_RULE_CHAIN, victim.chain.c_str());
    nftnl_rule_set_u64(rule.get(), NFTNL_RULE_HANDLE, victim.handle);
    nftnl_rule_nlmsg_build_payload(batch.add(NFT_MSG_DELRULE, victim.family, 0), rule.get());
    batch.finish_message();
  }
  batch.commit();
}

bool NftClient::table_exists(uint8_t family, const std::string& name) {
  auto tables = list_tables(family);
  return std::any_of(tables.begin(), tables.end(), [&](const NftnlTablePtr& table) {
    return name == text_or_empty(nftnl_table_get_str(table.get(), NFTNL_TABLE_NAME));
  });
}

bool NftClient::flowtable_exists(const FlowtableRef& ref) {
  auto flowtables = list_flowtables(ref.family);
  return std::any_of(flowtables.begin(), flowtables.end(), [&](const NftnlFlowtablePtr& ft) {
    return ref.table == text_or_empty(nftnl_flowtable_get_str(ft.get(), NFTNL_FLOWTABLE_TABLE)) &&
           ref.flowtable == text_or_empty(nftnl_flowtable_get_str(ft.get(), NFTNL_FLOWTABLE_NAME));
  });
}

}  // namespace flowbulk
