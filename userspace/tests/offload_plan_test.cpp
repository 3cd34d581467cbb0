// SPDX-License-Identifier: GPL-2.0
// plan_offload as a function: what offload add decides from what it read.
#include "offload_plan.h"

#include <gtest/gtest.h>
#include <linux/in.h>
#include <linux/netfilter.h>

#include "error.h"

namespace flowbulk {
namespace {

OffloadSpec spec(OffloadProtocol protocol = OffloadProtocol::kAll,
                 RulePosition position = RulePosition::kTop, uint64_t handle = 0) {
  return OffloadSpec{.flowtable = {.family = NFPROTO_INET, .table = "fw", .flowtable = "ft"},
                     .protocol = protocol,
                     .counter = false,
                     .chain = {},
                     .position = position,
                     .handle = handle};
}

ChainInfo forward_chain(const std::string& name = "forward", int32_t priority = 0) {
  return ChainInfo{.name = name,
                   .handle = 1,
                   .base = true,
                   .type = "filter",
                   .hooknum = NF_INET_FORWARD,
                   .priority = priority,
                   .policy = NF_DROP};
}

OffloadRule offloading(std::vector<uint8_t> protocols, uint64_t handle,
                       const std::string& flowtable = "ft", IpVersion version = IpVersion::kAny) {
  return OffloadRule{.family = NFPROTO_INET,
                     .table = "fw",
                     .chain = "forward",
                     .handle = handle,
                     .flowtable = flowtable,
                     .match = protocols.empty() ? OffloadMatch::kAll : OffloadMatch::kProtocols,
                     .protocols = std::move(protocols),
                     .ip_version = version,
                     .counter = false,
                     .comment = {}};
}

OffloadView view(bool flowtable_exists, std::optional<ChainInfo> chain = std::nullopt,
                 std::vector<uint64_t> handles = {}, std::vector<OffloadRule> rules = {}) {
  OffloadView read{.flowtable_exists = flowtable_exists, .owner = std::nullopt, .chains = {}};
  if (chain) {
    read.chains.push_back(
        ChainView{.info = *chain, .handles = std::move(handles), .rules = std::move(rules)});
  }
  return read;
}

TEST(OffloadPlan, AMissingChainIsCreatedAndBothRulesSentUdpFirst) {
  const OffloadPlan plan = plan_offload(spec(), view(true));
  EXPECT_TRUE(plan.create_chain);
  EXPECT_EQ(plan.send, (std::vector<uint8_t>{IPPROTO_UDP, IPPROTO_TCP}));  // each at the top
  EXPECT_FALSE(plan.append);
  EXPECT_TRUE(plan.reversed);
}

TEST(OffloadPlan, WhatARuleAlreadyOffloadsIsLeftToIt) {
  OffloadView read = view(true, forward_chain());
  std::vector<OffloadRule>& rules = read.chains[0].rules;
  rules = {offloading({IPPROTO_TCP}, 7), offloading({IPPROTO_UDP}, 8, "other")};
  OffloadPlan plan = plan_offload(spec(), read);
  EXPECT_FALSE(plan.create_chain);
  EXPECT_EQ(plan.send, (std::vector<uint8_t>{IPPROTO_UDP}));  // the udp rule is another flowtable's
  ASSERT_EQ(plan.present.size(), 1U);
  EXPECT_EQ(plan.present[0].handle, 7U);

  rules = {offloading({IPPROTO_TCP, IPPROTO_UDP}, 9)};  // meta l4proto { tcp, udp }
  plan = plan_offload(spec(), read);
  EXPECT_TRUE(plan.empty());
  EXPECT_EQ(plan.present.size(), 1U);  // once, though it offloads both

  rules = {offloading({}, 10)};  // a bare flow add
  EXPECT_TRUE(plan_offload(spec(OffloadProtocol::kUdp), read).empty());
}

// The nft wiki's inet pair: `ip protocol { tcp, udp } flow offload @ft`
// and `ip6 nexthdr { tcp, udp } flow add @ft`. Together they offload both
// protocols of both versions; one alone leaves the other version to add.
TEST(OffloadPlan, RulesOfOneIpVersionCountTogether) {
  OffloadView read = view(true, forward_chain());
  std::vector<OffloadRule>& rules = read.chains[0].rules;
  rules = {offloading({IPPROTO_TCP, IPPROTO_UDP}, 5, "ft", IpVersion::kIpv4),
           offloading({IPPROTO_TCP, IPPROTO_UDP}, 6, "ft", IpVersion::kIpv6)};
  OffloadPlan plan = plan_offload(spec(), read);
  EXPECT_TRUE(plan.empty());
  ASSERT_EQ(plan.present.size(), 2U);
  EXPECT_EQ(plan.present[0].handle, 5U);
  EXPECT_EQ(plan.present[1].handle, 6U);

  rules.pop_back();
  plan = plan_offload(spec(), read);
  EXPECT_EQ(plan.send, (std::vector<uint8_t>{IPPROTO_UDP, IPPROTO_TCP}));
  EXPECT_TRUE(plan.present.empty());

  // An ip table has IPv4 only.
  OffloadSpec ip = spec();
  ip.flowtable.family = NFPROTO_IPV4;
  EXPECT_TRUE(plan_offload(ip, read).empty());

  // A rule that matches more than protocols stands in for nothing.
  rules = {offloading({}, 3)};
  rules[0].match = OffloadMatch::kOther;
  EXPECT_EQ(plan_offload(spec(), read).send.size(), 2U);
}

// The table's forward chain whatever its name; one of several only when named.
TEST(OffloadPlan, TheForwardBaseChainIsFoundByItsHook) {
  OffloadView read = view(true, forward_chain("FWD"), {}, {offloading({IPPROTO_TCP}, 4)});
  OffloadPlan plan = plan_offload(spec(), read);
  EXPECT_FALSE(plan.create_chain);
  EXPECT_EQ(plan.spec.chain, "FWD");
  EXPECT_EQ(plan.send, std::vector<uint8_t>{IPPROTO_UDP});

  ChainInfo regular = forward_chain("forward");
  regular.base = false;  // a regular chain named forward is not the forward chain
  read.chains.push_back(ChainView{.info = regular, .handles = {}, .rules = {}});
  EXPECT_EQ(plan_offload(spec(), read).spec.chain, "FWD");

  read.chains.push_back(
      ChainView{.info = forward_chain("filter_FORWARD", -10), .handles = {}, .rules = {}});
  try {
    plan_offload(spec(), read);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "table inet fw has 2 base chains at hook forward: FWD (priority 0), "
                 "filter_FORWARD (priority -10); name one with \"chain NAME\"");
  }
  OffloadSpec named = spec();
  named.chain = "filter_FORWARD";
  plan = plan_offload(named, read);
  EXPECT_EQ(plan.spec.chain, "filter_FORWARD");
  EXPECT_EQ(plan.send.size(), 2U);  // FWD's rule is not in this chain

  // No forward base chain: "forward" is created.
  plan = plan_offload(spec(), view(true, ChainInfo{.name = "input",
                                                   .handle = 1,
                                                   .base = true,
                                                   .type = "filter",
                                                   .hooknum = NF_INET_LOCAL_IN,
                                                   .priority = 0,
                                                   .policy = NF_ACCEPT}));
  EXPECT_TRUE(plan.create_chain);
  EXPECT_EQ(plan.spec.chain, "forward");
}

TEST(OffloadPlan, AnOwnedTableIsRefusedWithItsOwner) {
  OffloadView read = view(true, forward_chain());
  read.owner = "process 812 (firewalld)";
  try {
    plan_offload(spec(), read);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "table inet fw is owned by process 812 (firewalld) (flags owner): only that "
                 "process may change it");
    EXPECT_EQ(error.sys_errno(), EPERM);
  }
}

TEST(OffloadPlan, PositionsAndTheOrderTheRulesAreSentIn) {
  const OffloadView read = view(true, forward_chain(), {3, 4});
  OffloadPlan plan = plan_offload(spec(OffloadProtocol::kAll, RulePosition::kBottom), read);
  EXPECT_EQ(plan.send, (std::vector<uint8_t>{IPPROTO_TCP, IPPROTO_UDP}));
  EXPECT_TRUE(plan.append);
  EXPECT_FALSE(plan.reversed);

  plan = plan_offload(spec(OffloadProtocol::kAll, RulePosition::kAfter, 3), read);
  EXPECT_EQ(plan.send, (std::vector<uint8_t>{IPPROTO_UDP, IPPROTO_TCP}));  // each right after 3
  EXPECT_TRUE(plan.append);
  EXPECT_EQ(plan.spec.handle, 3U);

  plan = plan_offload(spec(OffloadProtocol::kAll, RulePosition::kBefore, 4), read);
  EXPECT_EQ(plan.send, (std::vector<uint8_t>{IPPROTO_TCP, IPPROTO_UDP}));  // each right before 4
  EXPECT_FALSE(plan.append);
}

TEST(OffloadPlan, WhatCannotBeDoneIsAnError) {
  EXPECT_THROW(plan_offload(spec(), view(false)), Error);
  OffloadSpec named = spec();
  named.chain = "forward";
  ChainInfo prerouting = forward_chain();
  prerouting.hooknum = NF_INET_PRE_ROUTING;
  EXPECT_THROW(plan_offload(named, view(true, prerouting)), Error);
  EXPECT_THROW(plan_offload(spec(), view(true, prerouting)), Error);  // would create "forward"
  ChainInfo regular = forward_chain();
  regular.base = false;
  EXPECT_THROW(plan_offload(spec(), view(true, regular)), Error);
  EXPECT_THROW(plan_offload(spec(OffloadProtocol::kAll, RulePosition::kAfter, 3), view(true)),
               Error);
  try {
    plan_offload(spec(OffloadProtocol::kAll, RulePosition::kBefore, 5),
                 view(true, forward_chain(), {3, 4}));
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "chain forward has no rule with handle 5");
    EXPECT_EQ(error.sys_errno(), ENOENT);
  }
}

}  // namespace
}  // namespace flowbulk
