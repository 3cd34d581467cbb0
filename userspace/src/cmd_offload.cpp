// SPDX-License-Identifier: GPL-2.0
// flowbulk offload: the forward-chain rules that offload flows to a flowtable.
#include <libnftnl/udata.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <ostream>

#include "commands.h"
#include "error.h"
#include "names.h"
#include "nfb_client.h"
#include "nft_client.h"
#include "nft_commands.h"
#include "offload_plan.h"
#include "output.h"

namespace flowbulk {

namespace {

uint64_t parse_handle(const std::string& word) {
  // Digits only: strtoull would take " 5", "+5" and "-1".
  if (word.empty() || word.size() > 20 ||
      !std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw UsageError("invalid handle \"" + word + "\": a rule handle (see \"nft -a list chain\")");
  }
  errno = 0;
  const unsigned long long value = std::strtoull(word.c_str(), nullptr, 10);
  if (errno == ERANGE || value == 0) {
    throw UsageError("invalid handle \"" + word + "\"");
  }
  return value;
}

// What an offload rule offloads: "tcp", "udp" (a number for another
// protocol), "tcp,udp" for a set of them, "all" when it matches no
// protocol before `flow add`, "other" when it matches something else.
std::string offload_proto_text(const OffloadRule& rule) {
  switch (rule.match) {
    case OffloadMatch::kAll:
      return "all";
    case OffloadMatch::kOther:
      return "other";
    case OffloadMatch::kProtocols:
      break;
  }
  std::string text;
  for (uint8_t protocol : rule.protocols) {
    text += (text.empty() ? "" : ",") + protocol_name(protocol);
  }
  return text;
}

// PROTO in the text listing: "tcp,udp", or "ipv4 tcp,udp" for an IPv4-only match.
std::string offload_proto_column(const OffloadRule& rule) {
  return (rule.ip_version == IpVersion::kAny ? "" : ip_version_text(rule.ip_version) + " ") +
         offload_proto_text(rule);
}

// An offload rule's fields, for its JSON and its row in `offload list`.
Record offload_rule_record(const OffloadRule& rule) {
  Record record;
  record.any("family", family_name(rule.family))
      .any("table", rule.table)
      .any("chain", rule.chain)
      .any("handle", rule.handle)
      .any("flowtable", rule.flowtable)
      .any("proto", offload_proto_text(rule), offload_proto_column(rule))
      .json("nfproto", ip_version_text(rule.ip_version))
      .any("counter", rule.counter)
      .any("comment", rule.comment.empty() ? Json() : Json(rule.comment))
      .json("flowbulk", rule.marked());
  return record;
}

Json offload_rule_json(const OffloadRule& rule) {
  return offload_rule_record(rule).object();
}

// `proto`, `counter`, `chain`, `position` after FAMILY TABLE FLOWTABLE.
OffloadSpec parse_offload_spec(Arguments& arguments, bool adding) {
  OffloadSpec spec;
  spec.flowtable = parse_flowtable_ref(arguments);
  bool protocol_given = false;
  bool chain_given = false;
  bool position_given = false;
  while (!arguments.empty()) {
    const std::string keyword =
        adding ? match_keyword(arguments.take("keyword"), {"proto", "counter", "chain", "position"},
                               "offload option", "offload")
               : match_keyword(arguments.take("keyword"), {"proto", "chain"}, "offload option",
                               "offload");
    auto once = [&keyword](bool& given) {
      if (given) {
        throw UsageError("\"" + keyword + "\" given twice");
      }
      given = true;
    };
    if (keyword == "proto") {
      once(protocol_given);
      const std::string protocol = match_keyword(arguments.take("PROTO (tcp, udp or all)"),
                                                 {"tcp", "udp", "all"}, "protocol", "offload");
      spec.protocol = protocol == "tcp"   ? OffloadProtocol::kTcp
                      : protocol == "udp" ? OffloadProtocol::kUdp
                                          : OffloadProtocol::kAll;
    } else if (keyword == "chain") {
      once(chain_given);
      spec.chain = arguments.take("CHAIN");
      validate_name(spec.chain, "chain");
    } else if (keyword == "position") {
      once(position_given);
      const std::string where =
          match_keyword(arguments.take("POSITION (top, bottom, after HANDLE or before HANDLE)"),
                        {"top", "bottom", "after", "before"}, "position", "offload");
      if (where == "top") {
        spec.position = RulePosition::kTop;
      } else if (where == "bottom") {
        spec.position = RulePosition::kBottom;
      } else {
        spec.position = where == "after" ? RulePosition::kAfter : RulePosition::kBefore;
        spec.handle = parse_handle(arguments.take("HANDLE"));
      }
    } else {
      if (spec.counter) {
        throw UsageError("\"counter\" given twice");
      }
      spec.counter = true;
    }
  }
  return spec;
}

// `meta l4proto P [counter] flow add @FLOWTABLE`, as nft itself encodes
// it (meta into register 1, cmp ==, counter, flow_offload).
NftnlRulePtr offload_rule(const OffloadSpec& spec, uint8_t protocol) {
  NftnlRulePtr rule(nftnl_rule_alloc());
  if (!rule) {
    throw Error("out of memory", ENOMEM);
  }
  const FlowtableRef& ref = spec.flowtable;
  nftnl_rule_set_u32(rule.get(), NFTNL_RULE_FAMILY, ref.family);
  nftnl_rule_set_str(rule.get(), NFTNL_RULE_TABLE, ref.table.c_str());
  nftnl_rule_set_str(rule.get(), NFTNL_RULE_CHAIN, spec.chain.c_str());
  if (spec.handle != 0) {
    nftnl_rule_set_u64(rule.get(), NFTNL_RULE_POSITION, spec.handle);
  }
  auto add = [&rule](const char* name) {
    nftnl_expr* expr = nftnl_expr_alloc(name);
    if (expr == nullptr) {
      throw Error("out of memory", ENOMEM);
    }
    nftnl_rule_add_expr(rule.get(), expr);  // the rule owns it from here
    return expr;
  };
  nftnl_expr* meta = add("meta");
  nftnl_expr_set_u32(meta, NFTNL_EXPR_META_KEY, NFT_META_L4PROTO);
  nftnl_expr_set_u32(meta, NFTNL_EXPR_META_DREG, NFT_REG_1);
  nftnl_expr* cmp = add("cmp");
  nftnl_expr_set_u32(cmp, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
  nftnl_expr_set_u32(cmp, NFTNL_EXPR_CMP_OP, NFT_CMP_EQ);
  nftnl_expr_set(cmp, NFTNL_EXPR_CMP_DATA, &protocol, sizeof(protocol));
  if (spec.counter) {
    add("counter");
  }
  nftnl_expr* flow = add("flow_offload");
  nftnl_expr_set_str(flow, NFTNL_EXPR_FLOW_TABLE_NAME, ref.flowtable.c_str());
  // The marker, as nft stores `comment "..."`: a NUL-terminated string in
  // the rule's user data, type NFTNL_UDATA_RULE_COMMENT.
  std::unique_ptr<nftnl_udata_buf, decltype(&nftnl_udata_buf_free)> userdata(
      nftnl_udata_buf_alloc(NFT_USERDATA_MAXLEN), nftnl_udata_buf_free);
  if (!userdata ||
      !nftnl_udata_put_strz(userdata.get(), NFTNL_UDATA_RULE_COMMENT, kOffloadMarker)) {
    throw Error("out of memory", ENOMEM);
  }
  nftnl_rule_set_data(rule.get(), NFTNL_RULE_USERDATA, nftnl_udata_buf_data(userdata.get()),
                      nftnl_udata_buf_len(userdata.get()));
  return rule;
}

// The forward base chain offload add creates: type filter, priority filter
// (0), no policy (the kernel's default accept).
NftnlChainPtr forward_chain(const FlowtableRef& ref, const std::string& name) {
  NftnlChainPtr chain(nftnl_chain_alloc());
  if (!chain) {
    throw Error("out of memory", ENOMEM);
  }
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_FAMILY, ref.family);
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_TABLE, ref.table.c_str());
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_NAME, name.c_str());
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_TYPE, "filter");
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_HOOKNUM, NF_INET_FORWARD);
  nftnl_chain_set_s32(chain.get(), NFTNL_CHAIN_PRIO, 0);
  return chain;
}

// What offload add decides on, read from the kernel: the table's owner,
// the flowtable, the chains, and the rules of those it may write to.
OffloadView read_offload_view(Invocation& invocation, NftClient& nft, const OffloadSpec& spec) {
  const FlowtableRef& ref = spec.flowtable;
  OffloadView view;
  const std::optional<TableInfo> table = nft.find_table(ref.family, ref.table);
  if (!table) {
    return view;  // and so no flowtable either
  }
  if ((table->flags & NFT_TABLE_F_OWNER) != 0) {
    // flowbulk owns no table: its libnftables loads end with their socket.
    view.owner = owner_text(invocation, table->owner);
    return view;
  }
  const auto flowtables = nft.list_flowtables(ref.family);
  view.flowtable_exists =
      std::any_of(flowtables.begin(), flowtables.end(), [&ref](const NftnlFlowtablePtr& found) {
        return ref.table ==
                   text_or_empty(nftnl_flowtable_get_str(found.get(), NFTNL_FLOWTABLE_TABLE)) &&
               ref.flowtable ==
                   text_or_empty(nftnl_flowtable_get_str(found.get(), NFTNL_FLOWTABLE_NAME));
      });
  if (!view.flowtable_exists) {
    return view;
  }
  for (ChainInfo& info : nft.list_chains(ref.family, ref.table)) {
    ChainView chain{.info = std::move(info), .handles = {}, .rules = {}};
    const bool candidate = spec.chain.empty()
                               ? chain.info.base && chain.info.hooknum == NF_INET_FORWARD
                               : chain.info.name == spec.chain;
    if (candidate) {
      if (auto listed = read_chain_rules(invocation, ref.family, ref.table, chain.info.name)) {
        chain.handles = std::move(listed->handles);
        chain.rules = std::move(listed->rules);
      }
    }
    view.chains.push_back(std::move(chain));
  }
  return view;
}

// Never touches an existing chain: it is created (exclusively, with no
// policy: the kernel's default accept) only when it does not exist. A
// protocol that a rule of the chain already offloads to the flowtable
// (`meta l4proto tcp`, `meta l4proto { tcp, udp }`, a bare `flow add`) is
// left to that rule, not added again. The reads and the write are one
// generation of the ruleset: two offload add runs at once add each rule
// once, and a rule another writer puts next to the handle we place ours by
// cannot come between.
OffloadResult add_offload(Invocation& invocation, NftClient& nft, const OffloadSpec& asked,
                          const std::string& context) {
  // Another writer committing between our reads and our write makes the
  // kernel refuse the write (ERESTART): we read again, after a wait.
  GenerationRetry retry(invocation.env);
  while (true) {
    try {
      const uint32_t generation = nft.generation();
      const OffloadPlan plan = plan_offload(asked, read_offload_view(invocation, nft, asked));
      OffloadResult result{.chain_created = false,
                           .chain_handle = 0,
                           .added = {},
                           .append = plan.append,
                           .position = plan.spec.handle,
                           .present = plan.present};
      if (plan.empty()) {
        if (nft.generation() != generation && retry.again()) {
          continue;  // the reads may straddle a change: read again
        }
        return result;  // nothing to change, and nothing sent
      }
      const OffloadSpec& spec = plan.spec;
      NftWrite write;
      if (plan.create_chain) {
        // An existing chain may have any name; a new one is ours to name.
        validate_new_name(spec.chain, "chain");
        write.chains.push_back(forward_chain(spec.flowtable, spec.chain));
      }
      for (uint8_t protocol : plan.send) {
        write.rules.push_back({.rule = offload_rule(spec, protocol), .append = plan.append});
      }
      // -c: the kernel checks the write and aborts it (handles stay 0).
      const CommitEcho echo = nft.commit(write, generation, invocation.options.check);
      const std::vector<uint64_t>& handles = echo.rule_handles;
      result.chain_created = plan.create_chain;
      if (!echo.chain_handles.empty()) {
        result.chain_handle = echo.chain_handles.front();
      }
      for (size_t i = 0; i < plan.send.size(); ++i) {
        result.added.push_back(OffloadRule{.family = spec.flowtable.family,
                                           .table = spec.flowtable.table,
                                           .chain = spec.chain,
                                           .handle = i < handles.size() ? handles[i] : 0,
                                           .flowtable = spec.flowtable.flowtable,
                                           .match = OffloadMatch::kProtocols,
                                           .protocols = {plan.send[i]},
                                           .ip_version = IpVersion::kAny,
                                           .counter = spec.counter,
                                           .comment = kOffloadMarker});
      }
      if (plan.reversed) {
        std::reverse(result.added.begin(), result.added.end());  // chain order
      }
      return result;
    } catch (const KernelError& error) {
      if (error.sys_errno() == ERESTART) {
        if (retry.again()) {
          continue;
        }
        fail_with_context(retry.exhausted(), context);
      }
      fail_with_context(error, context);
    } catch (const Error& error) {
      fail_with_context(error, context);
    }
  }
}

// An offload rule the kernel echoed, as nft -e -a prints it.
std::string offload_echo_line(const char* verb, const OffloadRule& rule) {
  return std::string(verb) + " rule " + table_text(rule.family, rule.table) + " " + rule.chain +
         " " + offload_rule_statement(rule) + " # handle " + std::to_string(rule.handle);
}

void offload_add(Invocation& invocation, Arguments& arguments) {
  const OffloadSpec spec = parse_offload_spec(arguments, true);
  NftClient nft = open_nft(invocation);
  std::string context = "cannot add offload rule for flowtable " + spec.flowtable.to_string();
  if (!spec.chain.empty()) {
    context += " in chain " + spec.chain;
  }
  if (spec.handle != 0) {
    context += std::string(spec.position == RulePosition::kAfter ? " after" : " before") +
               " rule handle " + std::to_string(spec.handle);
  }
  const OffloadResult result = add_offload(invocation, nft, spec, context);
  const bool changed = !result.added.empty() || result.chain_created;
  const bool check = invocation.options.check;
  // -e: the chain and the rules as the kernel echoed them, with handles.
  Json echoed = Json::array();
  if (result.chain_created && !check) {
    Json chain = nft_object(spec.flowtable.family, spec.flowtable.table);
    chain["name"] = result.added.empty() ? spec.chain : result.added.front().chain;
    chain["handle"] = result.chain_handle;
    chain["type"] = "filter";
    chain["hook"] = "forward";
    chain["prio"] = 0;
    echoed.push_back(nft_command("add", "chain", chain));
  }
  if (!check) {
    for (const OffloadRule& rule : result.added) {
      echoed.push_back(nft_command("add", "rule", offload_rule_json(rule)));
    }
  }
  if (invocation.options.json) {
    Json body{{"changed", changed && !check},
              {"chain_created", result.chain_created && !check},
              {"added", json_array(result.added, offload_rule_json)},
              {"present", json_array(result.present, offload_rule_json)}};
    if (check) {
      // What would change: the plan, checked by the kernel.
      body["check"] = true;
      body["would_change"] = changed;
      body["would_create_chain"] = result.chain_created;
    }
    if (invocation.options.echo) {
      body["echo"] = echoed;
    }
    emit_json(invocation, body);
    return;
  }
  std::ostream& out = invocation.env.out;
  if (check) {
    // The plan, in nft's words, as the kernel accepted it.
    if (result.chain_created) {
      const std::string chain = result.added.empty() ? spec.chain : result.added.front().chain;
      out << "would create chain " << table_text(spec.flowtable.family, spec.flowtable.table) << " "
          << chain << " { type filter hook forward priority 0; }\n";
    }
    for (const OffloadRule& rule : result.added) {
      out << "would " << (result.append ? "add" : "insert") << " rule "
          << table_text(rule.family, rule.table) << " " << rule.chain;
      if (result.position != 0) {
        out << " position " << result.position;
      }
      out << " " << offload_rule_statement(rule) << "\n";
    }
    for (const OffloadRule& rule : result.present) {
      out << "already present in chain " << table_text(rule.family, rule.table) << " " << rule.chain
          << ": " << offload_rule_text(rule) << "\n";
    }
    if (!changed) {
      out << "nothing would change\n";
    }
    return;
  }
  if (invocation.options.echo) {
    if (result.chain_created) {
      out << echoed_command_text(echoed.front()) << "\n";
    }
    for (const OffloadRule& rule : result.added) {
      out << offload_echo_line("add", rule) << "\n";
    }
  }
  for (const OffloadRule& rule : result.present) {
    out << "already in chain " << table_text(rule.family, rule.table) << " " << rule.chain << ": "
        << offload_rule_text(rule) << "\n";
  }
  if (!changed) {
    out << "nothing changed\n";
  }
}

void offload_list(Invocation& invocation, Arguments& arguments) {
  const std::optional<uint8_t> family = optional_family(arguments);
  std::string table;
  if (!arguments.empty()) {
    table = arguments.take("TABLE");
  }
  arguments.expect_end();
  std::vector<OffloadRule> rules;
  try {
    NftClient nft = open_nft(invocation);
    rules = read_offload_rules(invocation, nft, family, table);
  } catch (const Error& error) {
    fail_with_context(error, "cannot list offload rules");
  }
  if (!table.empty() && rules.empty()) {
    require_table(invocation, *family, table, "cannot list offload rules");
  }
  RecordList list({{"family", "FAMILY"},
                   {"table", "TABLE"},
                   {"chain", "CHAIN"},
                   {"proto", "PROTO"},
                   {"flowtable", "FLOWTABLE"},
                   {"counter", "COUNTER"},
                   {"handle", "HANDLE", TextTable::Align::kRight},
                   {"comment", "COMMENT"}});
  for (const OffloadRule& rule : rules) {
    list.add() = offload_rule_record(rule);
  }
  print_list(invocation, "offloads", list);
}

// The offload rules `offload delete` removes, as the ruleset is now.
// The offload rules of spec's flowtable that offload_delete removes, and
// in @left those it leaves: only the rules flowbulk wrote (they carry its
// comment) go, as another writer's offload rule may also count, accept or
// limit packets; with a protocol, those that offload only that protocol
// (not a set whose other protocols would go too).
std::vector<OffloadRule> offload_rules_to_delete(Invocation& invocation, NftClient& nft,
                                                 const OffloadSpec& spec,
                                                 std::vector<OffloadRule>& left) {
  const FlowtableRef& ref = spec.flowtable;
  std::vector<OffloadRule> victims;
  left.clear();
  for (OffloadRule& rule : read_offload_rules(invocation, nft, ref.family, ref.table, spec.chain)) {
    if (rule.flowtable != ref.flowtable ||
        std::any_of(victims.begin(), victims.end(),
                    [&rule](const OffloadRule& seen) { return seen.handle == rule.handle; })) {
      continue;
    }
    const bool protocol_matches =
        spec.protocol == OffloadProtocol::kAll ||
        rule.is_only(spec.protocol == OffloadProtocol::kTcp ? IPPROTO_TCP : IPPROTO_UDP);
    if (!rule.marked()) {
      left.push_back(std::move(rule));
    } else if (protocol_matches) {
      victims.push_back(std::move(rule));
    }
  }
  return victims;
}

void offload_delete(Invocation& invocation, Arguments& arguments) {
  const OffloadSpec spec = parse_offload_spec(arguments, false);
  const FlowtableRef& ref = spec.flowtable;
  const std::string context = "cannot delete offload rules of flowtable " + ref.to_string();
  std::vector<OffloadRule> victims;
  std::vector<OffloadRule> left;  // offload rules for the flowtable flowbulk did not write
  std::vector<uint64_t> deleted;  // the handles the kernel echoed as deleted
  // By handle, in one transaction, guarded by the generation the listing
  // saw: a table deleted and made again in between numbers its rules from
  // 1 again, and a stale handle would delete whatever rule got it. When
  // the kernel refuses (ERESTART), the rules are listed and chosen again.
  GenerationRetry retry(invocation.env);
  try {
    NftClient nft = open_nft(invocation);
    if (const auto table = nft.find_table(ref.family, ref.table);
        table && (table->flags & NFT_TABLE_F_OWNER) != 0) {
      throw Error("table " + table_text(ref.family, ref.table) + " is owned by " +
                      owner_text(invocation, table->owner) +
                      " (flags owner): only that process may change it",
                  EPERM);
    }
    while (true) {
      try {
        const uint32_t generation = nft.generation();
        victims = offload_rules_to_delete(invocation, nft, spec, left);
        if (victims.empty()) {
          if (nft.generation() != generation && retry.again()) {
            continue;  // the listing may straddle a change: list again
          }
          break;
        }
        NftWrite write;
        for (const OffloadRule& rule : victims) {
          write.deletes.push_back({.family = rule.family,
                                   .table = rule.table,
                                   .chain = rule.chain,
                                   .handle = rule.handle});
        }
        // -c: the kernel checks the deletes and aborts them.
        const CommitEcho echo = nft.commit(write, generation, invocation.options.check);
        deleted = echo.deleted_handles;
        break;
      } catch (const KernelError& error) {
        if (error.sys_errno() != ERESTART) {
          throw;
        }
        if (!retry.again()) {
          throw retry.exhausted();
        }
      }
    }
  } catch (const Error& error) {
    fail_with_context(error, context);
  }
  auto left_text = [&left] {
    std::string text;
    for (const OffloadRule& rule : left) {
      text += "\n  chain " + rule.chain + ": " + offload_rule_text(rule);
    }
    return text;
  };
  if (victims.empty()) {
    const std::string where = spec.chain.empty()
                                  ? "table " + table_text(ref.family, ref.table)
                                  : "chain " + table_text(ref.family, ref.table) + " " + spec.chain;
    if (left.empty()) {
      throw Error(context + ": " + where + " has no offload rule for it", ENOENT);
    }
    throw Error(context + ": " + where +
                    " has no offload rule for it that flowbulk wrote (comment \"" + kOffloadMarker +
                    "\"); delete these with nft:" + left_text(),
                ENOENT);
  }
  const bool check = invocation.options.check;
  auto echoed_delete = [&deleted](const OffloadRule& rule) {
    return std::find(deleted.begin(), deleted.end(), rule.handle) != deleted.end();
  };
  if (invocation.options.json) {
    Json list = Json::array();
    Json echoed = Json::array();
    for (const OffloadRule& rule : victims) {
      list.push_back(offload_rule_json(rule));
      if (echoed_delete(rule)) {
        echoed.push_back(nft_command("delete", "rule", offload_rule_json(rule)));
      }
    }
    // Under -c, "deleted" is what would be.
    Json body{{"deleted", list}, {"left", json_array(left, offload_rule_json)}};
    if (check) {
      body["check"] = true;
    }
    if (invocation.options.echo) {
      body["echo"] = echoed;
    }
    emit_json(invocation, body);
    return;
  }
  for (const OffloadRule& rule : victims) {
    if (check) {
      invocation.env.out << "would delete rule " << table_text(rule.family, rule.table) << " "
                         << rule.chain << " handle " << rule.handle << ": "
                         << offload_rule_statement(rule) << "\n";
    } else if (invocation.options.echo && echoed_delete(rule)) {
      invocation.env.out << offload_echo_line("delete", rule) << "\n";
    }
  }
  if (!left.empty()) {
    invocation.env.out << "left, not written by flowbulk:" << left_text() << "\n";
  }
}

}  // namespace

const char* offload_usage() {
  return "Usage: flowbulk offload add FAMILY TABLE FLOWTABLE [ proto { tcp | udp | all } ]\n"
         "                            [ counter ] [ chain NAME ]\n"
         "                            [ position { top | bottom | after HANDLE | before HANDLE } "
         "]\n"
         "       flowbulk offload delete FAMILY TABLE FLOWTABLE [ proto { tcp | udp | all } ]\n"
         "                               [ chain NAME ]\n"
         "       flowbulk offload list [ FAMILY [ TABLE ] ]\n"
         "add uses the table's base chain at hook forward, whatever its name, or the\n"
         "chain NAME; it creates \"forward\" (type filter hook forward priority 0) only\n"
         "if there is none, and never changes an existing chain's policy or rules. It\n"
         "inserts `meta l4proto P [counter] flow add @FLOWTABLE comment \"flowbulk\"` per\n"
         "protocol that no rule of the chain offloads yet, at the top by default:\n"
         "offloaded flows skip the chain's later rules. delete removes only rules with\n"
         "that comment.\n";
}

void do_offload(Invocation& invocation, Arguments& arguments) {
  dispatch_object(
      invocation, arguments,
      ObjectCommands{"offload", offload_add, offload_delete, offload_list, offload_usage});
}

}  // namespace flowbulk
