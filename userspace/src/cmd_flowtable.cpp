// SPDX-License-Identifier: GPL-2.0
// flowbulk flowtable: add (hook early_ingress included), delete and list flowtables,
// and add or delete some of a flowtable's devices.
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <net/if.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <ostream>

#include "commands.h"
#include "deferred_signals.h"
#include "error.h"
#include "names.h"
#include "nfb_client.h"
#include "nft_client.h"
#include "nft_commands.h"
#include "output.h"

namespace flowbulk {

namespace {

// DEVICES as nft syntax's list, "a", "b"; nft has no escape for a quote.
std::string quoted_devices(const std::vector<std::string>& devices, const std::string& context) {
  std::string quoted;
  for (const std::string& device : devices) {
    if (device.find('"') != std::string::npos) {
      throw UsageError(context + ": nft cannot quote the device name " + device);
    }
    quoted += quoted.empty() ? "\"" : ", \"";
    quoted += device;
    quoted += '"';
  }
  return quoted;
}

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
    const std::string devices = quoted_devices(spec.devices, context);
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
  // The table exists (any name); the flowtable is new.
  validate_new_name(spec.ref.flowtable, "flowtable");
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
  if (early && !invocation.options.check) {
    hold.emplace();
  }
  const RulesetEngine::Result created =
      invocation.env.make_ruleset_engine()->run_commands(command, true, invocation.options.check);
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
  if (invocation.options.check) {
    // The kernel took the flowtable (and aborted); the module is there.
    // Whether the attach would succeed depends on the flowtable existing,
    // which a check leaves it not.
    Json attach = Json::array();
    if (early) {
      attach.push_back(flowtable_ref_json(spec.ref));
      if (!invocation.options.json) {
        invocation.env.out << "would attach flowtable " << spec.ref.to_string() << "\n";
      }
    }
    emit_written(invocation, Json::array(), Json{{"attach", attach}});
    return;
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
          nft_document(flowtable_delete_commands(spec.ref), context), true, false);
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
  Json echoed = echoed_commands(created.output);
  if (early && invocation.options.echo) {
    // What nft does not echo: the module took the flowtable.
    Json attached = nft_object(spec.ref.family, spec.ref.table);
    attached["name"] = spec.ref.flowtable;
    echoed.push_back(nft_command("attach", "flowtable", attached));
  }
  emit_written(invocation, echoed);
}

void flowtable_delete(Invocation& invocation, Arguments& arguments) {
  const FlowtableRef ref = parse_flowtable_ref(arguments);
  arguments.expect_end();
  const std::string context = "cannot delete flowtable " + ref.to_string();
  std::string echoed;
  try {
    echoed = run_nft(invocation, flowtable_delete_commands(ref), context);
  } catch (const Error& error) {
    const std::string message = error.what();
    if (message.find("Device or resource busy") == std::string::npos) {
      throw;
    }
    // EBUSY: rules still refer to it. Name them; a failure to read them
    // leaves nft's message as it is.
    std::string users;
    try {
      NftClient nft = open_nft(invocation);
      for (const OffloadRule& rule : read_offload_rules(invocation, nft, ref.family, ref.table)) {
        if (rule.flowtable == ref.flowtable) {
          users += "\n  chain " + rule.chain + ": " + offload_rule_text(rule);
        }
      }
    } catch (const Error&) {
      throw error;
    }
    if (users.empty()) {
      throw;
    }
    throw error.with_message(message + "; used by:" + users +
                             "\n(flowbulk offload delete removes the rules flowbulk wrote)");
  }
  if (!invocation.options.check) {
    detach_quietly(invocation, ref);
  }
  emit_written(invocation, echoed_commands(echoed));
}

// The hook priority the flowtable has: nft's add and delete of devices
// name the flowtable's hook, and the kernel refuses any other priority.
// None when the flowtable cannot be found.
std::optional<int32_t> current_priority(Invocation& invocation, const FlowtableRef& ref) {
  for (const auto& flowtable : open_nft(invocation).list_flowtables(ref.family)) {
    if (ref.table ==
            text_or_empty(nftnl_flowtable_get_str(flowtable.get(), NFTNL_FLOWTABLE_TABLE)) &&
        ref.flowtable ==
            text_or_empty(nftnl_flowtable_get_str(flowtable.get(), NFTNL_FLOWTABLE_NAME))) {
      return nftnl_flowtable_get_s32(flowtable.get(), NFTNL_FLOWTABLE_PRIO);
    }
  }
  return std::nullopt;
}

// flowtable device { add | delete } FAMILY TABLE NAME DEV[,DEV...]: nft's
// `add flowtable` on an existing flowtable and `delete flowtable` with a
// device list, which change only the devices named.
void flowtable_device(Invocation& invocation, Arguments& arguments) {
  const std::string verb = match_keyword(arguments.take("COMMAND"), {"add", "delete", "help"},
                                         "flowtable device command", "flowtable device");
  if (verb == "help" || (!arguments.empty() && arguments.peek() == "help")) {
    emit_usage(invocation, flowtable_usage());
    return;
  }
  const FlowtableRef ref = parse_flowtable_ref(arguments);
  const std::string list = arguments.take("DEV[,DEV...]");
  arguments.expect_end();
  const bool add = verb == "add";
  // A device to delete may be gone (a PPPoE session ended): only the
  // list's form is checked then.
  const std::vector<std::string> devices = parse_devices(list, invocation.env, add);
  const std::string context = std::string("cannot ") +
                              (add ? "add devices to" : "delete devices from") + " flowtable " +
                              ref.to_string();
  if (!nft_syntax_name(ref.table) || !nft_syntax_name(ref.flowtable)) {
    // nft's JSON has no device delete; its syntax cannot quote names.
    throw UsageError(context +
                     ": nft can change the devices only of a table and flowtable "
                     "whose names are one nft word");
  }
  const std::string quoted = quoted_devices(devices, context);
  std::optional<int32_t> priority;
  try {
    priority = current_priority(invocation, ref);
  } catch (const Error& error) {
    fail_with_context(error, context);
  }
  if (!priority && add) {
    // nft's add would create a new flowtable at priority 0 instead.
    throw Error(context + ": No such file or directory (no such flowtable)", ENOENT);
  }
  const std::string command = std::string(add ? "add" : "delete") + " flowtable " +
                              family_name(ref.family) + " " + ref.table + " " + ref.flowtable +
                              " { hook ingress priority " + std::to_string(priority.value_or(0)) +
                              "; devices = { " + quoted + " }; }";
  emit_written(invocation, echoed_commands(run_nft(invocation, command, context)));
}

void flowtable_list(Invocation& invocation, Arguments& arguments) {
  const std::optional<uint8_t> family = optional_family(arguments);
  const std::optional<std::string> table =
      optional_name(arguments, family.has_value(), "TABLE", "table");
  const std::optional<std::string> name =
      optional_name(arguments, table.has_value(), "NAME", "flowtable");
  arguments.expect_end();
  std::vector<NftnlFlowtablePtr> flowtables;
  try {
    flowtables = open_nft(invocation).list_flowtables(family);
  } catch (const Error& error) {
    fail_with_context(error, "cannot list flowtables");
  }
  std::erase_if(flowtables, [&table, &name](const NftnlFlowtablePtr& flowtable) {
    return (table && *table != text_or_empty(nftnl_flowtable_get_str(flowtable.get(),
                                                                     NFTNL_FLOWTABLE_TABLE))) ||
           (name &&
            *name != text_or_empty(nftnl_flowtable_get_str(flowtable.get(), NFTNL_FLOWTABLE_NAME)));
  });
  if (table && flowtables.empty()) {
    require_table(invocation, *family, *table, "cannot list flowtables");
  }
  if (name && flowtables.empty()) {
    // One flowtable, as `nft list flowtable`: one that does not exist is an
    // error.
    throw Error("cannot list flowtable " + table_text(*family, *table) + " " + *name +
                    ": no such flowtable",
                ENOENT);
  }
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
  RecordList list({{"family", "FAMILY"},
                   {"table", "TABLE"},
                   {"name", "NAME"},
                   {"hook", "HOOK"},
                   {"prio", "PRIORITY", TextTable::Align::kRight},
                   {"devices", "DEVICES"},
                   {"flags", "FLAGS"},
                   {"handle", "HANDLE", TextTable::Align::kRight}});
  for (const auto& owned : flowtables) {
    const nftnl_flowtable* flowtable = owned.get();
    list.add()
        .any("family", family_name(nftnl_flowtable_get_u32(flowtable, NFTNL_FLOWTABLE_FAMILY)))
        .any("table", text_or_empty(nftnl_flowtable_get_str(flowtable, NFTNL_FLOWTABLE_TABLE)))
        .any("name", text_or_empty(nftnl_flowtable_get_str(flowtable, NFTNL_FLOWTABLE_NAME)))
        .any("handle", nftnl_flowtable_get_u64(flowtable, NFTNL_FLOWTABLE_HANDLE))
        .any("hook", netdev_hook_name(nftnl_flowtable_get_u32(flowtable, NFTNL_FLOWTABLE_HOOKNUM)))
        .any("prio", nftnl_flowtable_get_s32(flowtable, NFTNL_FLOWTABLE_PRIO))
        .any("devices", devices_of(flowtable))
        .any("flags", flags_of(flowtable))
        .json("use", nftnl_flowtable_get_u32(flowtable, NFTNL_FLOWTABLE_USE));
  }
  print_list(invocation, "flowtables", list);
}

}  // namespace

const char* flowtable_usage() {
  return "Usage: flowbulk flowtable add FAMILY TABLE NAME hook { ingress | early_ingress }\n"
         "                              [ priority PRIORITY ] devices DEV[,DEV...] [ counter ]\n"
         "       flowbulk flowtable delete FAMILY TABLE NAME\n"
         "       flowbulk flowtable device { add | delete } FAMILY TABLE NAME DEV[,DEV...]\n"
         "       flowbulk flowtable { list | show } [ FAMILY [ TABLE [ NAME ] ] ]\n"
         "FAMILY := { ip | ip6 | inet }\n"
         "PRIORITY := nft's flowtable priority: N, filter, filter + N, filter - N\n"
         "hook early_ingress creates the flowtable at ingress and attaches nf_flow_bulk to it.\n";
}

void do_flowtable(Invocation& invocation, Arguments& arguments) {
  if (!arguments.empty() && arguments.peek() == "device") {
    arguments.take("COMMAND");
    flowtable_device(invocation, arguments);
    return;
  }
  dispatch_object(invocation, arguments,
                  ObjectCommands{"flowtable", flowtable_add, flowtable_delete, flowtable_list,
                                 flowtable_usage});
}

}  // namespace flowbulk
