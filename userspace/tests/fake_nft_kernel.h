// SPDX-License-Identifier: GPL-2.0
#pragma once

// A semantic nf_tables for unit tests: it keeps tables, chains, flowtables
// and rules with their attributes, applies each batch as one transaction
// (all or nothing) with the kernel's rules for EXCL, updates, positions and
// handles, and answers dumps from what it holds. A test can therefore assert
// on the resulting state ("the policy is still drop"), not on the bytes a
// command happened to send.

#include <linux/netlink.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "transport.h"

struct nftnl_rule;

namespace flowbulk::testing {

class FakeNftKernel final : public Transport {
 public:
  struct Table {
    uint8_t family = 0;
    std::string name;
    uint64_t handle = 0;
    uint64_t next_handle = 1;  // chains, rules, flowtables of this table
    uint32_t flags = 0;        // NFT_TABLE_F_*
    uint32_t owner = 0;        // NFT_TABLE_F_OWNER: the owner's port id
  };
  struct Chain {
    uint8_t family = 0;
    std::string table;
    std::string name;
    uint64_t handle = 0;
    bool base = false;
    std::string type;
    uint32_t hooknum = 0;
    int32_t priority = 0;
    uint32_t policy = 1;  // NF_ACCEPT
  };
  struct Flowtable {
    uint8_t family = 0;
    std::string table;
    std::string name;
    uint64_t handle = 0;
    int32_t priority = 0;
    std::vector<std::string> devices;
    uint32_t flags = 0;  // NFT_FLOWTABLE_*
  };
  struct Rule {
    uint8_t family = 0;
    std::string table;
    std::string chain;
    uint64_t handle = 0;
    Datagram message;  // the NEWRULE message it came from (its expressions)
  };
  struct SetElement {
    std::vector<uint8_t> key;
    uint32_t flags = 0;  // NFT_SET_ELEM_*
  };
  struct Set {
    uint8_t family = 0;
    std::string table;
    std::string name;  // "__set%d" replaced by a number, as the kernel does
    uint64_t handle = 0;
    uint32_t flags = 0;  // NFT_SET_*
    Datagram message;    // the NEWSET message it came from (key type, length, userdata)
    std::vector<SetElement> elements;
  };
  struct State {
    std::vector<Table> tables;
    std::vector<Chain> chains;
    std::vector<Flowtable> flowtables;
    std::vector<Set> sets;
    std::vector<Rule> rules;  // in chain order
    uint64_t next_table_handle = 1;
  };

  void send(std::span<const uint8_t> datagram) override;
  Datagram receive() override;
  uint32_t port_id() const override { return 4243; }
  // Whether receive() has something to hand out.
  bool has_replies() const { return !pending_.empty(); }

  // Seeding, as another writer (nft) would have done it.
  void add_table(uint8_t family, const std::string& name);
  // NFT_TABLE_F_OWNER, as `flags owner` from another process's socket:
  // every write that names the table is refused with EPERM.
  void set_table_owner(uint8_t family, const std::string& name, uint32_t portid);
  void add_base_chain(uint8_t family, const std::string& table, const std::string& name,
                      uint32_t hooknum, int32_t priority, uint32_t policy);
  void add_flowtable(uint8_t family, const std::string& table, const std::string& name);
  // A rule `VERDICT` (NF_ACCEPT, NF_DROP) at the end of the chain.
  uint64_t add_verdict_rule(uint8_t family, const std::string& table, const std::string& chain,
                            uint32_t verdict);
  // A rule `meta l4proto PROTOCOL flow add @FLOWTABLE` at the top of the
  // chain (before `before`, when not 0), as another offload add puts it;
  // with `comment` as nft stores a rule's comment (flowbulk's marker).
  uint64_t add_offload_rule(uint8_t family, const std::string& table, const std::string& chain,
                            const std::string& flowtable, uint8_t protocol, uint64_t before = 0,
                            const std::string& comment = {});

  // The table and everything in it; a table of that name made later
  // numbers its chains and rules from 1 again, as the kernel does.
  void delete_table(uint8_t family, const std::string& name);
  void delete_rule(uint8_t family, const std::string& table, const std::string& chain,
                   uint64_t handle);

  // The ruleset generation: moved by every commit and every seeding call.
  uint32_t generation() const { return generation_; }
  // A commit of something the fake does not keep (a fake libnftables load).
  void count_commit() { ++generation_; }
  // Runs `writer` once, when the next batch arrives and before it is
  // checked: another process committing between the reads and the write of
  // the one under test.
  void before_next_batch(std::function<void()> writer) { before_next_batch_ = std::move(writer); }
  // Batches refused because they named a generation that had passed.
  size_t stale_batches() const { return stale_batches_; }

  const State& state() const { return state_; }
  std::optional<Chain> chain(uint8_t family, const std::string& table,
                             const std::string& name) const;
  // Each rule of a chain as "handle: expr expr ..." with what matters of
  // each expression ("cmp 6", "lookup __set0", "flow_offload @ft",
  // "immediate accept").
  std::vector<std::string> rules(uint8_t family, const std::string& table,
                                 const std::string& chain) const;
  // Batches (begin..end) received, to count write transactions.
  size_t batches() const { return batches_; }
  // Batches without an end message (`nft -c`): applied, answered, and
  // aborted, never committed.
  size_t checks() const { return checks_; }
  // From now on every batch fails with `error` (EPERM: not root).
  void refuse_writes(int error) { refuse_writes_ = error; }

 private:
  Datagram answer_dump(const nlmsghdr& request);
  // Seeds `rule` (its expressions set) into the chain as another writer
  // would: at the end (`append`), else before the rule `before` or at the
  // top (0). Returns its handle.
  uint64_t seed_rule(uint8_t family, const std::string& table, const std::string& chain,
                     nftnl_rule* rule, bool append, uint64_t before);
  std::vector<Datagram> answer_batch(std::span<const uint8_t> datagram);

  State state_;
  std::vector<Datagram> pending_;
  size_t batches_ = 0;
  size_t checks_ = 0;
  uint32_t generation_ = 1;
  std::function<void()> before_next_batch_;
  size_t stale_batches_ = 0;
  int refuse_writes_ = 0;
};

}  // namespace flowbulk::testing
