// SPDX-License-Identifier: GPL-2.0
#pragma once

// What offload add changes, decided from what it read: no kernel, no
// libraries, so every case is tested as a function (offload_plan_test.cpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nft_client.h"

namespace flowbulk {

// A chain of the table, and for the chains offload add may write to (base
// chains at hook forward, the one `chain NAME` names) its rules.
struct ChainView {
  ChainInfo info;
  std::vector<uint64_t> handles;   // every rule, in chain order
  std::vector<OffloadRule> rules;  // its offload rules
};

// The ruleset as offload add read it, at one generation.
struct OffloadView {
  bool flowtable_exists = false;
  // The table carries NFT_TABLE_F_OWNER: who owns it ("process 812 (nft)").
  std::optional<std::string> owner;
  std::vector<ChainView> chains;  // every chain of the table
};

// The rules to add, in the order they are sent, each placed as `append`
// and `spec.handle` say; the chain to create first, if it is missing.
struct OffloadPlan {
  OffloadSpec spec;  // with the chain it writes to
  bool create_chain = false;
  std::vector<uint8_t> send;         // protocols, in the order to send them
  bool append = false;               // NLM_F_APPEND: after the position (or at the end)
  bool reversed = false;             // `send` is in the reverse of chain order
  std::vector<OffloadRule> present;  // rules that already offload what was asked
  bool empty() const { return send.empty(); }
};

// Never touches an existing chain, which must be a base chain at hook
// forward; a missing one is created. Without a chain name, the table's one
// base chain of type filter at hook forward is used whatever its name
// (none: "forward" is created; several: an error that names them). A
// protocol that the chain's rules already offload to the flowtable, for
// every IP version of the table's family, is left to them. Rules placed at
// one spot one after the other (the top, or right after a rule) are sent
// in reverse, so the chain reads tcp, udp. Throws Error (ENOENT, EEXIST,
// EPERM, ENOTUNIQ) for what cannot be done.
OffloadPlan plan_offload(const OffloadSpec& asked, const OffloadView& view);

}  // namespace flowbulk
