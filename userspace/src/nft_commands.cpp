// SPDX-License-Identifier: GPL-2.0
// What the nft object commands share (nft_commands.h).
#include "nft_commands.h"

#include <linux/netlink.h>
#include <net/if.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>

#include "error.h"
#include "names.h"

namespace flowbulk {

NftClient open_nft(Invocation& invocation) {
  return NftClient(invocation.env.transports.open(NETLINK_NETFILTER));
}

bool GenerationRetry::again() {
  if (attempts_ >= kAttempts) {
    return false;
  }
  const double wait = std::min(0.001 * static_cast<double>(1U << (attempts_ - 1)), 0.1);
  ++attempts_;
  waited_ += wait;
  return env_.sleep(wait);
}

Error GenerationRetry::exhausted() const {
  return Error("the ruleset changed under each of " + std::to_string(attempts_) +
                   " attempts (over " + std::to_string(std::lround(waited_ * 1000)) +
                   " ms); nothing was changed, try again",
               EAGAIN);
}

std::optional<ChainRules> read_chain_rules(Invocation& invocation, uint8_t family,
                                           const std::string& table, const std::string& chain) {
  Json target = nft_object(family, table);
  target["name"] = chain;
  const std::string context = "cannot list chain " + table_text(family, table) + " " + chain;
  const RulesetEngine::Result listed = invocation.env.make_ruleset_engine()->list_json(
      nft_document(Json::array({nft_command("list", "chain", target)}), context));
  if (!listed.ok) {
    if (listed.errors.find("No such file or directory") != std::string::npos) {
      return std::nullopt;  // gone since the chain was seen
    }
    fail_nft(context, listed.errors);
  }
  const Json listing = Json::parse(listed.output, nullptr, false);
  if (listing.is_discarded()) {
    throw Error(context + ": libnftables printed no JSON listing", EPROTO);
  }
  return parse_chain_rules(listing);
}

std::vector<OffloadRule> read_offload_rules(Invocation& invocation, NftClient& nft,
                                            std::optional<uint8_t> family, const std::string& table,
                                            const std::string& chain) {
  std::vector<OffloadRule> rules;
  for (const ChainRef& found : nft.offload_chains(family, table, chain)) {
    if (auto listed = read_chain_rules(invocation, found.family, found.table, found.chain)) {
      for (OffloadRule& rule : listed->rules) {
        rules.push_back(std::move(rule));
      }
    }
  }
  return rules;
}

std::string owner_text(Invocation& invocation, uint32_t portid) {
  const std::string process =
      invocation.env.netlink_owner ? invocation.env.netlink_owner(portid) : std::string();
  return process.empty() ? "netlink port " + std::to_string(portid) : process;
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
  RulesetEngine::Result result =
      invocation.env.make_ruleset_engine()->run_commands(commands, true, invocation.options.check);
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

Json echoed_commands(const std::string& output) {
  Json commands = Json::array();
  const Json echoed = Json::parse(output, nullptr, false);
  if (echoed.is_discarded() || !echoed.is_object() || !echoed.contains("nftables") ||
      !echoed["nftables"].is_array()) {
    return commands;
  }
  for (const Json& command : echoed["nftables"]) {
    if (!command.is_object() || command.size() != 1 || command.contains("metainfo")) {
      continue;
    }
    const std::string verb = command.begin().key();
    const Json& inner = command.begin().value();
    if (!inner.is_object()) {
      continue;
    }
    Json object = Json::object();
    std::string kind;
    for (const auto& [key, value] : inner.items()) {
      if (value.is_object() && kind.empty()) {
        kind = key;
        object = value;
      }
    }
    if (kind.empty()) {
      continue;
    }
    if (inner.contains("handle") && !object.contains("handle")) {
      object["handle"] = inner["handle"];
    }
    commands.push_back(nft_command(verb == "create" ? "add" : verb.c_str(), kind.c_str(), object));
  }
  return commands;
}

std::string echoed_command_text(const Json& command) {
  const std::string verb = command.begin().key();
  const std::string kind = command.begin().value().begin().key();
  const Json& object = command.begin().value().begin().value();
  auto text = [&object](const char* key) {
    const auto found = object.find(key);
    if (found == object.end()) {
      return std::string();
    }
    return found->is_string() ? found->get<std::string>() : found->dump();
  };
  std::string line = verb + " " + kind + " " + text("family");
  if (kind != "table") {
    line += " " + text("table");
  }
  if (kind == "rule") {
    line += " " + text("chain");
  } else {
    line += " " + text("name");
  }
  if (kind == "flowtable" && object.contains("hook")) {
    line += " { hook " + text("hook") + " priority " + text("prio") + ";";
    if (const auto devices = object.find("dev"); devices != object.end()) {
      std::string names;
      for (const Json& device : devices->is_array() ? *devices : Json::array({*devices})) {
        names += (names.empty() ? "" : ", ") +
                 (device.is_string() ? device.get<std::string>() : device.dump());
      }
      line += " devices = { " + names + " };";
    }
    line += " }";
  } else if (kind == "chain" && object.contains("hook")) {
    line +=
        " { type " + text("type") + " hook " + text("hook") + " priority " + text("prio") + "; }";
  }
  if (object.contains("handle")) {
    line += " # handle " + text("handle");
  }
  return line;
}

void emit_written(const Invocation& invocation, const Json& echoed, const Json& extra) {
  if (invocation.options.json) {
    Json body{{"ok", true}};
    body.update(extra);
    if (invocation.options.check) {
      body["check"] = true;
    }
    // A check commits nothing: libnftables' dry run still prints the JSON
    // commands back, but they were not made.
    if (invocation.options.echo && !invocation.options.check) {
      body["echo"] = echoed;
    }
    emit_json(invocation, body);
    return;
  }
  if (invocation.options.echo && !invocation.options.check) {
    for (const Json& command : echoed) {
      invocation.env.out << echoed_command_text(command) << "\n";
    }
  }
}

void require_table(Invocation& invocation, uint8_t family, const std::string& table,
                   const std::string& context) {
  std::vector<NftnlTablePtr> tables;
  try {
    tables = open_nft(invocation).list_tables(family);
  } catch (const Error& error) {
    fail_with_context(error, context);
  }
  for (const auto& listed : tables) {
    if (table == text_or_empty(nftnl_table_get_str(listed.get(), NFTNL_TABLE_NAME))) {
      return;
    }
  }
  // nft's words for it (`nft list table inet nosuch`), after what failed.
  throw Error(context + ": table " + table_text(family, table) + ": " + std::strerror(ENOENT),
              ENOENT);
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
  return nft_identifier(name);
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

std::vector<std::string> parse_devices(const std::string& list, Environment& env, bool must_exist) {
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
    if (must_exist && !env.device_exists(device)) {
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

std::optional<std::string> optional_name(Arguments& arguments, bool given, std::string_view word,
                                         std::string_view what) {
  if (!given || arguments.empty()) {
    return std::nullopt;
  }
  std::string name = arguments.take(word);
  validate_name(name, what);
  return name;
}

void dispatch_object(Invocation& invocation, Arguments& arguments, const ObjectCommands& object) {
  const std::string what = object.object;
  std::string command =
      match_keyword(arguments.take("COMMAND"), {"add", "delete", "list", "show", "help"},
                    what + " command", what);
  if (!arguments.empty() && arguments.peek() == "help") {
    command = "help";  // `flowbulk OBJECT COMMAND help`
  }
  if (command == "add") {
    object.add(invocation, arguments);
  } else if (command == "delete") {
    object.remove(invocation, arguments);
  } else if (command == "list" || command == "show") {  // show: as in ip and nft
    if (invocation.options.check) {
      throw UsageError("-c checks a change; " + what + " " + command + " changes nothing");
    }
    object.list(invocation, arguments);
  } else {
    emit_usage(invocation, object.usage());
  }
}

}  // namespace flowbulk
