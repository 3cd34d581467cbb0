// SPDX-License-Identifier: GPL-2.0
#include "fake_nft_kernel.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/udata.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "error.h"
#include "fake_kernel.h"
#include "raii.h"

namespace flowbulk::testing {

namespace {

uint8_t family_of(const nlmsghdr& message) {
  return static_cast<const nfgenmsg*>(mnl_nlmsg_get_payload(&message))->nfgen_family;
}

bool family_matches(uint8_t wanted, uint8_t family) {
  return wanted == NFPROTO_UNSPEC || wanted == family;
}

std::string str_or_empty(const char* text) {
  return text == nullptr ? std::string() : std::string(text);
}

// A reply message built by libnftnl, as the kernel's dump would carry it.
class Reply {
 public:
  Reply(uint16_t type, uint8_t family, const nlmsghdr& request)
      : buffer_(16384),
        header_(nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(buffer_.data()), type, family,
                                      NLM_F_MULTI, request.nlmsg_seq)) {
    header_->nlmsg_pid = request.nlmsg_pid;
  }
  nlmsghdr* header() { return header_; }
  Datagram datagram() const {
    return Datagram(buffer_.begin(), buffer_.begin() + header_->nlmsg_len);
  }

 private:
  std::vector<uint8_t> buffer_;
  nlmsghdr* header_;
};

NftnlRulePtr parse_rule(const Datagram& message) {
  NftnlRulePtr rule(nftnl_rule_alloc());
  nftnl_rule_nlmsg_parse(reinterpret_cast<const nlmsghdr*>(message.data()), rule.get());
  return rule;
}

// The flowtables a rule refers to (flow add @NAME).
std::vector<std::string> flowtables_used(const Datagram& message) {
  std::vector<std::string> names;
  NftnlRulePtr rule = parse_rule(message);
  nftnl_expr_iter* iter = nftnl_expr_iter_create(rule.get());
  for (nftnl_expr* expr = nftnl_expr_iter_next(iter); expr != nullptr;
       expr = nftnl_expr_iter_next(iter)) {
    if (str_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_NAME)) == "flow_offload") {
      names.push_back(str_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_FLOW_TABLE_NAME)));
    }
  }
  nftnl_expr_iter_destroy(iter);
  return names;
}

// The sets a rule looks packets up in (meta l4proto { tcp, udp }).
std::vector<std::string> sets_used(const Datagram& message) {
  std::vector<std::string> names;
  NftnlRulePtr rule = parse_rule(message);
  nftnl_expr_iter* iter = nftnl_expr_iter_create(rule.get());
  for (nftnl_expr* expr = nftnl_expr_iter_next(iter); expr != nullptr;
       expr = nftnl_expr_iter_next(iter)) {
    if (str_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_NAME)) == "lookup") {
      names.push_back(str_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_LOOKUP_SET)));
    }
  }
  nftnl_expr_iter_destroy(iter);
  return names;
}

// Every element of an element list as NFTA_LIST_ELEM, as the kernel sends
// them: libnftnl numbers them 1, 2, ... when it builds a message, and its
// parser stops at the first that is not NFTA_LIST_ELEM.
void number_elements_as_the_kernel(nlmsghdr* message) {
  auto* const end = reinterpret_cast<uint8_t*>(message) + message->nlmsg_len;
  auto left = [](const void* at, const uint8_t* stop) {
    return static_cast<int>(stop - static_cast<const uint8_t*>(at));
  };
  for (auto* attribute =
           static_cast<nlattr*>(mnl_nlmsg_get_payload_offset(message, sizeof(nfgenmsg)));
       mnl_attr_ok(attribute, left(attribute, end)); attribute = mnl_attr_next(attribute)) {
    if (mnl_attr_get_type(attribute) != NFTA_SET_ELEM_LIST_ELEMENTS) {
      continue;
    }
    auto* const nest_end = reinterpret_cast<uint8_t*>(attribute) + attribute->nla_len;
    for (auto* element = static_cast<nlattr*>(mnl_attr_get_payload(attribute));
         mnl_attr_ok(element, left(element, nest_end)); element = mnl_attr_next(element)) {
      element->nla_type =
          static_cast<uint16_t>((element->nla_type & ~NLA_TYPE_MASK) | NFTA_LIST_ELEM);
    }
  }
}

NftnlSetPtr parse_set(const Datagram& message) {
  NftnlSetPtr set(nftnl_set_alloc());
  nftnl_set_nlmsg_parse(reinterpret_cast<const nlmsghdr*>(message.data()), set.get());
  return set;
}

uint16_t table_filter_attribute(uint16_t type) {
  switch (type) {
    case NFT_MSG_GETSET:
      return NFTA_SET_TABLE;
    case NFT_MSG_GETCHAIN:
      return NFTA_CHAIN_TABLE;
    case NFT_MSG_GETFLOWTABLE:
      return NFTA_FLOWTABLE_TABLE;
    case NFT_MSG_GETRULE:
      return NFTA_RULE_TABLE;
    default:
      return 0;
  }
}

// The table a write message names (NFTA_*_TABLE, NFTA_TABLE_NAME), or empty.
std::string table_named(const nlmsghdr& message) {
  const uint16_t type = message.nlmsg_type & 0xff;
  uint16_t wanted = 0;
  switch (type) {
    case NFT_MSG_NEWTABLE:
    case NFT_MSG_DELTABLE:
      wanted = NFTA_TABLE_NAME;
      break;
    case NFT_MSG_NEWCHAIN:
    case NFT_MSG_DELCHAIN:
      wanted = NFTA_CHAIN_TABLE;
      break;
    case NFT_MSG_NEWRULE:
    case NFT_MSG_DELRULE:
      wanted = NFTA_RULE_TABLE;
      break;
    case NFT_MSG_NEWSET:
    case NFT_MSG_DELSET:
      wanted = NFTA_SET_TABLE;
      break;
    case NFT_MSG_NEWSETELEM:
    case NFT_MSG_DELSETELEM:
      wanted = NFTA_SET_ELEM_LIST_TABLE;
      break;
    case NFT_MSG_NEWFLOWTABLE:
    case NFT_MSG_DELFLOWTABLE:
      wanted = NFTA_FLOWTABLE_TABLE;
      break;
    default:
      return {};
  }
  struct Search {
    uint16_t wanted;
    std::string table;
  } search{wanted, {}};
  mnl_attr_parse(
      &message, sizeof(nfgenmsg),
      [](const nlattr* attribute, void* data) {
        auto* found = static_cast<Search*>(data);
        if (mnl_attr_get_type(attribute) == found->wanted) {
          found->table = mnl_attr_get_str(attribute);
        }
        return MNL_CB_OK;
      },
      &search);
  return search.table;
}

// The table a dump request is limited to (the kernel honours
// NFTA_*_TABLE in a dump), or empty.
std::string table_filter(const nlmsghdr& request) {
  const uint16_t wanted = table_filter_attribute(request.nlmsg_type & 0xff);
  std::string table;
  if (wanted == 0) {
    return table;
  }
  struct Search {
    uint16_t wanted;
    std::string* table;
  } search{wanted, &table};
  mnl_attr_parse(
      &request, sizeof(nfgenmsg),
      [](const nlattr* attribute, void* data) {
        auto* wanted = static_cast<Search*>(data);
        if (mnl_attr_get_type(attribute) == wanted->wanted) {
          *wanted->table = mnl_attr_get_str(attribute);
        }
        return MNL_CB_OK;
      },
      &search);
  return table;
}

Datagram table_message(const FakeNftKernel::Table& table, const nlmsghdr& request) {
  Reply reply(NFT_MSG_NEWTABLE, table.family, request);
  NftnlTablePtr object(nftnl_table_alloc());
  nftnl_table_set_str(object.get(), NFTNL_TABLE_NAME, table.name.c_str());
  nftnl_table_set_u64(object.get(), NFTNL_TABLE_HANDLE, table.handle);
  nftnl_table_set_u32(object.get(), NFTNL_TABLE_FLAGS, table.flags);
  nftnl_table_nlmsg_build_payload(reply.header(), object.get());
  if ((table.flags & NFT_TABLE_F_OWNER) != 0) {
    // libnftnl builds no NFTA_TABLE_OWNER: only the kernel sends it.
    mnl_attr_put_u32(reply.header(), NFTA_TABLE_OWNER, htonl(table.owner));
  }
  return reply.datagram();
}

Datagram chain_message(const FakeNftKernel::Chain& chain, const nlmsghdr& request) {
  Reply reply(NFT_MSG_NEWCHAIN, chain.family, request);
  NftnlChainPtr object(nftnl_chain_alloc());
  nftnl_chain_set_str(object.get(), NFTNL_CHAIN_TABLE, chain.table.c_str());
  nftnl_chain_set_str(object.get(), NFTNL_CHAIN_NAME, chain.name.c_str());
  nftnl_chain_set_u64(object.get(), NFTNL_CHAIN_HANDLE, chain.handle);
  if (chain.base) {
    nftnl_chain_set_str(object.get(), NFTNL_CHAIN_TYPE, chain.type.c_str());
    nftnl_chain_set_u32(object.get(), NFTNL_CHAIN_HOOKNUM, chain.hooknum);
    nftnl_chain_set_s32(object.get(), NFTNL_CHAIN_PRIO, chain.priority);
    nftnl_chain_set_u32(object.get(), NFTNL_CHAIN_POLICY, chain.policy);
  }
  nftnl_chain_nlmsg_build_payload(reply.header(), object.get());
  return reply.datagram();
}

Datagram rule_message(const FakeNftKernel::Rule& rule, const nlmsghdr& request) {
  Reply reply(NFT_MSG_NEWRULE, rule.family, request);
  NftnlRulePtr object = parse_rule(rule.message);
  nftnl_rule_set_u64(object.get(), NFTNL_RULE_HANDLE, rule.handle);
  nftnl_rule_unset(object.get(), NFTNL_RULE_POSITION);
  nftnl_rule_nlmsg_build_payload(reply.header(), object.get());
  return reply.datagram();
}

Datagram flowtable_message(const FakeNftKernel::Flowtable& flowtable, const nlmsghdr& request) {
  Reply reply(NFT_MSG_NEWFLOWTABLE, flowtable.family, request);
  NftnlFlowtablePtr object(nftnl_flowtable_alloc());
  nftnl_flowtable_set_str(object.get(), NFTNL_FLOWTABLE_TABLE, flowtable.table.c_str());
  nftnl_flowtable_set_str(object.get(), NFTNL_FLOWTABLE_NAME, flowtable.name.c_str());
  nftnl_flowtable_set_u64(object.get(), NFTNL_FLOWTABLE_HANDLE, flowtable.handle);
  nftnl_flowtable_set_u32(object.get(), NFTNL_FLOWTABLE_HOOKNUM, NF_NETDEV_INGRESS);
  nftnl_flowtable_set_s32(object.get(), NFTNL_FLOWTABLE_PRIO, flowtable.priority);
  nftnl_flowtable_set_u32(object.get(), NFTNL_FLOWTABLE_FLAGS, flowtable.flags);
  std::vector<const char*> devices;
  for (const std::string& device : flowtable.devices) {
    devices.push_back(device.c_str());
  }
  devices.push_back(nullptr);
  nftnl_flowtable_set_array(object.get(), NFTNL_FLOWTABLE_DEVICES, devices.data());
  nftnl_flowtable_nlmsg_build_payload(reply.header(), object.get());
  return reply.datagram();
}

Datagram set_message(const FakeNftKernel::Set& set, const nlmsghdr& request) {
  Reply reply(NFT_MSG_NEWSET, set.family, request);
  NftnlSetPtr object = parse_set(set.message);
  nftnl_set_set_str(object.get(), NFTNL_SET_NAME, set.name.c_str());
  nftnl_set_set_u64(object.get(), NFTNL_SET_HANDLE, set.handle);
  nftnl_set_unset(object.get(), NFTNL_SET_ID);
  nftnl_set_nlmsg_build_payload(reply.header(), object.get());
  return reply.datagram();
}

// NEWSETELEM with every element of the set, as the kernel's dump of it.
Datagram set_elements_message(const FakeNftKernel::Set& set, const nlmsghdr& request) {
  Reply reply(NFT_MSG_NEWSETELEM, set.family, request);
  NftnlSetPtr object(nftnl_set_alloc());
  nftnl_set_set_str(object.get(), NFTNL_SET_TABLE, set.table.c_str());
  nftnl_set_set_str(object.get(), NFTNL_SET_NAME, set.name.c_str());
  for (const FakeNftKernel::SetElement& element : set.elements) {
    nftnl_set_elem* added = nftnl_set_elem_alloc();
    nftnl_set_elem_set(added, NFTNL_SET_ELEM_KEY, element.key.data(),
                       static_cast<uint32_t>(element.key.size()));
    if (element.flags != 0) {
      nftnl_set_elem_set_u32(added, NFTNL_SET_ELEM_FLAGS, element.flags);
    }
    nftnl_set_elem_add(object.get(), added);
  }
  nftnl_set_elems_nlmsg_build_payload(reply.header(), object.get());
  number_elements_as_the_kernel(reply.header());
  return reply.datagram();
}

// A table and everything in it.
void erase_table(FakeNftKernel::State& state, uint8_t family, const std::string& name) {
  auto in_table = [&](const auto& object) {
    return object.family == family && object.table == name;
  };
  std::erase_if(state.rules, in_table);
  std::erase_if(state.sets, in_table);
  std::erase_if(state.chains, in_table);
  std::erase_if(state.flowtables, in_table);
  std::erase_if(state.tables, [&](const FakeNftKernel::Table& table) {
    return table.family == family && table.name == name;
  });
}

class Transaction {
 public:
  explicit Transaction(FakeNftKernel::State& state) : s_(state) {}

  // NLM_F_ECHO: what the kernel sends back to the writer at commit, each
  // object with the handle it got (libnftables' `-e`).
  std::vector<Datagram>& echoes() { return echoes_; }

  int apply(const nlmsghdr& message) {
    const uint8_t family = family_of(message);
    const uint16_t flags = message.nlmsg_flags;
    // nft_table_lookup(): a table with an owner takes writes from its
    // owner's socket only, which is never this one.
    const std::string named = table_named(message);
    for (const FakeNftKernel::Table& owned : s_.tables) {
      if (owned.family == family && owned.name == named && (owned.flags & NFT_TABLE_F_OWNER) != 0) {
        return EPERM;
      }
    }
    switch (message.nlmsg_type & 0xff) {
      case NFT_MSG_NEWTABLE: {
        NftnlTablePtr parsed(nftnl_table_alloc());
        nftnl_table_nlmsg_parse(&message, parsed.get());
        const std::string name = str_or_empty(nftnl_table_get_str(parsed.get(), NFTNL_TABLE_NAME));
        if (table(family, name) != nullptr) {
          return (flags & NLM_F_EXCL) != 0 ? EEXIST : 0;
        }
        s_.tables.push_back(
            {.family = family, .name = name, .handle = s_.next_table_handle++, .next_handle = 1});
        if ((flags & NLM_F_ECHO) != 0) {
          echoes_.push_back(table_message(s_.tables.back(), message));
        }
        return 0;
      }
      case NFT_MSG_DELTABLE: {
        NftnlTablePtr parsed(nftnl_table_alloc());
        nftnl_table_nlmsg_parse(&message, parsed.get());
        if (!nftnl_table_is_set(parsed.get(), NFTNL_TABLE_NAME)) {
          // No name: every table of the family, of every family for
          // NFPROTO_UNSPEC (`flush ruleset`), as nft_flush() does.
          auto flushed = [&](const auto& object) {
            return family == NFPROTO_UNSPEC || object.family == family;
          };
          std::erase_if(s_.rules, flushed);
          std::erase_if(s_.sets, flushed);
          std::erase_if(s_.chains, flushed);
          std::erase_if(s_.flowtables, flushed);
          std::erase_if(s_.tables, flushed);
          return 0;
        }
        const std::string name = str_or_empty(nftnl_table_get_str(parsed.get(), NFTNL_TABLE_NAME));
        if (table(family, name) == nullptr) {
          return ENOENT;
        }
        erase_table(s_, family, name);
        return 0;
      }
      case NFT_MSG_NEWCHAIN:
        return new_chain(message, family, flags);
      case NFT_MSG_DELCHAIN:
        return delete_chain(message, family);
      case NFT_MSG_NEWSET:
        return new_set(message, family, flags);
      case NFT_MSG_NEWSETELEM:
        return new_set_elements(message, family);
      case NFT_MSG_NEWRULE:
        return new_rule(message, family, flags);
      case NFT_MSG_DELRULE:
        return delete_rule(message, family);
      case NFT_MSG_NEWFLOWTABLE: {
        NftnlFlowtablePtr parsed(nftnl_flowtable_alloc());
        nftnl_flowtable_nlmsg_parse(&message, parsed.get());
        const std::string table_name =
            str_or_empty(nftnl_flowtable_get_str(parsed.get(), NFTNL_FLOWTABLE_TABLE));
        const std::string name =
            str_or_empty(nftnl_flowtable_get_str(parsed.get(), NFTNL_FLOWTABLE_NAME));
        FakeNftKernel::Table* owner = table(family, table_name);
        if (owner == nullptr) {
          return ENOENT;
        }
        if (FakeNftKernel::Flowtable* existing = flowtable(family, table_name, name)) {
          if ((flags & NLM_F_EXCL) != 0) {
            return EEXIST;
          }
          // An update, as the kernel's: the hook stays, devices are added.
          if (nftnl_flowtable_is_set(parsed.get(), NFTNL_FLOWTABLE_PRIO) &&
              nftnl_flowtable_get_s32(parsed.get(), NFTNL_FLOWTABLE_PRIO) != existing->priority) {
            return EOPNOTSUPP;
          }
          if (nftnl_flowtable_is_set(parsed.get(), NFTNL_FLOWTABLE_DEVICES)) {
            const char* const* devices =
                nftnl_flowtable_get_array(parsed.get(), NFTNL_FLOWTABLE_DEVICES);
            for (size_t i = 0; devices != nullptr && devices[i] != nullptr; ++i) {
              if (std::find(existing->devices.begin(), existing->devices.end(), devices[i]) ==
                  existing->devices.end()) {
                existing->devices.emplace_back(devices[i]);
              }
            }
          }
          if ((flags & NLM_F_ECHO) != 0) {
            echoes_.push_back(flowtable_message(*existing, message));
          }
          return 0;
        }
        FakeNftKernel::Flowtable created{.family = family,
                                         .table = table_name,
                                         .name = name,
                                         .handle = owner->next_handle++,
                                         .priority = 0,
                                         .devices = {},
                                         .flags = 0};
        if (nftnl_flowtable_is_set(parsed.get(), NFTNL_FLOWTABLE_PRIO)) {
          created.priority = nftnl_flowtable_get_s32(parsed.get(), NFTNL_FLOWTABLE_PRIO);
        }
        if (nftnl_flowtable_is_set(parsed.get(), NFTNL_FLOWTABLE_DEVICES)) {
          const char* const* devices =
              nftnl_flowtable_get_array(parsed.get(), NFTNL_FLOWTABLE_DEVICES);
          for (size_t i = 0; devices != nullptr && devices[i] != nullptr; ++i) {
            created.devices.emplace_back(devices[i]);
          }
        }
        if (nftnl_flowtable_is_set(parsed.get(), NFTNL_FLOWTABLE_FLAGS)) {
          created.flags = nftnl_flowtable_get_u32(parsed.get(), NFTNL_FLOWTABLE_FLAGS);
        }
        s_.flowtables.push_back(std::move(created));
        if ((flags & NLM_F_ECHO) != 0) {
          echoes_.push_back(flowtable_message(s_.flowtables.back(), message));
        }
        return 0;
      }
      case NFT_MSG_DELFLOWTABLE: {
        NftnlFlowtablePtr parsed(nftnl_flowtable_alloc());
        nftnl_flowtable_nlmsg_parse(&message, parsed.get());
        const std::string table_name =
            str_or_empty(nftnl_flowtable_get_str(parsed.get(), NFTNL_FLOWTABLE_TABLE));
        const std::string name =
            str_or_empty(nftnl_flowtable_get_str(parsed.get(), NFTNL_FLOWTABLE_NAME));
        FakeNftKernel::Flowtable* existing = flowtable(family, table_name, name);
        if (existing == nullptr) {
          return ENOENT;
        }
        if (nftnl_flowtable_is_set(parsed.get(), NFTNL_FLOWTABLE_DEVICES)) {
          // Devices named: only those leave, as the kernel's hook delete;
          // one the flowtable does not have is ENOENT.
          const char* const* devices =
              nftnl_flowtable_get_array(parsed.get(), NFTNL_FLOWTABLE_DEVICES);
          std::vector<std::string> kept = existing->devices;
          for (size_t i = 0; devices != nullptr && devices[i] != nullptr; ++i) {
            auto found = std::find(kept.begin(), kept.end(), devices[i]);
            if (found == kept.end()) {
              return ENOENT;
            }
            kept.erase(found);
          }
          existing->devices = std::move(kept);
          return 0;
        }
        for (const auto& rule : s_.rules) {
          if (rule.family == family && rule.table == table_name) {
            auto used = flowtables_used(rule.message);
            if (std::find(used.begin(), used.end(), name) != used.end()) {
              return EBUSY;
            }
          }
        }
        std::erase_if(s_.flowtables, [&](const FakeNftKernel::Flowtable& flowtable) {
          return flowtable.family == family && flowtable.table == table_name &&
                 flowtable.name == name;
        });
        return 0;
      }
      default:
        return EOPNOTSUPP;
    }
  }

 private:
  FakeNftKernel::Table* table(uint8_t family, const std::string& name) {
    for (auto& table : s_.tables) {
      if (table.family == family && table.name == name) {
        return &table;
      }
    }
    return nullptr;
  }
  FakeNftKernel::Chain* chain(uint8_t family, const std::string& table_name,
                              const std::string& name) {
    for (auto& chain : s_.chains) {
      if (chain.family == family && chain.table == table_name && chain.name == name) {
        return &chain;
      }
    }
    return nullptr;
  }
  FakeNftKernel::Flowtable* flowtable(uint8_t family, const std::string& table_name,
                                      const std::string& name) {
    for (auto& flowtable : s_.flowtables) {
      if (flowtable.family == family && flowtable.table == table_name && flowtable.name == name) {
        return &flowtable;
      }
    }
    return nullptr;
  }

  FakeNftKernel::Set* find_set(uint8_t family, const std::string& table_name,
                               const std::string& name) {
    for (auto& set : s_.sets) {
      if (set.family == family && set.table == table_name && set.name == name) {
        return &set;
      }
    }
    return nullptr;
  }
  // A set named in a message: by its id when it was added in this
  // transaction ("__set%d" is not its name yet), else by name.
  FakeNftKernel::Set* find_set(uint8_t family, const std::string& table_name,
                               const std::string& name, std::optional<uint32_t> id) {
    if (id) {
      if (auto added = set_ids_.find(*id); added != set_ids_.end()) {
        return find_set(family, table_name, added->second);
      }
    }
    return find_set(family, table_name, name);
  }

  // nf_tables_newset: an anonymous set's "__set%d" gets the lowest free number.
  int new_set(const nlmsghdr& message, uint8_t family, uint16_t flags) {
    Datagram bytes(reinterpret_cast<const uint8_t*>(&message),
                   reinterpret_cast<const uint8_t*>(&message) + message.nlmsg_len);
    NftnlSetPtr parsed = parse_set(bytes);
    const std::string table_name = str_or_empty(nftnl_set_get_str(parsed.get(), NFTNL_SET_TABLE));
    std::string name = str_or_empty(nftnl_set_get_str(parsed.get(), NFTNL_SET_NAME));
    FakeNftKernel::Table* owner = table(family, table_name);
    if (owner == nullptr) {
      return ENOENT;
    }
    if (const size_t at = name.find("%d"); at != std::string::npos) {
      for (int number = 0;; ++number) {
        std::string candidate = name;
        candidate.replace(at, 2, std::to_string(number));
        if (find_set(family, table_name, candidate) == nullptr) {
          name = candidate;
          break;
        }
      }
    } else if (find_set(family, table_name, name) != nullptr) {
      return (flags & NLM_F_EXCL) != 0 ? EEXIST : 0;
    }
    if (nftnl_set_is_set(parsed.get(), NFTNL_SET_ID)) {
      set_ids_[nftnl_set_get_u32(parsed.get(), NFTNL_SET_ID)] = name;
    }
    s_.sets.push_back({.family = family,
                       .table = table_name,
                       .name = name,
                       .handle = owner->next_handle++,
                       .flags = nftnl_set_get_u32(parsed.get(), NFTNL_SET_FLAGS),
                       .message = std::move(bytes),
                       .elements = {}});
    if ((flags & NLM_F_ECHO) != 0) {
      echoes_.push_back(set_message(s_.sets.back(), message));
    }
    return 0;
  }

  int new_set_elements(const nlmsghdr& message, uint8_t family) {
    Datagram bytes(reinterpret_cast<const uint8_t*>(&message),
                   reinterpret_cast<const uint8_t*>(&message) + message.nlmsg_len);
    auto* header = reinterpret_cast<nlmsghdr*>(bytes.data());
    number_elements_as_the_kernel(header);
    NftnlSetPtr parsed(nftnl_set_alloc());
    if (nftnl_set_elems_nlmsg_parse(header, parsed.get()) < 0) {
      return EINVAL;
    }
    const std::string table_name = str_or_empty(nftnl_set_get_str(parsed.get(), NFTNL_SET_TABLE));
    std::optional<uint32_t> id;
    if (nftnl_set_is_set(parsed.get(), NFTNL_SET_ID)) {
      id = nftnl_set_get_u32(parsed.get(), NFTNL_SET_ID);
    }
    FakeNftKernel::Set* target = find_set(
        family, table_name, str_or_empty(nftnl_set_get_str(parsed.get(), NFTNL_SET_NAME)), id);
    if (target == nullptr) {
      return ENOENT;
    }
    nftnl_set_elems_iter* iter = nftnl_set_elems_iter_create(parsed.get());
    for (nftnl_set_elem* element = nftnl_set_elems_iter_next(iter); element != nullptr;
         element = nftnl_set_elems_iter_next(iter)) {
      uint32_t length = 0;
      const auto* key =
          static_cast<const uint8_t*>(nftnl_set_elem_get(element, NFTNL_SET_ELEM_KEY, &length));
      FakeNftKernel::SetElement added;
      if (key != nullptr) {
        added.key.assign(key, key + length);
      }
      if (nftnl_set_elem_is_set(element, NFTNL_SET_ELEM_FLAGS)) {
        added.flags = nftnl_set_elem_get_u32(element, NFTNL_SET_ELEM_FLAGS);
      }
      target->elements.push_back(std::move(added));
    }
    nftnl_set_elems_iter_destroy(iter);
    return 0;
  }

  // The kernel drops an anonymous set with the rule bound to it.
  void drop_anonymous_sets(const FakeNftKernel::Rule& rule) {
    for (const std::string& name : sets_used(rule.message)) {
      std::erase_if(s_.sets, [&](const FakeNftKernel::Set& set) {
        return set.family == rule.family && set.table == rule.table && set.name == name &&
               (set.flags & NFT_SET_ANONYMOUS) != 0;
      });
    }
  }

  // nf_tables_newchain / nf_tables_updchain.
  // By name or handle; its rules go with it (no NLM_F_NONREC), as in
  // nf_tables_delchain().
  int delete_chain(const nlmsghdr& message, uint8_t family) {
    NftnlChainPtr parsed(nftnl_chain_alloc());
    nftnl_chain_nlmsg_parse(&message, parsed.get());
    const std::string table_name =
        str_or_empty(nftnl_chain_get_str(parsed.get(), NFTNL_CHAIN_TABLE));
    const bool by_handle = nftnl_chain_is_set(parsed.get(), NFTNL_CHAIN_HANDLE);
    const uint64_t handle = by_handle ? nftnl_chain_get_u64(parsed.get(), NFTNL_CHAIN_HANDLE) : 0;
    const std::string name = str_or_empty(nftnl_chain_get_str(parsed.get(), NFTNL_CHAIN_NAME));
    auto found = std::find_if(s_.chains.begin(), s_.chains.end(), [&](const auto& chain) {
      return chain.family == family && chain.table == table_name &&
             (by_handle ? chain.handle == handle : chain.name == name);
    });
    if (found == s_.chains.end()) {
      return ENOENT;
    }
    const std::string chain_name = found->name;
    s_.chains.erase(found);
    std::erase_if(s_.rules, [&](const FakeNftKernel::Rule& rule) {
      return rule.family == family && rule.table == table_name && rule.chain == chain_name;
    });
    return 0;
  }

  int new_chain(const nlmsghdr& message, uint8_t family, uint16_t flags) {
    NftnlChainPtr parsed(nftnl_chain_alloc());
    nftnl_chain_nlmsg_parse(&message, parsed.get());
    const std::string table_name =
        str_or_empty(nftnl_chain_get_str(parsed.get(), NFTNL_CHAIN_TABLE));
    const std::string name = str_or_empty(nftnl_chain_get_str(parsed.get(), NFTNL_CHAIN_NAME));
    FakeNftKernel::Table* owner = table(family, table_name);
    if (owner == nullptr) {
      return ENOENT;
    }
    const bool hook = nftnl_chain_is_set(parsed.get(), NFTNL_CHAIN_HOOKNUM);
    const bool policy = nftnl_chain_is_set(parsed.get(), NFTNL_CHAIN_POLICY);
    if (FakeNftKernel::Chain* existing = chain(family, table_name, name)) {
      if ((flags & NLM_F_EXCL) != 0) {
        return EEXIST;
      }
      if ((flags & NLM_F_REPLACE) != 0) {
        return EOPNOTSUPP;
      }
      if (hook) {
        if (!existing->base ||
            existing->hooknum != nftnl_chain_get_u32(parsed.get(), NFTNL_CHAIN_HOOKNUM) ||
            existing->priority != nftnl_chain_get_s32(parsed.get(), NFTNL_CHAIN_PRIO)) {
          return EEXIST;
        }
      }
      if (policy) {
        if (!existing->base) {
          return EOPNOTSUPP;
        }
        existing->policy = nftnl_chain_get_u32(parsed.get(), NFTNL_CHAIN_POLICY);  // the update
      }
      return 0;
    }
    if (policy && !hook) {
      return EOPNOTSUPP;
    }
    FakeNftKernel::Chain created{.family = family,
                                 .table = table_name,
                                 .name = name,
                                 .handle = owner->next_handle++,
                                 .base = hook,
                                 .type = {},
                                 .hooknum = 0,
                                 .priority = 0,
                                 .policy = NF_ACCEPT};
    if (hook) {
      created.type = nftnl_chain_is_set(parsed.get(), NFTNL_CHAIN_TYPE)
                         ? nftnl_chain_get_str(parsed.get(), NFTNL_CHAIN_TYPE)
                         : "filter";
      created.hooknum = nftnl_chain_get_u32(parsed.get(), NFTNL_CHAIN_HOOKNUM);
      created.priority = nftnl_chain_get_s32(parsed.get(), NFTNL_CHAIN_PRIO);
      if (policy) {
        created.policy = nftnl_chain_get_u32(parsed.get(), NFTNL_CHAIN_POLICY);
      }
    }
    s_.chains.push_back(std::move(created));
    if ((flags & NLM_F_ECHO) != 0) {
      echoes_.push_back(chain_message(s_.chains.back(), message));
    }
    return 0;
  }

  // nf_tables_newrule: APPEND after POSITION (or at the end), otherwise
  // before POSITION (or at the start).
  int new_rule(const nlmsghdr& message, uint8_t family, uint16_t flags) {
    Datagram bytes(reinterpret_cast<const uint8_t*>(&message),
                   reinterpret_cast<const uint8_t*>(&message) + message.nlmsg_len);
    NftnlRulePtr parsed = parse_rule(bytes);
    const std::string table_name = str_or_empty(nftnl_rule_get_str(parsed.get(), NFTNL_RULE_TABLE));
    const std::string chain_name = str_or_empty(nftnl_rule_get_str(parsed.get(), NFTNL_RULE_CHAIN));
    FakeNftKernel::Table* owner = table(family, table_name);
    if (owner == nullptr || chain(family, table_name, chain_name) == nullptr) {
      return ENOENT;
    }
    for (const std::string& used : flowtables_used(bytes)) {
      if (flowtable(family, table_name, used) == nullptr) {
        return ENOENT;
      }
    }
    // A lookup names its set by id when the set is new in this batch: the
    // rule keeps the set's real name, as the kernel's dump shows it. The
    // expressions are taken out and put back in order, each lookup as a new
    // one (libnftnl 1.2.4 leaks the old name when a lookup's set is set again).
    std::vector<nftnl_expr*> expressions;
    nftnl_expr_iter* iter = nftnl_expr_iter_create(parsed.get());
    for (nftnl_expr* expr = nftnl_expr_iter_next(iter); expr != nullptr;
         expr = nftnl_expr_iter_next(iter)) {
      expressions.push_back(expr);
    }
    nftnl_expr_iter_destroy(iter);
    bool renamed = false;
    int missing = 0;
    for (nftnl_expr*& expr : expressions) {
      nftnl_rule_del_expr(expr);
      if (missing != 0 || str_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_NAME)) != "lookup") {
        continue;
      }
      std::optional<uint32_t> id;
      if (nftnl_expr_is_set(expr, NFTNL_EXPR_LOOKUP_SET_ID)) {
        id = nftnl_expr_get_u32(expr, NFTNL_EXPR_LOOKUP_SET_ID);
      }
      const FakeNftKernel::Set* used = find_set(
          family, table_name, str_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_LOOKUP_SET)), id);
      if (used == nullptr) {
        missing = ENOENT;
        continue;
      }
      nftnl_expr* named = nftnl_expr_alloc("lookup");
      nftnl_expr_set_u32(named, NFTNL_EXPR_LOOKUP_SREG,
                         nftnl_expr_get_u32(expr, NFTNL_EXPR_LOOKUP_SREG));
      for (const uint16_t attribute : {NFTNL_EXPR_LOOKUP_DREG, NFTNL_EXPR_LOOKUP_FLAGS}) {
        if (nftnl_expr_is_set(expr, attribute)) {
          nftnl_expr_set_u32(named, attribute, nftnl_expr_get_u32(expr, attribute));
        }
      }
      nftnl_expr_set_str(named, NFTNL_EXPR_LOOKUP_SET, used->name.c_str());
      nftnl_expr_free(expr);
      expr = named;
      renamed = true;
    }
    for (nftnl_expr* expr : expressions) {
      nftnl_rule_add_expr(parsed.get(), expr);  // the rule owns them again
    }
    if (missing != 0) {
      return missing;
    }
    if (renamed) {
      std::vector<uint8_t> buffer(16384);
      nlmsghdr* header = nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(buffer.data()),
                                               NFT_MSG_NEWRULE, family, flags, message.nlmsg_seq);
      nftnl_rule_nlmsg_build_payload(header, parsed.get());
      bytes.assign(buffer.begin(), buffer.begin() + header->nlmsg_len);
    }
    auto in_chain = [&](const FakeNftKernel::Rule& rule) {
      return rule.family == family && rule.table == table_name && rule.chain == chain_name;
    };
    auto where = s_.rules.end();
    const bool append = (flags & NLM_F_APPEND) != 0;
    if (nftnl_rule_is_set(parsed.get(), NFTNL_RULE_POSITION)) {
      const uint64_t position = nftnl_rule_get_u64(parsed.get(), NFTNL_RULE_POSITION);
      where = std::find_if(s_.rules.begin(), s_.rules.end(), [&](const auto& rule) {
        return in_chain(rule) && rule.handle == position;
      });
      if (where == s_.rules.end()) {
        return ENOENT;
      }
      if (append) {
        ++where;
      }
    } else if (append) {
      auto last = std::find_if(s_.rules.rbegin(), s_.rules.rend(), in_chain);
      where = last == s_.rules.rend() ? s_.rules.end() : last.base();
    } else {
      where = std::find_if(s_.rules.begin(), s_.rules.end(), in_chain);
    }
    const auto inserted = s_.rules.insert(where, FakeNftKernel::Rule{.family = family,
                                                                     .table = table_name,
                                                                     .chain = chain_name,
                                                                     .handle = owner->next_handle++,
                                                                     .message = std::move(bytes)});
    if ((flags & NLM_F_ECHO) != 0) {
      echoes_.push_back(rule_message(*inserted, message));
    }
    return 0;
  }

  int delete_rule(const nlmsghdr& message, uint8_t family) {
    NftnlRulePtr parsed(nftnl_rule_alloc());
    nftnl_rule_nlmsg_parse(&message, parsed.get());
    const std::string table_name = str_or_empty(nftnl_rule_get_str(parsed.get(), NFTNL_RULE_TABLE));
    const std::string chain_name = str_or_empty(nftnl_rule_get_str(parsed.get(), NFTNL_RULE_CHAIN));
    if (table(family, table_name) == nullptr || chain(family, table_name, chain_name) == nullptr) {
      return ENOENT;
    }
    auto in_chain = [&](const FakeNftKernel::Rule& rule) {
      return rule.family == family && rule.table == table_name && rule.chain == chain_name;
    };
    const bool flush = !nftnl_rule_is_set(parsed.get(), NFTNL_RULE_HANDLE);
    const uint64_t handle = flush ? 0 : nftnl_rule_get_u64(parsed.get(), NFTNL_RULE_HANDLE);
    auto doomed = [&](const FakeNftKernel::Rule& rule) {
      return in_chain(rule) && (flush || rule.handle == handle);
    };
    for (const FakeNftKernel::Rule& rule : s_.rules) {
      if (doomed(rule)) {
        drop_anonymous_sets(rule);
        if ((message.nlmsg_flags & NLM_F_ECHO) != 0) {
          // The deleted rule, whole, as nf_tables_rule_notify() sends it.
          Datagram echo = rule_message(rule, message);
          reinterpret_cast<nlmsghdr*>(echo.data())->nlmsg_type =
              static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELRULE);
          echoes_.push_back(std::move(echo));
        }
      }
    }
    const size_t erased = std::erase_if(s_.rules, doomed);
    return erased == 0 && !flush ? ENOENT : 0;
  }

  FakeNftKernel::State& s_;
  std::vector<Datagram> echoes_;
  std::map<uint32_t, std::string> set_ids_;  // NFTA_SET_ID -> name, this transaction
};

}  // namespace

void FakeNftKernel::send(std::span<const uint8_t> datagram) {
  const auto messages = messages_of(datagram);
  if (messages.empty()) {
    throw Error("fake nf_tables: empty datagram", EINVAL);
  }
  if (messages.front()->nlmsg_type == NFNL_MSG_BATCH_BEGIN) {
    for (Datagram& reply : answer_batch(datagram)) {
      pending_.push_back(std::move(reply));
    }
    return;
  }
  for (const nlmsghdr* message : messages) {
    if ((message->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP) {
      pending_.push_back(answer_dump(*message));
    } else if ((message->nlmsg_type & 0xff) == NFT_MSG_GETGEN) {
      // The ruleset generation libnftables reads around its cache dumps.
      Reply reply(NFT_MSG_NEWGEN, NFPROTO_UNSPEC, *message);
      reply.header()->nlmsg_flags = 0;
      mnl_attr_put_u32(reply.header(), NFTA_GEN_ID, htonl(generation_));
      pending_.push_back(reply.datagram());
      if ((message->nlmsg_flags & NLM_F_ACK) != 0) {
        pending_.push_back(ack(*message));
      }
    } else if ((message->nlmsg_type & 0xff) == NFT_MSG_GETTABLE) {
      // One table or chain by name: libnftables' cache for `list chain`.
      NftnlTablePtr wanted(nftnl_table_alloc());
      nftnl_table_nlmsg_parse(message, wanted.get());
      const std::string name = str_or_empty(nftnl_table_get_str(wanted.get(), NFTNL_TABLE_NAME));
      const auto found =
          std::find_if(state_.tables.begin(), state_.tables.end(), [&](const Table& table) {
            return table.family == family_of(*message) && table.name == name;
          });
      if (found == state_.tables.end()) {
        pending_.push_back(error_reply(*message, ENOENT));
        continue;
      }
      Datagram reply = table_message(*found, *message);
      reinterpret_cast<nlmsghdr*>(reply.data())->nlmsg_flags = 0;
      pending_.push_back(std::move(reply));
      if ((message->nlmsg_flags & NLM_F_ACK) != 0) {
        pending_.push_back(ack(*message));
      }
    } else if ((message->nlmsg_type & 0xff) == NFT_MSG_GETCHAIN) {
      NftnlChainPtr wanted(nftnl_chain_alloc());
      nftnl_chain_nlmsg_parse(message, wanted.get());
      const std::optional<Chain> found = chain(
          family_of(*message), str_or_empty(nftnl_chain_get_str(wanted.get(), NFTNL_CHAIN_TABLE)),
          str_or_empty(nftnl_chain_get_str(wanted.get(), NFTNL_CHAIN_NAME)));
      if (!found) {
        pending_.push_back(error_reply(*message, ENOENT));
        continue;
      }
      Datagram reply = chain_message(*found, *message);
      reinterpret_cast<nlmsghdr*>(reply.data())->nlmsg_flags = 0;
      pending_.push_back(std::move(reply));
      if ((message->nlmsg_flags & NLM_F_ACK) != 0) {
        pending_.push_back(ack(*message));
      }
    } else {
      pending_.push_back(error_reply(*message, EOPNOTSUPP));
    }
  }
}

Datagram FakeNftKernel::receive() {
  if (pending_.empty()) {
    throw Error("fake nf_tables: receive() with nothing to answer", ETIMEDOUT);
  }
  Datagram reply = std::move(pending_.front());
  pending_.erase(pending_.begin());
  return reply;
}

std::vector<Datagram> FakeNftKernel::answer_batch(std::span<const uint8_t> datagram) {
  ++batches_;
  const auto messages = messages_of(datagram);
  std::vector<Datagram> replies;
  // No end message: `nft -c`. nfnetlink_rcv_batch() applies every
  // message, answers each, and aborts the transaction for want of an end.
  const bool check = messages.back()->nlmsg_type != NFNL_MSG_BATCH_END;
  if (check) {
    ++checks_;
  }
  if (refuse_writes_ != 0 && messages.size() > (check ? 1U : 2U)) {
    replies.push_back(error_reply(*messages[1], refuse_writes_));
    return replies;
  }
  if (before_next_batch_) {
    const auto writer = std::move(before_next_batch_);
    before_next_batch_ = nullptr;
    writer();
  }
  // NFNL_BATCH_GENID: the whole batch is refused, with ERESTART against its
  // begin message, when the ruleset has moved past the generation it names.
  uint32_t named = 0;
  mnl_attr_parse(
      messages.front(), sizeof(nfgenmsg),
      [](const nlattr* attribute, void* data) {
        if (mnl_attr_get_type(attribute) == NFNL_BATCH_GENID &&
            mnl_attr_validate(attribute, MNL_TYPE_U32) >= 0) {
          *static_cast<uint32_t*>(data) = ntohl(mnl_attr_get_u32(attribute));
        }
        return MNL_CB_OK;
      },
      &named);
  if (named != 0 && named != generation_) {
    ++stale_batches_;
    replies.push_back(error_reply(*messages.front(), ERESTART));
    return replies;
  }
  State next = state_;  // the transaction: committed only if all succeed
  Transaction transaction(next);
  bool failed = false;
  const size_t end = check ? messages.size() : messages.size() - 1;
  for (size_t i = 1; i < end; ++i) {
    const nlmsghdr& message = *messages[i];
    const int error = transaction.apply(message);
    failed = failed || error != 0;
    if (error != 0) {
      replies.push_back(error_reply(message, error));
    } else if ((message.nlmsg_flags & NLM_F_ACK) != 0) {
      replies.push_back(ack(message));
    }
  }
  if (!failed && !check) {
    state_ = std::move(next);
    ++generation_;
    replies.insert(replies.begin(), transaction.echoes().begin(), transaction.echoes().end());
  }
  return replies;
}

Datagram FakeNftKernel::answer_dump(const nlmsghdr& request) {
  const uint8_t wanted = family_of(request);
  const std::string table = table_filter(request);
  auto selected = [&](const auto& object) {
    return family_matches(wanted, object.family) && (table.empty() || object.table == table);
  };
  std::vector<Datagram> parts;
  switch (request.nlmsg_type & 0xff) {
    case NFT_MSG_GETTABLE:
      for (const Table& object : state_.tables) {
        if (family_matches(wanted, object.family)) {
          parts.push_back(table_message(object, request));
        }
      }
      break;
    case NFT_MSG_GETCHAIN:
      for (const Chain& chain : state_.chains) {
        if (selected(chain)) {
          parts.push_back(chain_message(chain, request));
        }
      }
      break;
    case NFT_MSG_GETRULE: {
      NftnlRulePtr filter(nftnl_rule_alloc());
      nftnl_rule_nlmsg_parse(&request, filter.get());
      const std::string chain = str_or_empty(nftnl_rule_get_str(filter.get(), NFTNL_RULE_CHAIN));
      for (const Rule& rule : state_.rules) {
        if (selected(rule) && (chain.empty() || rule.chain == chain)) {
          parts.push_back(rule_message(rule, request));
        }
      }
      break;
    }
    case NFT_MSG_GETFLOWTABLE:
      for (const Flowtable& flowtable : state_.flowtables) {
        if (selected(flowtable)) {
          parts.push_back(flowtable_message(flowtable, request));
        }
      }
      break;
    case NFT_MSG_GETSET:
      for (const Set& set : state_.sets) {
        if (selected(set)) {
          parts.push_back(set_message(set, request));
        }
      }
      break;
    case NFT_MSG_GETSETELEM: {
      NftnlSetPtr filter(nftnl_set_alloc());
      nftnl_set_elems_nlmsg_parse(&request, filter.get());
      const std::string table_name = str_or_empty(nftnl_set_get_str(filter.get(), NFTNL_SET_TABLE));
      const std::string name = str_or_empty(nftnl_set_get_str(filter.get(), NFTNL_SET_NAME));
      const auto found = std::find_if(state_.sets.begin(), state_.sets.end(), [&](const Set& set) {
        return set.family == wanted && set.table == table_name && set.name == name;
      });
      if (found == state_.sets.end()) {
        return error_reply(request, ENOENT);
      }
      if (!found->elements.empty()) {
        parts.push_back(set_elements_message(*found, request));
      }
      break;
    }
    case NFT_MSG_GETOBJ:
      break;  // this fake keeps none: an empty dump, as from a kernel without any
    default:
      return error_reply(request, EOPNOTSUPP);
  }
  parts.push_back(done(request));
  return concat(parts);
}

void FakeNftKernel::add_table(uint8_t family, const std::string& name) {
  ++generation_;
  state_.tables.push_back(
      {.family = family, .name = name, .handle = state_.next_table_handle++, .next_handle = 1});
}

void FakeNftKernel::set_table_owner(uint8_t family, const std::string& name, uint32_t portid) {
  ++generation_;
  for (Table& table : state_.tables) {
    if (table.family == family && table.name == name) {
      table.flags |= NFT_TABLE_F_OWNER;
      table.owner = portid;
      return;
    }
  }
  throw Error("fake nf_tables: no table " + name);
}

void FakeNftKernel::add_base_chain(uint8_t family, const std::string& table,
                                   const std::string& name, uint32_t hooknum, int32_t priority,
                                   uint32_t policy) {
  ++generation_;
  for (Table& owner : state_.tables) {
    if (owner.family == family && owner.name == table) {
      state_.chains.push_back({.family = family,
                               .table = table,
                               .name = name,
                               .handle = owner.next_handle++,
                               .base = true,
                               .type = "filter",
                               .hooknum = hooknum,
                               .priority = priority,
                               .policy = policy});
      return;
    }
  }
  throw Error("fake nf_tables: no table " + table);
}

void FakeNftKernel::add_flowtable(uint8_t family, const std::string& table,
                                  const std::string& name) {
  ++generation_;
  for (Table& owner : state_.tables) {
    if (owner.family == family && owner.name == table) {
      state_.flowtables.push_back({.family = family,
                                   .table = table,
                                   .name = name,
                                   .handle = owner.next_handle++,
                                   .priority = 0,
                                   .devices = {"eth0"},
                                   .flags = 0});
      return;
    }
  }
  throw Error("fake nf_tables: no table " + table);
}

uint64_t FakeNftKernel::seed_rule(uint8_t family, const std::string& table,
                                  const std::string& chain, nftnl_rule* rule, bool append,
                                  uint64_t before) {
  ++generation_;
  nftnl_rule_set_str(rule, NFTNL_RULE_TABLE, table.c_str());
  nftnl_rule_set_str(rule, NFTNL_RULE_CHAIN, chain.c_str());
  std::vector<uint8_t> buffer(4096);
  nlmsghdr* header = nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(buffer.data()), NFT_MSG_NEWRULE,
                                           family, append ? NLM_F_APPEND : 0, 0);
  nftnl_rule_nlmsg_build_payload(header, rule);
  for (Table& owner : state_.tables) {
    if (owner.family == family && owner.name == table) {
      const uint64_t handle = owner.next_handle++;
      Rule added{.family = family,
                 .table = table,
                 .chain = chain,
                 .handle = handle,
                 .message = Datagram(buffer.begin(), buffer.begin() + header->nlmsg_len)};
      auto at = state_.rules.end();
      if (!append) {
        at = std::find_if(state_.rules.begin(), state_.rules.end(), [&](const Rule& other) {
          return other.family == family && other.table == table && other.chain == chain &&
                 (before == 0 || other.handle == before);
        });
      }
      state_.rules.insert(at, std::move(added));
      return handle;
    }
  }
  throw Error("fake nf_tables: no table " + table);
}

uint64_t FakeNftKernel::add_verdict_rule(uint8_t family, const std::string& table,
                                         const std::string& chain, uint32_t verdict) {
  NftnlRulePtr rule(nftnl_rule_alloc());
  nftnl_expr* immediate = nftnl_expr_alloc("immediate");
  nftnl_expr_set_u32(immediate, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
  nftnl_expr_set_u32(immediate, NFTNL_EXPR_IMM_VERDICT, verdict);
  nftnl_rule_add_expr(rule.get(), immediate);
  return seed_rule(family, table, chain, rule.get(), true, 0);
}

uint64_t FakeNftKernel::add_offload_rule(uint8_t family, const std::string& table,
                                         const std::string& chain, const std::string& flowtable,
                                         uint8_t protocol, uint64_t before,
                                         const std::string& comment) {
  NftnlRulePtr rule(nftnl_rule_alloc());
  if (!comment.empty()) {
    std::unique_ptr<nftnl_udata_buf, decltype(&nftnl_udata_buf_free)> userdata(
        nftnl_udata_buf_alloc(NFT_USERDATA_MAXLEN), nftnl_udata_buf_free);
    nftnl_udata_put_strz(userdata.get(), NFTNL_UDATA_RULE_COMMENT, comment.c_str());
    nftnl_rule_set_data(rule.get(), NFTNL_RULE_USERDATA, nftnl_udata_buf_data(userdata.get()),
                        nftnl_udata_buf_len(userdata.get()));
  }
  nftnl_expr* meta = nftnl_expr_alloc("meta");
  nftnl_expr_set_u32(meta, NFTNL_EXPR_META_KEY, NFT_META_L4PROTO);
  nftnl_expr_set_u32(meta, NFTNL_EXPR_META_DREG, NFT_REG_1);
  nftnl_rule_add_expr(rule.get(), meta);
  nftnl_expr* cmp = nftnl_expr_alloc("cmp");
  nftnl_expr_set_u32(cmp, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
  nftnl_expr_set_u32(cmp, NFTNL_EXPR_CMP_OP, NFT_CMP_EQ);
  nftnl_expr_set(cmp, NFTNL_EXPR_CMP_DATA, &protocol, sizeof(protocol));
  nftnl_rule_add_expr(rule.get(), cmp);
  nftnl_expr* flow = nftnl_expr_alloc("flow_offload");
  nftnl_expr_set_str(flow, NFTNL_EXPR_FLOW_TABLE_NAME, flowtable.c_str());
  nftnl_rule_add_expr(rule.get(), flow);
  return seed_rule(family, table, chain, rule.get(), false, before);
}

void FakeNftKernel::delete_table(uint8_t family, const std::string& name) {
  ++generation_;
  erase_table(state_, family, name);
}

void FakeNftKernel::delete_rule(uint8_t family, const std::string& table, const std::string& chain,
                                uint64_t handle) {
  ++generation_;
  std::erase_if(state_.rules, [&](const Rule& rule) {
    return rule.family == family && rule.table == table && rule.chain == chain &&
           rule.handle == handle;
  });
}

std::optional<FakeNftKernel::Chain> FakeNftKernel::chain(uint8_t family, const std::string& table,
                                                         const std::string& name) const {
  for (const Chain& chain : state_.chains) {
    if (chain.family == family && chain.table == table && chain.name == name) {
      return chain;
    }
  }
  return std::nullopt;
}

std::vector<std::string> FakeNftKernel::rules(uint8_t family, const std::string& table,
                                              const std::string& chain) const {
  std::vector<std::string> result;
  for (const Rule& rule : state_.rules) {
    if (rule.family != family || rule.table != table || rule.chain != chain) {
      continue;
    }
    std::string text = std::to_string(rule.handle) + ":";
    NftnlRulePtr parsed = parse_rule(rule.message);
    nftnl_expr_iter* iter = nftnl_expr_iter_create(parsed.get());
    for (nftnl_expr* expr = nftnl_expr_iter_next(iter); expr != nullptr;
         expr = nftnl_expr_iter_next(iter)) {
      const std::string name = str_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_NAME));
      text += " " + name;
      if (name == "cmp") {
        uint32_t length = 0;
        const auto* data =
            static_cast<const uint8_t*>(nftnl_expr_get(expr, NFTNL_EXPR_CMP_DATA, &length));
        text += " " + std::to_string(length > 0 ? data[0] : 0);
      } else if (name == "lookup") {
        text += " " + str_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_LOOKUP_SET));
      } else if (name == "flow_offload") {
        text += " @" + str_or_empty(nftnl_expr_get_str(expr, NFTNL_EXPR_FLOW_TABLE_NAME));
      } else if (name == "immediate") {
        const auto verdict = static_cast<int32_t>(nftnl_expr_get_u32(expr, NFTNL_EXPR_IMM_VERDICT));
        text += verdict == NF_ACCEPT ? " accept" : verdict == NF_DROP ? " drop" : " other";
      }
    }
    nftnl_expr_iter_destroy(iter);
    result.push_back(text);
  }
  return result;
}

}  // namespace flowbulk::testing
