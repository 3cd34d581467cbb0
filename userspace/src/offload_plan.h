// SPDX-License-Identifier: GPL-2.0
#pragma once

// What offload add changes, decided from what it read: no kernel, no
// libraries, so every case is tested as a function (offload_plan_test.cpp).

#include <cstdint>
#include <optional>
#include <vector>

#include "nft_client.h"

namespace flowbulk {

// The ruleset as offload add read it, at one generation.
struct OffloadView {
  bool flowtable_exists = false;
  std::optional<ChainInfo> chain;  // the chain the spec names, if it exists
  std::vector<uint64_t> handles;   // its rules in chain order (read when a handle is given)
  std::vector<OffloadRule> rules;  // its offload rules
};

// The rules to add, in the order they are sent, each placed as `append`
// and `spec.handle` say; the chain to create first, if it is missing.
struct OffloadPlan {
  OffloadSpec spec;
  bool create_chain = false;
  std::vector<uint8_t> send;         // protocols, in the order to send them
  bool append = false;               // NLM_F_APPEND: after the position (or at the end)
  bool reversed = false;             // `send` is in the reverse of chain order
  std::vector<OffloadRule> present;  // rules that already offload what was asked
  bool empty() const { return send.empty(); }
};

// Never touches an existing chain, which must be a base chain at hook
// forward; a missing one is created. A protocol that a rule of the chain
// already offloads to the flowtable is left to that rule. Rules placed at
// one spot one after the other (the top, or right after a rule) are sent in
// reverse, so the chain reads tcp, udp. Throws Error (ENOENT, EEXIST) for
// what cannot be done.
OffloadPlan plan_offload(const OffloadSpec& asked, const OffloadView& view);

}  // namespace flowbulk
