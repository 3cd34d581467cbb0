// SPDX-License-Identifier: GPL-2.0
// table, flowtable, offload: nftables objects through libnftnl batches.
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netlink.h>
#include <net/if.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ostream>
#include <set>

#include "commands.h"
#include "error.h"
#include "names.h"
#include "nft_client.h"
#include "text_table.h"

namespace flowbulk {

namespace {

NftClient open_nft(Invocation& invocation) {
  return NftClient(invocation.env.transports.open(NETLINK_NETFILTER));
}

std::string table_text(uint8_t family, const std::string& name) {
  return family_name(family) + " " + name;
}

// Turns the kernel's bare errno into what went wrong, asking the kernel what
// exists only after a failure (so the success path stays one round trip).
std::string diagnose_missing(NftClient& nft, const FlowtableRef& ref, bool flowtable_expected) {
  try {
    if (!nft.table_exists(ref.family, ref.table)) {
      return "table " + table_text(ref.family, ref.table) + " does not exist";
    }
    if (flowtable_expected && !nft.flowtable_exists(ref)) {
      return "flowtable " + ref.to_string() + " does not exist";
    }
  } catch (const Error&) {
    // The diagnosis is a courtesy; report the original error instead.
  }
  return {};
}

int32_t parse_priority(const std::string& word) {
  if (word == "filter") {
    return 0;  // nft's name for priority 0 of a flowtable
  }
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(word.c_str(), &end, 10);
  if (!is_plain_number(word, true, false) || end == word.c_str() || *end != '\0') {
    throw UsageError("invalid priority \"" + word + "\": an integer (or \"filter\")");
  }
  if (errno == ERANGE || value < INT32_MIN || value > INT32_MAX) {
    throw UsageError("priority " + word + " is out of range (" + std::to_string(INT32_MIN) +
                     " .. " + std::to_string(INT32_MAX) + ")");
  }
  return static_cast<int32_t>(value);
}

std::vector<std::string> parse_devices(const std::string& list, Environment& env) {
  std::vector<std::string> devices;
  std::set<std::string> seen;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    std::string device = list.substr(start, comma == std::string::npos ? comma : comma - start);
    if (device.empty()) {
      // `devices eth0, eth1`: the shell made two words of it.
      throw UsageError("empty device name in \"" + list +
                       "\"; write the list as one word without spaces: DEV,DEV");
    }
    if (device.size() >= IFNAMSIZ) {
      throw UsageError("device name \"" + device + "\" is longer than " +
                       std::to_string(IFNAMSIZ - 1) + " characters");
    }
    if (!seen.insert(device).second) {
      throw UsageError("device \"" + device + "\" is listed twice");
    }
    if (!env.device_exists(device)) {
      throw UsageError("device \"" + device + "\" does not exist");
    }
    devices.push_back(device);
    if (comma == std::string::npos) {
      break;
    }
    start = comma + 1;
  }
  return devices;
}

std::optional<uint8_t> optional_family(Arguments& arguments) {
  if (arguments.empty()) {
    return std::nullopt;
  }
  return parse_family(arguments.take("FAMILY"));
}

// ---- table ------------------------------------------------------------------

// nft's names for NFT_TABLE_F_* (dormant, owner, persist); unknown bits as
// numbers, like unknown reasons.
std::vector<std::string> table_flag_names(uint32_t flags) {
  static constexpr std::array<const char*, 3> kNames = {"dormant", "owner", "persist"};
  std::vector<std::string> names;
  for (uint32_t bit = 0; bit < 32; ++bit) {
    if ((flags & (1U << bit)) != 0) {
      names.emplace_back(bit < kNames.size() ? kNames[bit] : std::to_string(1U << bit));
    }
  }
  return names;
}

void table_add(Invocation& invocation, Arguments& arguments) {
  const uint8_t family = parse_family(arguments.take("FAMILY"));
  const std::string name = arguments.take("NAME");
  validate_name(name, "table");
  arguments.expect_end();
  try {
    open_nft(invocation).add_table(family, name);
  } catch (const KernelError& error) {
    fail_with_context(error, "cannot add table " + table_text(family, name),
                      error.sys_errno() == EEXIST ? "it already exists" : "");
  } catch (const Error& error) {
    fail_with_context(error, "cannot add table " + table_text(family, name));
  }
  emit_done(invocation);
}

void table_delete(Invocation& invocation, Arguments& arguments) {
  const uint8_t family = parse_family(arguments.take("FAMILY"));
  const std::string name = arguments.take("NAME");
  validate_name(name, "table");
  arguments.expect_end();
  try {
    NftClient nft = open_nft(invocation);
    // The table's flowtables are noted before the delete, so that their
    // attachments can be dropped after it: the module would otherwise keep
    // hooks for flowtables that no longer exist.
    std::vector<FlowtableRef> attached;
    for (const auto& flowtable : nft.list_flowtables(family)) {
      if (name == text_or_empty(nftnl_flowtable_get_str(flowtable.get(), NFTNL_FLOWTABLE_TABLE))) {
        attached.push_back(FlowtableRef{.family = family,
                                        .table = name,
                                        .flowtable = text_or_empty(nftnl_flowtable_get_str(
                                            flowtable.get(), NFTNL_FLOWTABLE_NAME))});
      }
    }
    nft.delete_table(family, name);
    for (const FlowtableRef& ref : attached) {
      detach_quietly(invocation, ref);
    }
  } catch (const KernelError& error) {
    fail_with_context(error, "cannot delete table " + table_text(family, name),
                      error.sys_errno() == ENOENT ? "it does not exist" : "");
  } catch (const Error& error) {
    fail_with_context(error, "cannot delete table " + table_text(family, name));
  }
  emit_done(invocation);
}

void table_list(Invocation& invocation, Arguments& arguments) {
  const std::optional<uint8_t> family = optional_family(arguments);
  arguments.expect_end();
  std::vector<NftnlTablePtr> tables;
  try {
    tables = open_nft(invocation).list_tables(family);
  } catch (const Error& error) {
    fail_with_context(error, "cannot list tables");
  }
  if (invocation.options.json) {
    Json list = Json::array();
    for (const auto& table : tables) {
      list.push_back(Json{
          {"family", family_name(nftnl_table_get_u32(table.get(), NFTNL_TABLE_FAMILY))},
          {"name", text_or_empty(nftnl_table_get_str(table.get(), NFTNL_TABLE_NAME))},
          {"handle", nftnl_table_get_u64(table.get(), NFTNL_TABLE_HANDLE)},
          {"use", nftnl_table_get_u32(table.get(), NFTNL_TABLE_USE)},
          {"flags", table_flag_names(nftnl_table_get_u32(table.get(), NFTNL_TABLE_FLAGS))},
      });
    }
    emit_json(invocation, Json{{"tables", list}});
    return;
  }
  TextTable text({{"FAMILY"},
                  {"NAME"},
                  {"HANDLE", TextTable::Align::kRight},
                  {"OBJECTS", TextTable::Align::kRight}});
  for (const auto& table : tables) {
    text.add_row({family_name(nftnl_table_get_u32(table.get(), NFTNL_TABLE_FAMILY)),
                  text_or_empty(nftnl_table_get_str(table.get(), NFTNL_TABLE_NAME)),
                  std::to_string(nftnl_table_get_u64(table.get(), NFTNL_TABLE_HANDLE)),
                  std::to_string(nftnl_table_get_u32(table.get(), NFTNL_TABLE_USE))});
  }
  if (!text.empty()) {
    text.print(invocation.env.out);
  }
}

// ---- flowtable ------------------------------------------------------------

void flowtable_add(Invocation& invocation, Arguments& arguments) {
  FlowtableSpec spec;
  spec.ref = parse_flowtable_ref(arguments);
  std::optional<std::string> hook;
  std::optional<int32_t> priority;
  std::optional<std::vector<std::string>> devices;
  bool counter = false;
  while (!arguments.empty()) {
    const std::string keyword =
        match_keyword(arguments.take("keyword"), {"hook", "priority", "devices", "counter"},
                      "flowtable option", "flowtable");
    auto once = [&keyword](bool already) {
      if (already) {
        throw UsageError("\"" + keyword + "\" given twice");
      }
    };
    if (keyword == "hook") {
      once(hook.has_value());
      hook = match_keyword(arguments.take("HOOK (ingress or early_ingress)"),
                           {"ingress", "early_ingress"}, "hook", "flowtable");
    } else if (keyword == "priority") {
      once(priority.has_value());
      priority = parse_priority(arguments.take("PRIORITY"));
    } else if (keyword == "devices") {
      once(devices.has_value());
      devices = parse_devices(arguments.take("DEV[,DEV...]"), invocation.env);
    } else {
      once(counter);
      counter = true;
    }
  }
  if (!hook) {
    throw UsageError(
        "missing \"hook ingress\" or \"hook early_ingress\"; try \"flowbulk "
        "flowtable help\"");
  }
  if (!devices) {
    throw UsageError("missing \"devices DEV[,DEV...]\"; try \"flowbulk flowtable help\"");
  }
  const bool early = *hook == "early_ingress";
  spec.priority = priority.value_or(0);
  spec.devices = std::move(*devices);
  spec.counter = counter;

  const std::string context = "cannot add flowtable " + spec.ref.to_string();
  std::optional<NfbClient> module;
  if (early) {
    // Before creating anything: without the module, early_ingress cannot be
    // honoured, and a plain ingress flowtable left behind would be a
    // half-applied command.
    try {
      module.emplace(invocation.env.transports.open(NETLINK_GENERIC));
      module->family_id();
    } catch (const Error& error) {
      fail_with_context(error, context + " with hook early_ingress");
    }
  }
  NftClient nft = open_nft(invocation);
  try {
    nft.add_flowtable(spec);
  } catch (const KernelError& error) {
    std::string hint;
    if (error.sys_errno() == ENOENT) {
      hint = diagnose_missing(nft, spec.ref, false);
    } else if (error.sys_errno() == EEXIST) {
      hint = nft.flowtable_exists(spec.ref) ? "it already exists"
                                            : "a device is already in another flowtable of table " +
                                                  table_text(spec.ref.family, spec.ref.table);
    }
    fail_with_context(error, context, hint);
  } catch (const Error& error) {
    fail_with_context(error, context);
  }
  if (early) {
    try {
      module->attach(spec.ref);
    } catch (const Error& error) {
      // Undo the flowtable so the command has no effect at all.
      try {
        nft.delete_flowtable(spec.ref);
      } catch (const Error&) {
        fail_with_context(error, context +
                                     " with hook early_ingress: attach failed and the "
                                     "flowtable created at ingress could not be removed");
      }
      fail_with_context(error, context +
                                   " with hook early_ingress: attach failed, flowtable "
                                   "removed again");
    }
  }
  emit_done(invocation);
}

void flowtable_delete(Invocation& invocation, Arguments& arguments) {
  const FlowtableRef ref = parse_flowtable_ref(arguments);
  arguments.expect_end();
  NftClient nft = open_nft(invocation);
  try {
    nft.delete_flowtable(ref);
  } catch (const KernelError& error) {
    std::string hint;
    if (error.sys_errno() == ENOENT) {
      hint = diagnose_missing(nft, ref, true);
    } else if (error.sys_errno() == EBUSY) {
      hint = "a rule still uses it (flow add @" + ref.flowtable + ")";
    }
    fail_with_context(error, "cannot delete flowtable " + ref.to_string(), hint);
  } catch (const Error& error) {
    fail_with_context(error, "cannot delete flowtable " + ref.to_string());
  }
  detach_quietly(invocation, ref);
  emit_done(invocation);
}

void flowtable_list(Invocation& invocation, Arguments& arguments) {
  const std::optional<uint8_t> family = optional_family(arguments);
  std::optional<std::string> table;
  if (!arguments.empty()) {
    table = arguments.take("TABLE");
  }
  arguments.expect_end();
  std::vector<NftnlFlowtablePtr> flowtables;
  try {
    flowtables = open_nft(invocation).list_flowtables(family);
  } catch (const Error& error) {
    fail_with_context(error, "cannot list flowtables");
  }
  std::erase_if(flowtables, [&table](const NftnlFlowtablePtr& flowtable) {
    return table &&
           *table != text_or_empty(nftnl_flowtable_get_str(flowtable.get(), NFTNL_FLOWTABLE_TABLE));
  });
  auto devices_of = [](const nftnl_flowtable* flowtable) {
    std::vector<std::string> devices;
    if (nftnl_flowtable_is_set(flowtable, NFTNL_FLOWTABLE_DEVICES)) {
      const char* const* names = nftnl_flowtable_get_array(flowtable, NFTNL_FLOWTABLE_DEVICES);
      for (size_t i = 0; names != nullptr && names[i] != nullptr; ++i) {
        devices.emplace_back(names[i]);
      }
    }
    return devices;
  };
  auto flags_of = [](const nftnl_flowtable* flowtable) {
    std::vector<std::string> flags;
    const uint32_t bits = nftnl_flowtable_is_set(flowtable, NFTNL_FLOWTABLE_FLAGS)
                              ? nftnl_flowtable_get_u32(flowtable, NFTNL_FLOWTABLE_FLAGS)
                              : 0;
    if ((bits & NFT_FLOWTABLE_HW_OFFLOAD) != 0) {
      flags.emplace_back("offload");
    }
    if ((bits & NFT_FLOWTABLE_COUNTER) != 0) {
      flags.emplace_back("counter");
    }
    return flags;
  };
  if (invocation.options.json) {
    Json list = Json::array();
    for (const auto& owned : flowtables) {
      const nftnl_flowtable* flowtable = owned.get();
      list.push_back(Json{
          {"family", family_name(nftnl_flowtable_get_u32(flowtable, NFTNL_FLOWTABLE_FAMILY))},
          {"table", text_or_empty(nftnl_flowtable_get_str(flowtable, NFTNL_FLOWTABLE_TABLE))},
          {"name", text_or_empty(nftnl_flowtable_get_str(flowtable, NFTNL_FLOWTABLE_NAME))},
          {"handle", nftnl_flowtable_get_u64(flowtable, NFTNL_FLOWTABLE_HANDLE)},
          {"hook", netdev_hook_name(nftnl_flowtable_get_u32(flowtable, NFTNL_FLOWTABLE_HOOKNUM))},
          {"prio", nftnl_flowtable_get_s32(flowtable, NFTNL_FLOWTABLE_PRIO)},
          {"devices", devices_of(flowtable)},
          {"flags", flags_of(flowtable)},
          {"use", nftnl_flowtable_get_u32(flowtable, NFTNL_FLOWTABLE_USE)},
      });
    }
    emit_json(invocation, Json{{"flowtables", list}});
    return;
  }
  TextTable text({{"FAMILY"},
                  {"TABLE"},
                  {"NAME"},
                  {"HOOK"},
                  {"PRIORITY", TextTable::Align::kRight},
                  {"DEVICES"},
                  {"FLAGS"},
                  {"HANDLE", TextTable::Align::kRight}});
  auto join = [](const std::vector<std::string>& words) {
    std::string joined;
    for (const std::string& word : words) {
      joined += (joined.empty() ? "" : ",") + word;
    }
    return joined.empty() ? std::string("-") : joined;
  };
  for (const auto& owned : flowtables) {
    const nftnl_flowtable* flowtable = owned.get();
    text.add_row({family_name(nftnl_flowtable_get_u32(flowtable, NFTNL_FLOWTABLE_FAMILY)),
                  text_or_empty(nftnl_flowtable_get_str(flowtable, NFTNL_FLOWTABLE_TABLE)),
                  text_or_empty(nftnl_flowtable_get_str(flowtable, NFTNL_FLOWTABLE_NAME)),
                  netdev_hook_name(nftnl_flowtable_get_u32(flowtable, NFTNL_FLOWTABLE_HOOKNUM)),
                  std::to_string(nftnl_flowtable_get_s32(flowtable, NFTNL_FLOWTABLE_PRIO)),
                  join(devices_of(flowtable)), join(flags_of(flowtable)),
                  std::to_string(nftnl_flowtable_get_u64(flowtable, NFTNL_FLOWTABLE_HANDLE))});
  }
  if (!text.empty()) {
    text.print(invocation.env.out);
  }
}

// ---- offload --------------------------------------------------------------

std::string protocol_name(uint8_t protocol) {
  return protocol == IPPROTO_TCP   ? "tcp"
         : protocol == IPPROTO_UDP ? "udp"
                                   : std::to_string(protocol);
}

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

Json offload_rule_json(const OffloadRule& rule) {
  return Json{{"family", family_name(rule.family)},
              {"table", rule.table},
              {"chain", rule.chain},
              {"handle", rule.handle},
              {"flowtable", rule.flowtable},
              {"proto", protocol_name(rule.protocol)},
              {"counter", rule.counter}};
}

std::string offload_rule_text(const OffloadRule& rule) {
  return "meta l4proto " + protocol_name(rule.protocol) + (rule.counter ? " counter" : "") +
         " flow add @" + rule.flowtable + " (handle " + std::to_string(rule.handle) + ")";
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

void offload_add(Invocation& invocation, Arguments& arguments) {
  const OffloadSpec spec = parse_offload_spec(arguments, true);
  NftClient nft = open_nft(invocation);
  const std::string context = "cannot add offload rule for flowtable " +
                              spec.flowtable.to_string() + " in chain " + spec.chain;
  OffloadResult result;
  try {
    try {
      result = nft.add_offload(spec);
    } catch (const KernelError& error) {
      // The chain appeared between our look and our exclusive create: look
      // again (now it exists and is left as it is).
      if (error.sys_errno() != EEXIST) {
        throw;
      }
      result = nft.add_offload(spec);
    }
  } catch (const KernelError& error) {
    std::string hint;
    if (error.sys_errno() == ENOENT) {
      hint = diagnose_missing(nft, spec.flowtable, true);
      if (hint.empty() && spec.handle != 0) {
        hint = "chain " + spec.chain + " has no rule with handle " + std::to_string(spec.handle);
      }
    } else if (error.sys_errno() == EEXIST || error.sys_errno() == EBUSY ||
               error.sys_errno() == EOPNOTSUPP) {
      hint = "chain " + spec.chain + " exists with another type, hook or priority";
    }
    fail_with_context(error, context, hint);
  } catch (const Error& error) {
    std::string hint;
    if (error.sys_errno() == ENOENT && spec.handle == 0) {
      hint = diagnose_missing(nft, spec.flowtable, true);
    }
    fail_with_context(error, context, hint);
  }
  const bool changed = !result.added.empty() || result.chain_created;
  if (invocation.options.json) {
    Json added = Json::array();
    for (const OffloadRule& rule : result.added) {
      added.push_back(offload_rule_json(rule));
    }
    Json present = Json::array();
    for (const OffloadRule& rule : result.present) {
      present.push_back(offload_rule_json(rule));
    }
    emit_json(invocation, Json{{"changed", changed},
                               {"chain_created", result.chain_created},
                               {"added", added},
                               {"present", present}});
    return;
  }
  for (const OffloadRule& rule : result.present) {
    invocation.env.out << "already in chain " << table_text(rule.family, rule.table) << " "
                       << rule.chain << ": " << offload_rule_text(rule) << "\n";
  }
  if (!changed) {
    invocation.env.out << "nothing changed\n";
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
    rules = open_nft(invocation).list_offload_rules(family, table);
  } catch (const Error& error) {
    fail_with_context(error, "cannot list offload rules");
  }
  if (invocation.options.json) {
    Json list = Json::array();
    for (const OffloadRule& rule : rules) {
      list.push_back(offload_rule_json(rule));
    }
    emit_json(invocation, Json{{"offloads", list}});
    return;
  }
  TextTable text({{"FAMILY"},
                  {"TABLE"},
                  {"CHAIN"},
                  {"PROTO"},
                  {"FLOWTABLE"},
                  {"COUNTER"},
                  {"HANDLE", TextTable::Align::kRight}});
  for (const OffloadRule& rule : rules) {
    text.add_row({family_name(rule.family), rule.table, rule.chain, protocol_name(rule.protocol),
                  rule.flowtable, rule.counter ? "yes" : "no", std::to_string(rule.handle)});
  }
  if (!text.empty()) {
    text.print(invocation.env.out);
  }
}

void offload_delete(Invocation& invocation, Arguments& arguments) {
  const OffloadSpec spec = parse_offload_spec(arguments, false);
  const FlowtableRef& ref = spec.flowtable;
  const std::string context = "cannot delete offload rules of flowtable " + ref.to_string();
  NftClient nft = open_nft(invocation);
  std::vector<OffloadRule> victims;
  try {
    for (OffloadRule& rule : nft.list_offload_rules(ref.family, ref.table, spec.chain)) {
      const bool protocol_matches =
          spec.protocol == OffloadProtocol::kAll ||
          rule.protocol == (spec.protocol == OffloadProtocol::kTcp ? IPPROTO_TCP : IPPROTO_UDP);
      if (rule.flowtable == ref.flowtable && protocol_matches) {
        victims.push_back(std::move(rule));
      }
    }
    if (victims.empty()) {
      std::string hint = diagnose_missing(nft, ref, false);
      throw Error(hint.empty() ? "chain " + spec.chain + " has no offload rule for it" : hint,
                  ENOENT);
    }
    nft.delete_rules(victims);
  } catch (const Error& error) {
    fail_with_context(error, context);
  }
  if (invocation.options.json) {
    Json list = Json::array();
    for (const OffloadRule& rule : victims) {
      list.push_back(offload_rule_json(rule));
    }
    emit_json(invocation, Json{{"deleted", list}});
  }
}

}  // namespace

const char* table_usage() {
  return "Usage: flowbulk table add FAMILY NAME\n"
         "       flowbulk table delete FAMILY NAME\n"
         "       flowbulk table list [ FAMILY ]\n"
         "FAMILY := { ip | ip6 | inet }\n";
}

const char* flowtable_usage() {
  return "Usage: flowbulk flowtable add FAMILY TABLE NAME hook { ingress | early_ingress }\n"
         "                              [ priority N ] devices DEV[,DEV...] [ counter ]\n"
         "       flowbulk flowtable delete FAMILY TABLE NAME\n"
         "       flowbulk flowtable list [ FAMILY [ TABLE ] ]\n"
         "FAMILY := { ip | ip6 | inet }\n"
         "hook early_ingress creates the flowtable at ingress and attaches nf_flow_bulk to it.\n";
}

const char* offload_usage() {
  return "Usage: flowbulk offload add FAMILY TABLE FLOWTABLE [ proto { tcp | udp | all } ]\n"
         "                            [ counter ] [ chain NAME ]\n"
         "                            [ position { top | bottom | after HANDLE | before HANDLE } "
         "]\n"
         "       flowbulk offload delete FAMILY TABLE FLOWTABLE [ proto { tcp | udp | all } ]\n"
         "                               [ chain NAME ]\n"
         "       flowbulk offload list [ FAMILY [ TABLE ] ]\n"
         "add creates the chain NAME (default \"forward\": type filter hook forward priority\n"
         "0) only if it does not exist, and never changes an existing chain's policy or\n"
         "rules. It inserts `meta l4proto P [counter] flow add @FLOWTABLE` per protocol\n"
         "that has none yet, at the top by default: offloaded flows skip the chain's\n"
         "later rules.\n";
}

void do_table(Invocation& invocation, Arguments& arguments) {
  std::string command = match_keyword(arguments.take("COMMAND"), {"add", "delete", "list", "help"},
                                      "table command", "table");
  if (!arguments.empty() && arguments.peek() == "help") {
    command = "help";  // `flowbulk OBJECT COMMAND help`
  }
  if (command == "add") {
    table_add(invocation, arguments);
  } else if (command == "delete") {
    table_delete(invocation, arguments);
  } else if (command == "list") {
    table_list(invocation, arguments);
  } else {
    emit_usage(invocation, table_usage());
  }
}

void do_flowtable(Invocation& invocation, Arguments& arguments) {
  std::string command = match_keyword(arguments.take("COMMAND"), {"add", "delete", "list", "help"},
                                      "flowtable command", "flowtable");
  if (!arguments.empty() && arguments.peek() == "help") {
    command = "help";  // `flowbulk OBJECT COMMAND help`
  }
  if (command == "add") {
    flowtable_add(invocation, arguments);
  } else if (command == "delete") {
    flowtable_delete(invocation, arguments);
  } else if (command == "list") {
    flowtable_list(invocation, arguments);
  } else {
    emit_usage(invocation, flowtable_usage());
  }
}

void do_offload(Invocation& invocation, Arguments& arguments) {
  std::string command = match_keyword(arguments.take("COMMAND"), {"add", "delete", "list", "help"},
                                      "offload command", "offload");
  if (!arguments.empty() && arguments.peek() == "help") {
    command = "help";  // `flowbulk OBJECT COMMAND help`
  }
  if (command == "add") {
    offload_add(invocation, arguments);
  } else if (command == "delete") {
    offload_delete(invocation, arguments);
  } else if (command == "list") {
    offload_list(invocation, arguments);
  } else {
    emit_usage(invocation, offload_usage());
  }
}

}  // namespace flowbulk
