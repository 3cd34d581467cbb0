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

std::vector<uint8_t> build_dump_request(NetlinkChannel& channel, uint16_t message_type,
                                        uint8_t family) {
  std::vector<uint8_t> buffer(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* message = nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(buffer.data()), message_type,
                                            family, NLM_F_DUMP, channel.next_sequence());
  buffer.resize(message->nlmsg_len);
  return buffer;
}

}  // namespace

NftClient::NftClient(std::unique_ptr<Transport> transport) : channel_(std::move(transport)) {}

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

void NftClient::dump_rules(std::optional<uint8_t> family, const std::string& table,
                           const std::string& chain,
                           const std::function<void(const nftnl_rule&)>& each) {
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
  channel_.transact(request, [&](const nlmsghdr& reply) {
    NftnlRulePtr rule(nftnl_rule_alloc());
    if (!rule || nftnl_rule_nlmsg_parse(&reply, rule.get()) < 0) {
      return;
    }
    // Filtered here too: an older kernel may ignore the dump filter.
    if ((table.empty() ||
         table == text_or_empty(nftnl_rule_get_str(rule.get(), NFTNL_RULE_TABLE))) &&
        (chain.empty() ||
         chain == text_or_empty(nftnl_rule_get_str(rule.get(), NFTNL_RULE_CHAIN)))) {
      each(*rule);
    }
  });
}

std::vector<OffloadRule> NftClient::list_offload_rules(std::optional<uint8_t> family,
                                                       const std::string& table,
                                                       const std::string& chain) {
  std::vector<OffloadRule> rules;
  dump_rules(family, table, chain, [&rules](const nftnl_rule& rule) {
    if (auto offload = as_offload_rule(&rule)) {
      rules.push_back(std::move(*offload));
    }
  });
  return rules;
}

std::vector<uint64_t> NftClient::rule_handles(uint8_t family, const std::string& table,
                                              const std::string& chain) {
  std::vector<uint64_t> handles;
  dump_rules(family, table, chain, [&handles](const nftnl_rule& rule) {
    handles.push_back(nftnl_rule_get_u64(&rule, NFTNL_RULE_HANDLE));
  });
  return handles;
}

}  // namespace flowbulk
