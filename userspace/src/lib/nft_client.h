// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "flowtable_ref.h"
#include "netlink_channel.h"
#include "offload_rules.h"
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
  // Empty: add uses the table's base chain at hook forward (or creates
  // "forward"), delete looks in every chain of the table.
  std::string chain;
  RulePosition position = RulePosition::kTop;
  uint64_t handle = 0;  // for kAfter and kBefore
};

// What add_offload did.
struct OffloadResult {
  bool chain_created = false;        // under -c: would be created
  uint64_t chain_handle = 0;         // of the created chain, as the kernel echoed it
  std::vector<OffloadRule> added;    // with the handles the kernel gave them (0 under -c)
  bool append = false;               // added after their position (else before it)
  uint64_t position = 0;             // the rule they were placed next to (0: top or bottom)
  std::vector<OffloadRule> present;  // already there: left as they are
};

// A table as the kernel lists it.
struct TableInfo {
  uint32_t flags = 0;  // NFT_TABLE_F_*
  uint32_t owner = 0;  // with NFT_TABLE_F_OWNER: the owning socket's netlink port id
};

// A chain that holds rules with a flow_offload expression.
struct ChainRef {
  uint8_t family = 0;
  std::string table;
  std::string chain;
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

// What the kernel echoed of a committed NftWrite (NLM_F_ECHO), in the
// order the write listed the objects; an object it did not echo is
// missing.
struct CommitEcho {
  std::vector<uint64_t> chain_handles;    // of NftWrite::chains
  std::vector<uint64_t> rule_handles;     // of NftWrite::rules
  std::vector<uint64_t> deleted_handles;  // of NftWrite::deletes
};

// nftnl getters return NULL for an attribute the kernel did not send.
inline std::string text_or_empty(const char* text) {
  return text == nullptr ? std::string() : std::string(text);
}

// Reads nftables objects with libnftnl dumps. Changes go through
// libnftables instead (nft_commands.h), so that nft's parser, evaluator and
// error messages apply; reading stays here because a dump is one request
// per object type and carries what nft's listings leave out (use counts,
// flag bits, the table's owner). What a rule matches is the exception:
// nft's JSON listing says it (offload_rules.h). The one
// write here is commit(): a transaction guarded by the generation its
// reads saw, which libnftables has no way to send (offload add, and every
// delete by handle).
class NftClient {
 public:
  explicit NftClient(std::unique_ptr<Transport> transport);

  // family nullopt: every family.
  std::vector<NftnlTablePtr> list_tables(std::optional<uint8_t> family);
  std::vector<NftnlFlowtablePtr> list_flowtables(std::optional<uint8_t> family);
  std::optional<TableInfo> find_table(uint8_t family, const std::string& name);
  // Every chain of a table.
  std::vector<ChainInfo> list_chains(uint8_t family, const std::string& table);
  // The chains of a family (every family: nullopt), optionally of one table
  // and chain, that hold a rule with a flow_offload expression anywhere in
  // it, in dump order. What those rules match is read from nft's listing
  // of the chain (offload_rules.h), not decoded here.
  std::vector<ChainRef> offload_chains(std::optional<uint8_t> family, const std::string& table = {},
                                       const std::string& chain = {});

  // The ruleset's generation id (NFT_MSG_GETGEN): it moves with every
  // committed transaction, whoever wrote it.
  uint32_t generation();
  // Applies `write` as one transaction only if the ruleset is still at
  // `generation` (NFNL_BATCH_GENID, as iptables-nft does): the kernel
  // checks it under its commit mutex and answers ERESTART when another
  // writer committed since, so what was read at `generation` is what the
  // write lands on. Every message asks for its echo (NLM_F_ECHO): the
  // kernel sends each object back at commit, with its handle.
  //
  // `check`: what `nft -c` does, the batch without its end message: the
  // kernel applies every message to the transaction, answers each, and
  // aborts it for want of an end, so nothing is committed and nothing is
  // echoed.
  CommitEcho commit(const NftWrite& write, uint32_t generation, bool check = false);

 private:
  // A GETRULE dump of one table (and chain, when not empty).
  void dump_rules(std::optional<uint8_t> family, const std::string& table, const std::string& chain,
                  const std::function<void(const nftnl_rule&)>& each);

  NetlinkChannel channel_;
};

}  // namespace flowbulk
