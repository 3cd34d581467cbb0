// SPDX-License-Identifier: GPL-2.0
// table, flowtable, offload: nftables objects. Changes go through
// libnftables, as nft commands, so that nft's own parser, evaluator and
// messages apply (names, priority expressions such as `filter + 10`, "did
// you mean"); offload add is the exception: its check-then-write must name
// the ruleset generation it read, which libnftables cannot carry, so it
// writes through libnftnl (NftClient::commit). Reading stays on libnftnl
// dumps (nft_client.h): one request per object type, with the kernel's
// attributes that nft's listings leave out (use counts, flag bits), and no
// ruleset cache to build.
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netlink.h>
#include <net/if.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <ostream>
#include <set>

#include "commands.h"
#include "deferred_signals.h"
#include "error.h"
#include "names.h"
#include "nfb_client.h"
#include "nft_client.h"
#include "offload_plan.h"
#include "text_table.h"

namespace flowbulk {

namespace {

NftClient open_nft(Invocation& invocation) {
  return NftClient(invocation.env.transports.open(NETLINK_NETFILTER));
}

std::string table_text(uint8_t family, const std::string& name) {
  return family_name(family) + " " + name;
}

// nft JSON names an object by JSON strings: whatever bytes the kernel
// allows in a name (spaces, '@', a leading digit) reach it as they are, and
// nothing in a name can be read as nft syntax.
Json nft_object(uint8_t family, const std::string& table) {
  return Json{{"family", family_name(family)}, {"table", table}};
}

// libnftables' message after ours. JSON commands have no source line, so
// their "internal:0:0-0: " location is dropped; for nft syntax the command
// and nft's carets under the culprit follow on the next lines.
[[noreturn]] void fail_nft(const std::string& context, const std::string& errors) {
  std::string text = errors;
  for (const std::string noise : {"internal:0:0-0: ", "Error: "}) {
    for (size_t at = text.find(noise); at != std::string::npos; at = text.find(noise, at)) {
      text.erase(at, noise.size());
    }
  }
  while (!text.empty() && text.back() == '\n') {
    text.pop_back();
  }
  throw Error(context + ": " + (text.empty() ? "libnftables failed without a message" : text));
}

// Runs nft commands (nft syntax, or an nft JSON document) through
// libnftables as one transaction; returns what libnftables echoed.
std::string run_nft(Invocation& invocation, const std::string& commands,
                    const std::string& context) {
  RulesetEngine::Result result = invocation.env.make_ruleset_engine()->run_commands(commands, true);
  if (!result.ok) {
    fail_nft(context, result.errors);
  }
  return result.output;
}

// {"nftables": [commands]} as text.
std::string nft_document(const Json& commands, const std::string& context) {
  try {
    // strict: libnftables reads JSON as UTF-8 (jansson), so a name that is
    // not cannot be written as nft JSON at all.
    return Json{{"nftables", commands}}.dump(-1, ' ', false, Json::error_handler_t::strict);
  } catch (const Json::type_error&) {
    throw UsageError(context + ": a name is not valid UTF-8, which nft commands cannot carry");
  }
}

std::string run_nft(Invocation& invocation, const Json& commands, const std::string& context) {
  return run_nft(invocation, nft_document(commands, context), context);
}

// {VERB: {KIND: object}}
Json nft_command(const char* verb, const char* kind, Json object) {
  Json inner = Json::object();
  inner[kind] = std::move(object);
  Json command = Json::object();
  command[verb] = std::move(inner);
  return command;
}

// nft's syntax (1.0.6) has no quoting for table and flowtable names: a name
// goes into it only when it is one nft token (its scanner's `string`), so
// that nothing in it can end the name. Other names go as JSON.
bool nft_syntax_name(std::string_view name) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (name.empty() || !(letter(name.front()) || name.front() == '_' || name.front() == '.')) {
    return false;
  }
  return std::all_of(name.begin() + 1, name.end(), [&](char c) {
    return letter(c) || digit(c) || c == '/' || c == '-' || c == '_' || c == '.';
  });
}

// The priority when it is a plain number (what nft's JSON takes).
std::optional<int32_t> priority_number(const std::string& text) {
  int32_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end) {
    return std::nullopt;
  }
  return value;
}

// The words after `priority` up to the next flowtable option: nft's
// priority, as nft takes it (`filter`, `filter + 10`, `-5`). libnftables
// parses and evaluates it; here it is only kept from leaving its clause.
std::string take_priority(Arguments& arguments) {
  std::string text = arguments.take("PRIORITY");
  while (!arguments.empty()) {
    const std::string& next = arguments.peek();
    // The next option keyword (or a prefix of one) ends the priority.
    static constexpr std::array<std::string_view, 4> kOptions = {"hook", "priority", "devices",
                                                                 "counter"};
    const bool option =
        std::any_of(kOptions.begin(), kOptions.end(),
                    [&next](std::string_view keyword) { return abbreviates(next, keyword); });
    if (option) {
      break;
    }
    text += " " + arguments.take("PRIORITY");
  }
  const bool harmless = std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '+' || c == '-' || c == ' ';
  });
  if (!harmless) {
    throw UsageError("invalid priority \"" + text +
                     "\": a number, or a priority name with an offset as nft writes it "
                     "(filter, filter + 10)");
  }
  // nft 1.0.6 silently wraps a number beyond 32 bits (2147483648 becomes
  // -2147483648): such a number is refused here instead.
  if (!priority_number(text)) {
    for (size_t at = 0; at < text.size();) {
      const size_t digits = text.find_first_of("0123456789", at);
      if (digits == std::string::npos) {
        break;
      }
      size_t end = text.find_first_not_of("0123456789", digits);
      end = end == std::string::npos ? text.size() : end;
      if (!priority_number(text.substr(digits, end - digits))) {
        throw UsageError("priority " + text + " is out of range (-2147483648 .. 2147483647)");
      }
      at = end;
    }
  }
  return text;
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
  // create, not add: an existing table is an error here, so a typo cannot
  // silently reuse someone else's table.
  Json table = Json::object();
  table["family"] = family_name(family);
  table["name"] = name;
  run_nft(invocation, Json::array({nft_command("create", "table", table)}),
          "cannot add table " + table_text(family, name));
  emit_done(invocation);
}

void table_delete(Invocation& invocation, Arguments& arguments) {
  const uint8_t family = parse_family(arguments.take("FAMILY"));
  const std::string name = arguments.take("NAME");
  validate_name(name, "table");
  arguments.expect_end();
  const std::string context = "cannot delete table " + table_text(family, name);
  // The table's flowtables are noted before the delete, so that their
  // attachments can be dropped after it: the module would otherwise keep
  // hooks for flowtables that no longer exist.
  std::vector<FlowtableRef> attached;
  try {
    for (const auto& flowtable : open_nft(invocation).list_flowtables(family)) {
      if (name == text_or_empty(nftnl_flowtable_get_str(flowtable.get(), NFTNL_FLOWTABLE_TABLE))) {
        attached.push_back(FlowtableRef{.family = family,
                                        .table = name,
                                        .flowtable = text_or_empty(nftnl_flowtable_get_str(
                                            flowtable.get(), NFTNL_FLOWTABLE_NAME))});
      }
    }
  } catch (const Error& error) {
    fail_with_context(error, context);
  }
  Json table = Json::object();
  table["family"] = family_name(family);
  table["name"] = name;
  run_nft(invocation, Json::array({nft_command("delete", "table", table)}), context);
  for (const FlowtableRef& ref : attached) {
    detach_quietly(invocation, ref);
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

// The command that creates the flowtable (exclusively: an existing one is
// an error). nft 1.0.6 has no one form for everything: its syntax takes
// priority expressions and `counter` but only names that are nft tokens
// and not nft keywords (`flow`, `table`, `counter`, `ip`: a syntax error
// about a command the user never typed); its JSON takes any name but only
// a number as priority, and drops flags. So JSON whenever it can say it
// all, nft syntax only for a priority expression or counter.
std::string flowtable_create_command(const FlowtableSpec& spec, const std::string& priority,
                                     const std::string& context) {
  const std::optional<int32_t> number = priority_number(priority);
  if ((!number || spec.counter) && nft_syntax_name(spec.ref.table) &&
      nft_syntax_name(spec.ref.flowtable)) {
    std::string devices;
    for (const std::string& device : spec.devices) {
      if (device.find('"') != std::string::npos) {
        std::string message = context;
        message += ": nft cannot quote the device name ";
        message += device;
        throw UsageError(message);
      }
      devices += devices.empty() ? "\"" : ", \"";
      devices += device;
      devices += '"';
    }
    return "create flowtable " + family_name(spec.ref.family) + " " + spec.ref.table + " " +
           spec.ref.flowtable + " { hook ingress priority " + priority + "; devices = { " +
           devices + " }; " + (spec.counter ? "counter; " : "") + "}";
  }
  if (!number || spec.counter) {
    throw UsageError(context +
                     ": nft can write this table or flowtable name only as JSON, which takes "
                     "neither a priority expression nor counter for a flowtable; give the "
                     "priority as a number (filter is 0) and leave out counter");
  }
  Json flowtable = nft_object(spec.ref.family, spec.ref.table);
  flowtable["name"] = spec.ref.flowtable;
  flowtable["hook"] = "ingress";
  flowtable["prio"] = *number;
  flowtable["dev"] = spec.devices;
  return nft_document(Json::array({nft_command("create", "flowtable", flowtable)}), context);
}

Json flowtable_delete_commands(const FlowtableRef& ref) {
  Json flowtable = nft_object(ref.family, ref.table);
  flowtable["name"] = ref.flowtable;
  return Json::array({nft_command("delete", "flowtable", flowtable)});
}

void flowtable_add(Invocation& invocation, Arguments& arguments) {
  FlowtableSpec spec;
  spec.ref = parse_flowtable_ref(arguments);
  std::optional<std::string> hook;
  std::optional<std::string> priority;
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
      priority = take_priority(arguments);
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
  spec.devices = std::move(*devices);
  spec.counter = counter;

  const std::string context = "cannot add flowtable " + spec.ref.to_string();
  const std::string command = flowtable_create_command(spec, priority.value_or("0"), context);
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
  // From the create to the attach, or to the removal after a failed one:
  // an interrupt here would leave a plain ingress flowtable behind.
  std::optional<DeferredSignals> hold;
  if (early) {
    hold.emplace();
  }
  const RulesetEngine::Result created =
      invocation.env.make_ruleset_engine()->run_commands(command, true);
  if (!created.ok) {
    std::string errors = created.errors;
    if (command.front() != '{' && errors.find("syntax error") != std::string::npos) {
      // The names passed nft_syntax_name(); nft rejects them only as
      // keywords, which it does not list.
      errors +=
          "\nnft's syntax cannot write a table or flowtable name that is one of its keywords; "
          "with a numeric priority (filter is 0) and without counter flowbulk writes the names "
          "as JSON, which can";
    }
    fail_nft(context, errors);
  }
  if (early) {
    try {
      try {
        module->attach(spec.ref);
      } catch (const KernelError& error) {
        // Already attached is the state asked for, as with -f: attachments
        // outlive their table and follow the flowtable when it comes back
        // (a table deleted and made again by a boot script run twice).
        if (error.sys_errno() != EEXIST) {
          throw;
        }
      }
    } catch (const Error& error) {
      // Undo the flowtable so the command has no effect at all. By name:
      // libnftables 1.0.6 echoes no flowtable handle, and the name is ours
      // since the create was exclusive.
      RulesetEngine::Result undone = invocation.env.make_ruleset_engine()->run_commands(
          nft_document(flowtable_delete_commands(spec.ref), context), true);
      if (!undone.ok) {
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
  run_nft(invocation, flowtable_delete_commands(ref), "cannot delete flowtable " + ref.to_string());
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

// What an offload rule offloads: "tcp", "udp" (a number for another
// protocol), "tcp,udp" for a set of them, "all" when it matches nothing
// before `flow add`, "other" when it matches something else.
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

Json offload_rule_json(const OffloadRule& rule) {
  return Json{{"family", family_name(rule.family)},
              {"table", rule.table},
              {"chain", rule.chain},
              {"handle", rule.handle},
              {"flowtable", rule.flowtable},
              {"proto", offload_proto_text(rule)},
              {"counter", rule.counter}};
}

// The rule as nft writes it, as far as flowbulk reads it.
std::string offload_rule_text(const OffloadRule& rule) {
  std::string match;
  if (rule.match == OffloadMatch::kOther) {
    match = "... ";
  } else if (rule.match == OffloadMatch::kProtocols && rule.protocols.size() == 1) {
    match = "meta l4proto " + protocol_name(rule.protocols[0]) + " ";
  } else if (rule.match == OffloadMatch::kProtocols) {
    std::string names;
    for (uint8_t protocol : rule.protocols) {
      names += (names.empty() ? "" : ", ") + protocol_name(protocol);
    }
    match = "meta l4proto { " + names + " } ";
  }
  return match + (rule.counter ? "counter " : "") + "flow add @" + rule.flowtable + " (handle " +
         std::to_string(rule.handle) + ")";
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
  if (!adding && !chain_given) {
    spec.chain.clear();  // delete: every chain of the table
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

// What offload add decides on, read from the kernel.
OffloadView read_offload_view(NftClient& nft, const OffloadSpec& spec) {
  const FlowtableRef& ref = spec.flowtable;
  OffloadView view;
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
  view.chain = nft.find_chain(ref.family, ref.table, spec.chain);
  if (view.chain) {
    if (spec.handle != 0) {
      view.handles = nft.rule_handles(ref.family, ref.table, spec.chain);
    }
    view.rules = nft.list_offload_rules(ref.family, ref.table, spec.chain);
  }
  return view;
}

// Another writer committing between our reads and our write makes the
// kernel refuse the write (ERESTART); we read again, this many times.
constexpr int kGenerationAttempts = 10;

// Never touches an existing chain: it is created (exclusively, with no
// policy: the kernel's default accept) only when it does not exist. A
// protocol that a rule of the chain already offloads to the flowtable
// (`meta l4proto tcp`, `meta l4proto { tcp, udp }`, a bare `flow add`) is
// left to that rule, not added again. The reads and the write are one
// generation of the ruleset: two offload add runs at once add each rule
// once, and a rule another writer puts next to the handle we place ours by
// cannot come between.
OffloadResult add_offload(NftClient& nft, const OffloadSpec& asked, const std::string& context) {
  for (int attempt = 1;; ++attempt) {
    try {
      const uint32_t generation = nft.generation();
      const OffloadPlan plan = plan_offload(asked, read_offload_view(nft, asked));
      OffloadResult result{.chain_created = false, .added = {}, .present = plan.present};
      if (plan.empty()) {
        if (nft.generation() != generation && attempt < kGenerationAttempts) {
          continue;  // the reads may straddle a change: read again
        }
        return result;  // nothing to change, and nothing sent
      }
      const OffloadSpec& spec = plan.spec;
      NftWrite write;
      if (plan.create_chain) {
        write.chains.push_back(forward_chain(spec.flowtable, spec.chain));
      }
      for (uint8_t protocol : plan.send) {
        write.rules.push_back({.rule = offload_rule(spec, protocol), .append = plan.append});
      }
      const std::vector<uint64_t> handles = nft.commit(write, generation);
      result.chain_created = plan.create_chain;
      for (size_t i = 0; i < plan.send.size(); ++i) {
        result.added.push_back(OffloadRule{.family = spec.flowtable.family,
                                           .table = spec.flowtable.table,
                                           .chain = spec.chain,
                                           .handle = i < handles.size() ? handles[i] : 0,
                                           .flowtable = spec.flowtable.flowtable,
                                           .match = OffloadMatch::kProtocols,
                                           .protocols = {plan.send[i]},
                                           .counter = spec.counter});
      }
      if (plan.reversed) {
        std::reverse(result.added.begin(), result.added.end());  // chain order
      }
      return result;
    } catch (const KernelError& error) {
      if (error.sys_errno() == ERESTART && attempt < kGenerationAttempts) {
        continue;
      }
      if (error.sys_errno() == ERESTART) {
        fail_with_context(
            Error("the ruleset changed under each of " + std::to_string(kGenerationAttempts) +
                      " attempts; nothing was changed, try again",
                  EAGAIN),
            context);
      }
      fail_with_context(error, context);
    } catch (const Error& error) {
      fail_with_context(error, context);
    }
  }
}

void offload_add(Invocation& invocation, Arguments& arguments) {
  const OffloadSpec spec = parse_offload_spec(arguments, true);
  NftClient nft = open_nft(invocation);
  std::string context = "cannot add offload rule for flowtable " + spec.flowtable.to_string() +
                        " in chain " + spec.chain;
  if (spec.handle != 0) {
    context += std::string(spec.position == RulePosition::kAfter ? " after" : " before") +
               " rule handle " + std::to_string(spec.handle);
  }
  const OffloadResult result = add_offload(nft, spec, context);
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
    text.add_row({family_name(rule.family), rule.table, rule.chain, offload_proto_text(rule),
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
  std::vector<OffloadRule> victims;
  try {
    NftClient nft = open_nft(invocation);
    for (OffloadRule& rule : nft.list_offload_rules(ref.family, ref.table, spec.chain)) {
      // Without a protocol, every rule that offloads to the flowtable;
      // with one, the rules that offload only that protocol (not a set
      // whose other protocols would go too).
      const bool protocol_matches =
          spec.protocol == OffloadProtocol::kAll ||
          rule.is_only(spec.protocol == OffloadProtocol::kTcp ? IPPROTO_TCP : IPPROTO_UDP);
      if (rule.flowtable == ref.flowtable && protocol_matches) {
        victims.push_back(std::move(rule));
      }
    }
  } catch (const Error& error) {
    fail_with_context(error, context);
  }
  if (victims.empty()) {
    throw Error(
        context + ": " +
            (spec.chain.empty() ? "table " + table_text(ref.family, ref.table)
                                : "chain " + table_text(ref.family, ref.table) + " " + spec.chain) +
            " has no offload rule for it",
        ENOENT);
  }
  // By handle, in one transaction: exactly the rules listed above.
  Json commands = Json::array();
  for (const OffloadRule& rule : victims) {
    Json target = nft_object(rule.family, rule.table);
    target["chain"] = rule.chain;
    target["handle"] = rule.handle;
    commands.push_back(nft_command("delete", "rule", target));
  }
  run_nft(invocation, commands, context);
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
         "                              [ priority PRIORITY ] devices DEV[,DEV...] [ counter ]\n"
         "       flowbulk flowtable delete FAMILY TABLE NAME\n"
         "       flowbulk flowtable list [ FAMILY [ TABLE ] ]\n"
         "FAMILY := { ip | ip6 | inet }\n"
         "PRIORITY := nft's flowtable priority: N, filter, filter + N, filter - N\n"
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
         "that no rule of the chain offloads yet, at the top by default: offloaded flows\n"
         "skip the chain's later rules.\n";
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
