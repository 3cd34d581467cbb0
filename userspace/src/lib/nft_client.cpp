// SPDX-License-Identifier: GPL-2.0
#include "nft_client.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <linux/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

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

// Whether a dumped rule holds a flow_offload expression (`flow add @FT`).
bool has_flow_offload(const nftnl_rule* rule) {
  nftnl_expr_iter* iter = nftnl_expr_iter_create(rule);
  if (iter == nullptr) {
    throw Error("out of memory", ENOMEM);
  }
  bool found = false;
  for (nftnl_expr* expr = nftnl_expr_iter_next(iter); expr != nullptr && !found;
       expr = nftnl_expr_iter_next(iter)) {
    found = text_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_NAME)) == "flow_offload";
  }
  nftnl_expr_iter_destroy(iter);
  return found;
}

}  // namespace

std::optional<TableInfo> NftClient::find_table(uint8_t family, const std::string& name) {
  std::optional<TableInfo> found;
  for (const NftnlTablePtr& table : list_tables(family)) {
    if (name == text_or_empty(nftnl_table_get_str(table.get(), NFTNL_TABLE_NAME))) {
      TableInfo info;
      if (nftnl_table_is_set(table.get(), NFTNL_TABLE_FLAGS)) {
        info.flags = nftnl_table_get_u32(table.get(), NFTNL_TABLE_FLAGS);
      }
      if (nftnl_table_is_set(table.get(), NFTNL_TABLE_OWNER)) {
        info.owner = nftnl_table_get_u32(table.get(), NFTNL_TABLE_OWNER);
      }
      found = info;
    }
  }
  return found;
}

std::vector<ChainInfo> NftClient::list_chains(uint8_t family, const std::string& table) {
  std::vector<ChainInfo> chains;
  // Filtered here too: the kernel's chain dump may ignore the table.
  channel_.transact(
      build_dump_request(channel_, NFT_MSG_GETCHAIN, family), [&](const nlmsghdr& reply) {
        NftnlChainPtr chain(nftnl_chain_alloc());
        if (!chain || nftnl_chain_nlmsg_parse(&reply, chain.get()) < 0 ||
            table != text_or_empty(nftnl_chain_get_str(chain.get(), NFTNL_CHAIN_TABLE))) {
          return;
        }
        ChainInfo info;
        info.name = text_or_empty(nftnl_chain_get_str(chain.get(), NFTNL_CHAIN_NAME));
        info.handle = nftnl_chain_get_u64(chain.get(), NFTNL_CHAIN_HANDLE);
        info.base = nftnl_chain_is_set(chain.get(), NFTNL_CHAIN_HOOKNUM);
        info.type = text_or_empty(nftnl_chain_get_str(chain.get(), NFTNL_CHAIN_TYPE));
        info.hooknum = nftnl_chain_get_u32(chain.get(), NFTNL_CHAIN_HOOKNUM);
        info.priority = nftnl_chain_get_s32(chain.get(), NFTNL_CHAIN_PRIO);
        info.policy = nftnl_chain_get_u32(chain.get(), NFTNL_CHAIN_POLICY);
        chains.push_back(std::move(info));
      });
  return chains;
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

std::vector<ChainRef> NftClient::offload_chains(std::optional<uint8_t> family,
                                                const std::string& table,
                                                const std::string& chain) {
  std::vector<ChainRef> chains;
  dump_rules(family, table, chain, [&chains](const nftnl_rule& rule) {
    if (!has_flow_offload(&rule)) {
      return;
    }
    ChainRef found{.family = static_cast<uint8_t>(nftnl_rule_get_u32(&rule, NFTNL_RULE_FAMILY)),
                   .table = text_or_empty(nftnl_rule_get_str(&rule, NFTNL_RULE_TABLE)),
                   .chain = text_or_empty(nftnl_rule_get_str(&rule, NFTNL_RULE_CHAIN))};
    const bool known = std::any_of(chains.begin(), chains.end(), [&found](const ChainRef& seen) {
      return seen.family == found.family && seen.table == found.table && seen.chain == found.chain;
    });
    if (!known) {
      chains.push_back(std::move(found));
    }
  });
  return chains;
}

uint32_t NftClient::generation() {
  std::vector<uint8_t> request(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* message = nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(request.data()), NFT_MSG_GETGEN,
                                            NFPROTO_UNSPEC, NLM_F_ACK, channel_.next_sequence());
  request.resize(message->nlmsg_len);
  std::optional<uint32_t> generation;
  channel_.transact(request, [&generation](const nlmsghdr& reply) {
    if ((reply.nlmsg_type & 0xff) != NFT_MSG_NEWGEN) {
      return;
    }
    mnl_attr_parse(
        &reply, sizeof(nfgenmsg),
        [](const nlattr* attribute, void* data) {
          if (mnl_attr_get_type(attribute) == NFTA_GEN_ID &&
              mnl_attr_validate(attribute, MNL_TYPE_U32) >= 0) {
            *static_cast<std::optional<uint32_t>*>(data) = ntohl(mnl_attr_get_u32(attribute));
          }
          return MNL_CB_OK;
        },
        &generation);
  });
  if (!generation) {
    throw Error("the kernel did not say the ruleset's generation", EPROTO);
  }
  return *generation;
}

CommitEcho NftClient::commit(const NftWrite& write, uint32_t generation, bool check) {
  // Small: a chain and a few rules of a few expressions each.
  std::vector<uint8_t> buffer(4 * MNL_SOCKET_BUFFER_SIZE);
  MnlBatchPtr batch(mnl_nlmsg_batch_start(buffer.data(), buffer.size() - MNL_SOCKET_BUFFER_SIZE));
  if (!batch) {
    throw Error("out of memory", ENOMEM);
  }
  auto next = [&batch] {
    if (!mnl_nlmsg_batch_next(batch.get())) {
      throw Error("the nf_tables transaction does not fit in one message batch", EMSGSIZE);
    }
  };
  nlmsghdr* begin = nftnl_batch_begin(static_cast<char*>(mnl_nlmsg_batch_current(batch.get())),
                                      channel_.next_sequence());
  mnl_attr_put_u32(begin, NFNL_BATCH_GENID, htonl(generation));
  next();
  std::vector<uint32_t> chain_sequences;
  for (const NftnlChainPtr& chain : write.chains) {
    const uint32_t sequence = channel_.next_sequence();
    chain_sequences.push_back(sequence);
    nlmsghdr* message = nftnl_nlmsg_build_hdr(
        static_cast<char*>(mnl_nlmsg_batch_current(batch.get())), NFT_MSG_NEWCHAIN,
        static_cast<uint16_t>(nftnl_chain_get_u32(chain.get(), NFTNL_CHAIN_FAMILY)),
        NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK | NLM_F_ECHO, sequence);
    nftnl_chain_nlmsg_build_payload(message, chain.get());
    next();
  }
  std::vector<uint32_t> rule_sequences;
  for (const NftWrite::RuleAdd& add : write.rules) {
    const uint32_t sequence = channel_.next_sequence();
    rule_sequences.push_back(sequence);
    // ECHO: the kernel sends the rule back at commit, with its handle.
    const uint16_t flags = NLM_F_CREATE | NLM_F_ACK | NLM_F_ECHO | (add.append ? NLM_F_APPEND : 0);
    nlmsghdr* message = nftnl_nlmsg_build_hdr(
        static_cast<char*>(mnl_nlmsg_batch_current(batch.get())), NFT_MSG_NEWRULE,
        static_cast<uint16_t>(nftnl_rule_get_u32(add.rule.get(), NFTNL_RULE_FAMILY)), flags,
        sequence);
    nftnl_rule_nlmsg_build_payload(message, add.rule.get());
    next();
  }
  std::vector<uint32_t> delete_sequences;
  for (const NftWrite::RuleDelete& target : write.deletes) {
    NftnlRulePtr rule(nftnl_rule_alloc());
    if (!rule) {
      throw Error("out of memory", ENOMEM);
    }
    nftnl_rule_set_u32(rule.get(), NFTNL_RULE_FAMILY, target.family);
    nftnl_rule_set_str(rule.get(), NFTNL_RULE_TABLE, target.table.c_str());
    nftnl_rule_set_str(rule.get(), NFTNL_RULE_CHAIN, target.chain.c_str());
    nftnl_rule_set_u64(rule.get(), NFTNL_RULE_HANDLE, target.handle);
    const uint32_t sequence = channel_.next_sequence();
    delete_sequences.push_back(sequence);
    nlmsghdr* message =
        nftnl_nlmsg_build_hdr(static_cast<char*>(mnl_nlmsg_batch_current(batch.get())),
                              NFT_MSG_DELRULE, target.family, NLM_F_ACK | NLM_F_ECHO, sequence);
    nftnl_rule_nlmsg_build_payload(message, rule.get());
    next();
  }
  if (!check) {
    nftnl_batch_end(static_cast<char*>(mnl_nlmsg_batch_current(batch.get())),
                    channel_.next_sequence());
    next();
  }

  // The echoes, by the sequence number of the message that asked.
  std::map<uint32_t, uint64_t> echoed;
  channel_.transact(
      std::span<const uint8_t>(static_cast<const uint8_t*>(mnl_nlmsg_batch_head(batch.get())),
                               mnl_nlmsg_batch_size(batch.get())),
      [&echoed](const nlmsghdr& reply) {
        const int type = reply.nlmsg_type & 0xff;
        if (type == NFT_MSG_NEWCHAIN) {
          NftnlChainPtr chain(nftnl_chain_alloc());
          if (chain && nftnl_chain_nlmsg_parse(&reply, chain.get()) >= 0 &&
              nftnl_chain_is_set(chain.get(), NFTNL_CHAIN_HANDLE)) {
            echoed[reply.nlmsg_seq] = nftnl_chain_get_u64(chain.get(), NFTNL_CHAIN_HANDLE);
          }
        } else if (type == NFT_MSG_NEWRULE || type == NFT_MSG_DELRULE) {
          NftnlRulePtr rule(nftnl_rule_alloc());
          if (rule && nftnl_rule_nlmsg_parse(&reply, rule.get()) >= 0 &&
              nftnl_rule_is_set(rule.get(), NFTNL_RULE_HANDLE)) {
            echoed[reply.nlmsg_seq] = nftnl_rule_get_u64(rule.get(), NFTNL_RULE_HANDLE);
          }
        }
      });
  auto collect = [&echoed](const std::vector<uint32_t>& sequences) {
    std::vector<uint64_t> handles;
    for (uint32_t sequence : sequences) {
      if (auto found = echoed.find(sequence); found != echoed.end()) {
        handles.push_back(found->second);
      }
    }
    return handles;
  };
  return CommitEcho{.chain_handles = collect(chain_sequences),
                    .rule_handles = collect(rule_sequences),
                    .deleted_handles = collect(delete_sequences)};
}

}  // namespace flowbulk
