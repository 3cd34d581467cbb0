// SPDX-License-Identifier: GPL-2.0
#pragma once

// What the table, flowtable and offload commands (cmd_table.cpp,
// cmd_flowtable.cpp, cmd_offload.cpp) share. Changes go through
// libnftables, as nft commands, so that nft's own parser, evaluator and
// messages apply (names, priority expressions such as `filter + 10`, "did
// you mean"); offload add and offload delete are the exceptions: their
// check-then-write must name the ruleset generation it read, which
// libnftables cannot carry, so they write through libnftnl
// (NftClient::commit, retried with GenerationRetry). Reading stays on libnftnl
// dumps (nft_client.h): one request per object type, with the kernel's
// attributes that nft's listings leave out (use counts, flag bits), and no
// ruleset cache to build.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli_support.h"
#include "nft_client.h"

namespace flowbulk {

NftClient open_nft(Invocation& invocation);

// The attempts of a write that names the ruleset generation its reads saw
// (NftClient::commit). The kernel refuses it with ERESTART when another
// writer committed in between; reading and trying again at once mostly
// meets the same burst of commits (a daemon reloading its rules, a script
// running nft line by line), so each new attempt waits longer: 1 ms, then
// twice as long each time, at most 100 ms a wait, at most kAttempts
// attempts (under a second of waiting in all).
class GenerationRetry {
 public:
  static constexpr int kAttempts = 16;

  explicit GenerationRetry(Environment& env) : env_(env) {}
  // After an attempt that met another writer: waits, then says whether to
  // read and try again (false once kAttempts were made, or when the wait
  // was interrupted).
  bool again();
  // What to report when again() said no.
  Error exhausted() const;

 private:
  Environment& env_;
  int attempts_ = 1;
  double waited_ = 0;  // seconds
};

// One chain as nft lists it (`nft -j -a -t -p list chain`): its rule
// handles and its offload rules; nullopt when the chain does not exist.
std::optional<ChainRules> read_chain_rules(Invocation& invocation, uint8_t family,
                                           const std::string& table, const std::string& chain);

// The offload rules of a family (every family: nullopt), optionally of one
// table and chain: the chains that hold a flow_offload expression are found
// with a libnftnl dump, and only those are listed by libnftables. Not
// `list ruleset` or `list table`: nft 1.0.6 prints a table's flags as
// garbage in JSON (a use after free), which cuts the listing short.
std::vector<OffloadRule> read_offload_rules(Invocation& invocation, NftClient& nft,
                                            std::optional<uint8_t> family,
                                            const std::string& table = {},
                                            const std::string& chain = {});

// "process 1234 (firewalld)" for a table owner's netlink port id, or
// "netlink port N" when no process holds it any more.
std::string owner_text(Invocation& invocation, uint32_t portid);

// "FAMILY NAME", as messages name a table.
std::string table_text(uint8_t family, const std::string& name);

// nft JSON names an object by JSON strings: whatever bytes the kernel
// allows in a name (spaces, '@', a leading digit) reach it as they are, and
// nothing in a name can be read as nft syntax.
Json nft_object(uint8_t family, const std::string& table);

// libnftables' message after CONTEXT. JSON commands have no source line,
// so their "internal:0:0-0: " location is dropped; for nft syntax the
// command and nft's carets under the culprit follow on the next lines.
[[noreturn]] void fail_nft(const std::string& context, const std::string& errors);

// Runs nft commands (nft syntax, or an nft JSON document) through
// libnftables as one transaction (only checked, as `nft -c`, under -c);
// returns what libnftables echoed.
std::string run_nft(Invocation& invocation, const std::string& commands,
                    const std::string& context);
// The same for nft JSON commands ({"nftables": COMMANDS}).
std::string run_nft(Invocation& invocation, const Json& commands, const std::string& context);

// -e: the commands in what libnftables echoed of a write (`nft -j -e -a`
// output), each {VERB: {KIND: OBJECT}} with the handle the kernel gave in
// OBJECT (libnftables 1.0.6 puts it beside OBJECT for JSON commands) and
// `create` said `add`, as nft -e says it; metainfo left out. Empty when
// nothing was echoed (a check, a delete).
Json echoed_commands(const std::string& output);
// An echoed command (as echoed_commands() and the offload commands make
// them) as `nft -e -a` prints it: "add table inet fw # handle 3".
std::string echoed_command_text(const Json& command);

// Prints the outcome of a write: with -j {"ok": true}, plus "check": true
// under -c and "echo": ECHOED under -e (not with -c: nothing was made);
// as text the echoed commands one a line under -e, else nothing (as nft). `extra`: more members for
// -j.
void emit_written(const Invocation& invocation, const Json& echoed,
                  const Json& extra = Json::object());

// {"nftables": [commands]} as text; a name that is not UTF-8 is a usage
// error (libnftables reads JSON as UTF-8).
std::string nft_document(const Json& commands, const std::string& context);

// For a listing restricted to TABLE that found nothing: a table that does
// not exist is an error (exit 1) with nft's words, as `nft list table`
// makes it ("No such file or directory").
void require_table(Invocation& invocation, uint8_t family, const std::string& table,
                   const std::string& context);

// {VERB: {KIND: object}}
Json nft_command(const char* verb, const char* kind, Json object);

// Whether NAME can go into nft syntax as it is (one nft token).
bool nft_syntax_name(std::string_view name);

// The priority when it is a plain number (what nft's JSON takes).
std::optional<int32_t> priority_number(const std::string& text);

// The words after `priority` up to the next flowtable option, checked.
std::string take_priority(Arguments& arguments);

// DEV[,DEV...]: existing devices, each once.
std::vector<std::string> parse_devices(const std::string& list, Environment& env,
                                       bool must_exist = true);

// An optional FAMILY word.
std::optional<uint8_t> optional_family(Arguments& arguments);

// The optional NAME after an optional word that was given (`given`): the
// next word, if any, as the name of a `what` (validate_name()).
std::optional<std::string> optional_name(Arguments& arguments, bool given, std::string_view word,
                                         std::string_view what);

// The commands of one nft object (table, flowtable, offload).
struct ObjectCommands {
  const char* object;
  void (*add)(Invocation&, Arguments&);
  void (*remove)(Invocation&, Arguments&);
  void (*list)(Invocation&, Arguments&);
  const char* (*usage)();
};

// OBJECT add | delete | list | show | help, as the first word of ARGUMENTS
// says (show is list, as in ip; `OBJECT COMMAND help` is help too).
void dispatch_object(Invocation& invocation, Arguments& arguments, const ObjectCommands& object);

}  // namespace flowbulk
