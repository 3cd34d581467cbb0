// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "flowtable_ref.h"
#include "netlink_channel.h"
#include "raii.h"

namespace flowbulk {

struct FlowtableSpec {
  FlowtableRef ref;
  std::vector<std::string> devices;
  bool counter = false;
};

enum class OffloadProtocol { kTcp, kUdp, kAll };

// Where new offload rules go in the chain.
enum class RulePosition {
  kTop,     // before every rule (the default)
  kBottom,  // after every rule
  kAfter,   // right after the rule with `handle`
  kBefore,  // right before the rule with `handle`
};

// The forward chain and its `meta l4proto P flow add @FLOWTABLE` rule(s).
struct OffloadSpec {
  FlowtableRef flowtable;
  OffloadProtocol protocol = OffloadProtocol::kAll;
  bool counter = false;
  std::string chain = "forward";  // offload delete: empty for every chain of the table
  RulePosition position = RulePosition::kTop;
  uint64_t handle = 0;  // for kAfter and kBefore
};

// What an offload rule matches before its `flow add`, as far as flowbulk
// reads it (counters aside).
enum class OffloadMatch {
  kProtocols,  // `meta l4proto P` or `meta l4proto { P, ... }` (an anonymous set)
  kAll,        // nothing: every packet that reaches the rule
  kOther,      // anything else: addresses, devices, a named set, a range
};

// A rule whose last expression is `flow add @FLOWTABLE`, whoever wrote it and
// whatever it matches first: offload add's own `meta l4proto P [counter]
// flow add @FLOWTABLE`, nft's `meta l4proto { tcp, udp } flow add @ft`.
struct OffloadRule {
  uint8_t family = 0;
  std::string table;
  std::string chain;
  uint64_t handle = 0;
  std::string flowtable;
  OffloadMatch match = OffloadMatch::kProtocols;
  std::vector<uint8_t> protocols;  // kProtocols: IPPROTO_TCP, IPPROTO_UDP, ...
  bool counter = false;

  // Whether every packet of `protocol` that reaches the rule is offloaded.
  bool offloads(uint8_t protocol) const;
  // Only `meta l4proto PROTOCOL`.
  bool is_only(uint8_t protocol) const {
    return match == OffloadMatch::kProtocols && protocols == std::vector<uint8_t>{protocol};
  }
};

// What add_offload did.
struct OffloadResult {
  bool chain_created = false;
  std::vector<OffloadRule> added;    // with the handles the kernel gave them
  std::vector<OffloadRule> present;  // already there: left as they are
};

// A chain as the kernel lists it.
struct ChainInfo {
  std::string name;
  uint64_t handle = 0;
  bool base = false;
  std::string type;
  uint32_t hooknum = 0;
  int32_t priority = 0;
  uint32_t policy = 0;
};

// One nf_tables transaction flowbulk writes itself: chains it creates and
// rules it adds, in order.
struct NftWrite {
  struct RuleAdd {
    NftnlRulePtr rule;    // with NFTNL_RULE_POSITION for a place next to a rule
    bool append = false;  // after the position (or at the end), else before it (or at the top)
  };
  // A rule deleted by its handle: only ever with the generation the
  // handle was read at, since handles start again from 1 when a table is
  // made anew and a stale one names whatever rule got it.
  struct RuleDelete {
    uint8_t family = 0;
    std::string table;
    std::string chain;
    uint64_t handle = 0;
  };
  std::vector<NftnlChainPtr> chains;  // created exclusively: EEXIST if there
  std::vector<RuleAdd> rules;
  std::vector<RuleDelete> deletes;  // sent after the chains and rules
};

// nftnl getters return NULL for an attribute the kernel did not send.
inline std::string text_or_empty(const char* text) {
  return text == nullptr ? std::string() : std::string(text);
}

// Reads nftables objects with libnftnl dumps. Changes go through
// libnftables instead (nft_commands.h), so that nft's parser, evaluator and
// error messages apply; reading stays here because a dump is one request
// per object type and carries what nft's listings leave out (use counts,
// flag bits, the expressions of a rule as the kernel holds them). The one
// write here is commit(): a transaction guarded by the generation its
// reads saw, which libnftables has no way to send (offload add, and every
// delete by handle).
class NftClient {
 public:
  explicit NftClient(std::unique_ptr<Transport> transport);

  // family nullopt: every family.
  std::vector<NftnlTablePtr> list_tables(std::optional<uint8_t> family);
  std::vector<NftnlFlowtablePtr> list_flowtables(std::optional<uint8_t> family);
  // The offload rules of a family (every family: nullopt), optionally of one
  // table and chain.
  std::vector<OffloadRule> list_offload_rules(std::optional<uint8_t> family,
                                              const std::string& table = {},
                                              const std::string& chain = {});
  std::optional<ChainInfo> find_chain(uint8_t family, const std::string& table,
                                      const std::string& name);
  // The handles of every rule of a chain, in chain order.
  std::vector<uint64_t> rule_handles(uint8_t family, const std::string& table,
                                     const std::string& chain);

  // The ruleset's generation id (NFT_MSG_GETGEN): it moves with every
  // committed transaction, whoever wrote it.
  uint32_t generation();
  // Applies `write` as one transaction only if the ruleset is still at
  // `generation` (NFNL_BATCH_GENID, as iptables-nft does): the kernel
  // checks it under its commit mutex and answers ERESTART when another
  // writer committed since, so what was read at `generation` is what the
  // write lands on. Returns the handles the added rules got, in order.
  std::vector<uint64_t> commit(const NftWrite& write, uint32_t generation);

 private:
  // A GETRULE dump of one table (and chain, when not empty).
  void dump_rules(std::optional<uint8_t> family, const std::string& table, const std::string& chain,
                  const std::function<void(const nftnl_rule&)>& each);
  // The protocols of an anonymous set of single protocol numbers (what nft
  // makes of `meta l4proto { tcp, udp }`); nullopt for any other set.
  std::optional<std::vector<uint8_t>> protocol_set(uint8_t family, const std::string& table,
                                                   const std::string& set);

  NetlinkChannel channel_;
};

}  // namespace flowbulk
