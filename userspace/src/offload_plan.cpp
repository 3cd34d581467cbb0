// SPDX-License-Identifier: GPL-2.0
#include "offload_plan.h"

#include <linux/in.h>
#include <linux/netfilter.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "error.h"

namespace flowbulk {

OffloadPlan plan_offload(const OffloadSpec& asked, const OffloadView& view) {
  const FlowtableRef& ref = asked.flowtable;
  OffloadPlan plan{.spec = asked, .send = {}, .present = {}};
  const OffloadSpec& spec = plan.spec;
  if (!view.flowtable_exists) {
    // Said here rather than by the kernel's bare ENOENT at commit.
    throw Error("flowtable " + ref.to_string() + " does not exist", ENOENT);
  }
  const std::optional<ChainInfo>& chain = view.chain;
  if (chain && (!chain->base || chain->hooknum != NF_INET_FORWARD)) {
    throw Error("chain " + spec.chain + " exists and is not a base chain at hook forward", EEXIST);
  }
  if (!chain && (spec.position == RulePosition::kAfter || spec.position == RulePosition::kBefore)) {
    throw Error("chain " + spec.chain + " does not exist, so it has no rule with handle " +
                    std::to_string(spec.handle),
                ENOENT);
  }
  if (chain && spec.handle != 0 &&
      std::find(view.handles.begin(), view.handles.end(), spec.handle) == view.handles.end()) {
    throw Error("chain " + spec.chain + " has no rule with handle " + std::to_string(spec.handle),
                ENOENT);
  }

  std::vector<uint8_t> wanted;
  if (spec.protocol != OffloadProtocol::kUdp) {
    wanted.push_back(IPPROTO_TCP);
  }
  if (spec.protocol != OffloadProtocol::kTcp) {
    wanted.push_back(IPPROTO_UDP);
  }
  plan.create_chain = !chain;
  for (uint8_t protocol : wanted) {
    const auto same =
        std::find_if(view.rules.begin(), view.rules.end(), [&](const OffloadRule& rule) {
          return chain && rule.flowtable == ref.flowtable && rule.offloads(protocol);
        });
    if (same == view.rules.end()) {
      plan.send.push_back(protocol);
    } else if (std::none_of(plan.present.begin(), plan.present.end(),
                            [&](const OffloadRule& kept) { return kept.handle == same->handle; })) {
      plan.present.push_back(*same);  // once, if it offloads both
    }
  }
  plan.append = spec.position == RulePosition::kBottom || spec.position == RulePosition::kAfter;
  plan.reversed = spec.position == RulePosition::kTop || spec.position == RulePosition::kAfter;
  if (plan.reversed) {
    std::reverse(plan.send.begin(), plan.send.end());
  }
  return plan;
}

}  // namespace flowbulk
