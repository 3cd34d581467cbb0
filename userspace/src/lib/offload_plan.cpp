// SPDX-License-Identifier: GPL-2.0
#include "offload_plan.h"

#include <linux/in.h>
#include <linux/netfilter.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "error.h"
#include "names.h"

namespace flowbulk {

namespace {

bool forward_filter(const ChainInfo& chain) {
  return chain.base && chain.hooknum == NF_INET_FORWARD && chain.type == "filter";
}

// The chain the rules go to: the named one, else the table's base chain at
// hook forward. nullptr with spec.chain set: it is to be created.
const ChainView* pick_chain(OffloadSpec& spec, const OffloadView& view, const std::string& table) {
  if (spec.chain.empty()) {
    std::vector<const ChainView*> forward;
    for (const ChainView& chain : view.chains) {
      if (forward_filter(chain.info)) {
        forward.push_back(&chain);
      }
    }
    if (forward.size() > 1) {
      // Each sees every forwarded packet in priority order, and which one
      // should offload depends on what the others accept or drop: the
      // operator says it.
      std::string names;
      for (const ChainView* chain : forward) {
        names += (names.empty() ? "" : ", ") + chain->info.name + " (priority " +
                 std::to_string(chain->info.priority) + ")";
      }
      throw Error("table " + table + " has " + std::to_string(forward.size()) +
                      " base chains at hook forward: " + names + "; name one with \"chain NAME\"",
                  ENOTUNIQ);
    }
    spec.chain = forward.empty() ? "forward" : forward.front()->info.name;
  }
  for (const ChainView& chain : view.chains) {
    if (chain.info.name == spec.chain) {
      return &chain;
    }
  }
  return nullptr;
}

}  // namespace

OffloadPlan plan_offload(const OffloadSpec& asked, const OffloadView& view) {
  const FlowtableRef& ref = asked.flowtable;
  OffloadPlan plan{.spec = asked, .send = {}, .present = {}};
  OffloadSpec& spec = plan.spec;
  const std::string table = family_name(ref.family) + " " + ref.table;
  if (view.owner) {
    // The kernel would answer EPERM and say no more.
    throw Error("table " + table + " is owned by " + *view.owner +
                    " (flags owner): only that process may change it",
                EPERM);
  }
  if (!view.flowtable_exists) {
    // Said here rather than by the kernel's bare ENOENT at commit.
    throw Error("flowtable " + ref.to_string() + " does not exist", ENOENT);
  }
  const ChainView* chain = pick_chain(spec, view, table);
  if (chain && (!chain->info.base || chain->info.hooknum != NF_INET_FORWARD)) {
    throw Error("chain " + spec.chain + " exists and is not a base chain at hook forward", EEXIST);
  }
  if (!chain && (spec.position == RulePosition::kAfter || spec.position == RulePosition::kBefore)) {
    throw Error("chain " + spec.chain + " does not exist, so it has no rule with handle " +
                    std::to_string(spec.handle),
                ENOENT);
  }
  if (chain && spec.handle != 0 &&
      std::find(chain->handles.begin(), chain->handles.end(), spec.handle) ==
          chain->handles.end()) {
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
  // The IP versions a packet of the table can have.
  std::vector<IpVersion> versions;
  if (ref.family != NFPROTO_IPV6) {
    versions.push_back(IpVersion::kIpv4);
  }
  if (ref.family != NFPROTO_IPV4) {
    versions.push_back(IpVersion::kIpv6);
  }
  plan.create_chain = !chain;
  static const std::vector<OffloadRule> kNoRules;
  const std::vector<OffloadRule>& rules = chain ? chain->rules : kNoRules;
  for (uint8_t protocol : wanted) {
    std::vector<const OffloadRule*> covering;  // one per IP version
    for (IpVersion version : versions) {
      const OffloadRule* found = nullptr;
      for (const OffloadRule& rule : rules) {
        if (rule.flowtable == ref.flowtable && rule.offloads(protocol, version)) {
          found = &rule;
          break;
        }
      }
      if (found == nullptr) {
        covering.clear();
        break;
      }
      covering.push_back(found);
    }
    if (covering.empty()) {
      plan.send.push_back(protocol);
      continue;
    }
    for (const OffloadRule* rule : covering) {
      if (std::none_of(plan.present.begin(), plan.present.end(),
                       [&](const OffloadRule& kept) { return kept.handle == rule->handle; })) {
        plan.present.push_back(*rule);  // once, if it offloads both
      }
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
