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

// A dumped rule that ends in `flow add @FT`, and the anonymous set whose
// protocols it matches, still to be read (empty when none).
struct OffloadCandidate {
  OffloadRule rule;
  std::string set;
};

std::string expression_name(const nftnl_expr* expr) {
  return text_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_NAME));
}

// What `meta l4proto` followed by `test` matches: one protocol (cmp ==),
// an anonymous set's (lookup, into `set`), or something else.
void read_protocol_match(const nftnl_expr* meta, const nftnl_expr* test, OffloadCandidate& found) {
  if (expression_name(meta) != "meta" ||
      nftnl_expr_get_u32(meta, NFTNL_EXPR_META_KEY) != NFT_META_L4PROTO) {
    return;
  }
  const uint32_t reg = nftnl_expr_get_u32(meta, NFTNL_EXPR_META_DREG);
  if (expression_name(test) == "cmp") {
    uint32_t length = 0;
    const auto* data =
        static_cast<const uint8_t*>(nftnl_expr_get(test, NFTNL_EXPR_CMP_DATA, &length));
    if (nftnl_expr_get_u32(test, NFTNL_EXPR_CMP_OP) == NFT_CMP_EQ &&
        nftnl_expr_get_u32(test, NFTNL_EXPR_CMP_SREG) == reg && data != nullptr && length == 1) {
      found.rule.match = OffloadMatch::kProtocols;
      found.rule.protocols = {data[0]};
    }
  } else if (expression_name(test) == "lookup") {
    // Not `!= { ... }` and not a map.
    const bool inverted =
        nftnl_expr_is_set(test, NFTNL_EXPR_LOOKUP_FLAGS) &&
        (nftnl_expr_get_u32(test, NFTNL_EXPR_LOOKUP_FLAGS) & NFT_LOOKUP_F_INV) != 0;
    if (nftnl_expr_get_u32(test, NFTNL_EXPR_LOOKUP_SREG) == reg && !inverted &&
        !nftnl_expr_is_set(test, NFTNL_EXPR_LOOKUP_DREG)) {
      found.set = text_or_empty(nftnl_expr_get_str(test, NFTNL_EXPR_LOOKUP_SET));
    }
  }
}

// Any rule whose last expression is `flow add @FT`, or nullopt. Counters
// are noted wherever they are; what the rest matches is kAll (nothing),
// kProtocols (`meta l4proto P`; with a set, once its elements are read) or
// kOther.
std::optional<OffloadCandidate> as_offload_rule(const nftnl_rule* rule) {
  std::vector<const nftnl_expr*> expressions;
  nftnl_expr_iter* iter = nftnl_expr_iter_create(rule);
  if (iter == nullptr) {
    return std::nullopt;
  }
  for (nftnl_expr* expr = nftnl_expr_iter_next(iter); expr != nullptr;
       expr = nftnl_expr_iter_next(iter)) {
    expressions.push_back(expr);
  }
  nftnl_expr_iter_destroy(iter);
  if (expressions.empty() || expression_name(expressions.back()) != "flow_offload") {
    return std::nullopt;
  }
  OffloadCandidate found;
  found.rule = OffloadRule{
      .family = static_cast<uint8_t>(nftnl_rule_get_u32(rule, NFTNL_RULE_FAMILY)),
      .table = text_or_empty(nftnl_rule_get_str(rule, NFTNL_RULE_TABLE)),
      .chain = text_or_empty(nftnl_rule_get_str(rule, NFTNL_RULE_CHAIN)),
      .handle = nftnl_rule_get_u64(rule, NFTNL_RULE_HANDLE),
      .flowtable =
          text_or_empty(nftnl_expr_get_str(expressions.back(), NFTNL_EXPR_FLOW_TABLE_NAME)),
      .match = OffloadMatch::kOther,
      .protocols = {},
      .counter = false,
  };
  std::vector<const nftnl_expr*> matches;
  for (size_t i = 0; i + 1 < expressions.size(); ++i) {
    if (expression_name(expressions[i]) == "counter") {
      found.rule.counter = true;
    } else {
      matches.push_back(expressions[i]);
    }
  }
  if (matches.empty()) {
    found.rule.match = OffloadMatch::kAll;
  } else if (matches.size() == 2) {
    read_protocol_match(matches[0], matches[1], found);
  }
  return found;
}

std::vector<uint8_t> build_set_request(NetlinkChannel& channel, uint16_t message_type,
                                       uint8_t family, const std::string& table,
                                       const std::string& set) {
  std::vector<uint8_t> buffer(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* message = nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(buffer.data()), message_type,
                                            family, NLM_F_DUMP, channel.next_sequence());
  NftnlSetPtr filter(nftnl_set_alloc());
  if (!filter) {
    throw Error("out of memory", ENOMEM);
  }
  nftnl_set_set_str(filter.get(), NFTNL_SET_TABLE, table.c_str());
  if (message_type == NFT_MSG_GETSETELEM) {
    nftnl_set_set_str(filter.get(), NFTNL_SET_NAME, set.c_str());
    nftnl_set_elems_nlmsg_build_payload(message, filter.get());
  } else {
    nftnl_set_nlmsg_build_payload(message, filter.get());
  }
  buffer.resize(message->nlmsg_len);
  return buffer;
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

bool OffloadRule::offloads(uint8_t protocol) const {
  return match == OffloadMatch::kAll ||
         (match == OffloadMatch::kProtocols &&
          std::find(protocols.begin(), protocols.end(), protocol) != protocols.end());
}

std::optional<std::vector<uint8_t>> NftClient::protocol_set(uint8_t family,
                                                            const std::string& table,
                                                            const std::string& set) {
  // Only an anonymous set is what the rule says: a named one can change
  // under it. Its keys must be single protocol numbers, no ranges, no map.
  bool usable = false;
  channel_.transact(build_set_request(channel_, NFT_MSG_GETSET, family, table, set),
                    [&](const nlmsghdr& reply) {
                      NftnlSetPtr found(nftnl_set_alloc());
                      if (!found || nftnl_set_nlmsg_parse(&reply, found.get()) < 0 ||
                          table != text_or_empty(nftnl_set_get_str(found.get(), NFTNL_SET_TABLE)) ||
                          set != text_or_empty(nftnl_set_get_str(found.get(), NFTNL_SET_NAME))) {
                        return;
                      }
                      const uint32_t flags = nftnl_set_get_u32(found.get(), NFTNL_SET_FLAGS);
                      usable = (flags & NFT_SET_ANONYMOUS) != 0 &&
                               (flags & (NFT_SET_INTERVAL | NFT_SET_MAP | NFT_SET_OBJECT)) == 0 &&
                               nftnl_set_get_u32(found.get(), NFTNL_SET_KEY_LEN) == 1;
                    });
  if (!usable) {
    return std::nullopt;
  }
  std::vector<uint8_t> protocols;
  bool plain = true;
  channel_.transact(
      build_set_request(channel_, NFT_MSG_GETSETELEM, family, table, set),
      [&](const nlmsghdr& reply) {
        NftnlSetPtr elements(nftnl_set_alloc());
        if (!elements || nftnl_set_elems_nlmsg_parse(&reply, elements.get()) < 0) {
          plain = false;
          return;
        }
        nftnl_set_elems_iter* iter = nftnl_set_elems_iter_create(elements.get());
        if (iter == nullptr) {
          plain = false;
          return;
        }
        for (nftnl_set_elem* element = nftnl_set_elems_iter_next(iter); element != nullptr;
             element = nftnl_set_elems_iter_next(iter)) {
          uint32_t length = 0;
          const auto* key =
              static_cast<const uint8_t*>(nftnl_set_elem_get(element, NFTNL_SET_ELEM_KEY, &length));
          // An interval end or a catch-all element is not one protocol.
          const bool flagged = nftnl_set_elem_is_set(element, NFTNL_SET_ELEM_FLAGS) &&
                               nftnl_set_elem_get_u32(element, NFTNL_SET_ELEM_FLAGS) != 0;
          if (key == nullptr || length != 1 || flagged) {
            plain = false;
          } else {
            protocols.push_back(key[0]);
          }
        }
        nftnl_set_elems_iter_destroy(iter);
      });
  if (!plain || protocols.empty()) {
    return std::nullopt;
  }
  std::sort(protocols.begin(), protocols.end());
  protocols.erase(std::unique(protocols.begin(), protocols.end()), protocols.end());
  return protocols;
}

std::vector<OffloadRule> NftClient::list_offload_rules(std::optional<uint8_t> family,
                                                       const std::string& table,
                                                       const std::string& chain) {
  std::vector<OffloadCandidate> candidates;
  dump_rules(family, table, chain, [&candidates](const nftnl_rule& rule) {
    if (auto offload = as_offload_rule(&rule)) {
      candidates.push_back(std::move(*offload));
    }
  });
  // The sets' elements, once the rule dump is over: one set per
  // `meta l4proto { ... }` rule, read once each.
  std::map<std::tuple<uint8_t, std::string, std::string>, std::optional<std::vector<uint8_t>>> sets;
  std::vector<OffloadRule> rules;
  for (OffloadCandidate& candidate : candidates) {
    if (!candidate.set.empty()) {
      const auto key = std::make_tuple(candidate.rule.family, candidate.rule.table, candidate.set);
      auto known = sets.find(key);
      if (known == sets.end()) {
        std::optional<std::vector<uint8_t>> protocols;
        try {
          protocols = protocol_set(candidate.rule.family, candidate.rule.table, candidate.set);
        } catch (const KernelError&) {
          // Gone since the rule dump (the rule with it): read as kOther.
        }
        known = sets.emplace(key, std::move(protocols)).first;
      }
      if (known->second) {
        candidate.rule.match = OffloadMatch::kProtocols;
        candidate.rule.protocols = *known->second;
      }
    }
    rules.push_back(std::move(candidate.rule));
  }
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

std::vector<uint64_t> NftClient::commit(const NftWrite& write, uint32_t generation) {
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
  for (const NftnlChainPtr& chain : write.chains) {
    nlmsghdr* message = nftnl_nlmsg_build_hdr(
        static_cast<char*>(mnl_nlmsg_batch_current(batch.get())), NFT_MSG_NEWCHAIN,
        static_cast<uint16_t>(nftnl_chain_get_u32(chain.get(), NFTNL_CHAIN_FAMILY)),
        NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, channel_.next_sequence());
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
  for (const NftWrite::RuleDelete& target : write.deletes) {
    NftnlRulePtr rule(nftnl_rule_alloc());
    if (!rule) {
      throw Error("out of memory", ENOMEM);
    }
    nftnl_rule_set_u32(rule.get(), NFTNL_RULE_FAMILY, target.family);
    nftnl_rule_set_str(rule.get(), NFTNL_RULE_TABLE, target.table.c_str());
    nftnl_rule_set_str(rule.get(), NFTNL_RULE_CHAIN, target.chain.c_str());
    nftnl_rule_set_u64(rule.get(), NFTNL_RULE_HANDLE, target.handle);
    nlmsghdr* message =
        nftnl_nlmsg_build_hdr(static_cast<char*>(mnl_nlmsg_batch_current(batch.get())),
                              NFT_MSG_DELRULE, target.family, NLM_F_ACK, channel_.next_sequence());
    nftnl_rule_nlmsg_build_payload(message, rule.get());
    next();
  }
  nftnl_batch_end(static_cast<char*>(mnl_nlmsg_batch_current(batch.get())),
                  channel_.next_sequence());
  next();

  std::map<uint32_t, uint64_t> handles;  // by the sequence of the NEWRULE
  channel_.transact(
      std::span<const uint8_t>(static_cast<const uint8_t*>(mnl_nlmsg_batch_head(batch.get())),
                               mnl_nlmsg_batch_size(batch.get())),
      [&handles](const nlmsghdr& reply) {
        if ((reply.nlmsg_type & 0xff) != NFT_MSG_NEWRULE) {
          return;
        }
        NftnlRulePtr rule(nftnl_rule_alloc());
        if (rule && nftnl_rule_nlmsg_parse(&reply, rule.get()) >= 0 &&
            nftnl_rule_is_set(rule.get(), NFTNL_RULE_HANDLE)) {
          handles[reply.nlmsg_seq] = nftnl_rule_get_u64(rule.get(), NFTNL_RULE_HANDLE);
        }
      });
  std::vector<uint64_t> added;
  for (uint32_t sequence : rule_sequences) {
    if (auto found = handles.find(sequence); found != handles.end()) {
      added.push_back(found->second);
    }
  }
  return added;
}

}  // namespace flowbulk
