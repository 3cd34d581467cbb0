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
                     .chain = "forward",
                     .position = position,
                     .handle = handle};
}

ChainInfo forward_chain() {
  return ChainInfo{.name = "forward",
                   .handle = 1,
                   .base = true,
                   .type = "filter",
                   .hooknum = NF_INET_FORWARD,
                   .priority = 0,
                   .policy = NF_DROP};
}

OffloadRule offloading(std::vector<uint8_t> protocols, uint64_t handle,
                       const std::string& flowtable = "ft") {
  return OffloadRule{.family = NFPROTO_INET,
                     .table = "fw",
                     .chain = "forward",
                     .handle = handle,
                     .flowtable = flowtable,
                     .match = protocols.empty() ? OffloadMatch::kAll : OffloadMatch::kProtocols,
                     .protocols = std::move(protocols),
                     .counter = false};
}

OffloadView view(bool flowtable_exists, std::optional<ChainInfo> chain = std::nullopt,
                 std::vector<uint64_t> handles = {}, std::vector<OffloadRule> rules = {}) {
  return OffloadView{.flowtable_exists = flowtable_exists,
                     .chain = std::move(chain),
                     .handles = std::move(handles),
                     .rules = std::move(rules)};
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
  read.rules = {offloading({IPPROTO_TCP}, 7), offloading({IPPROTO_UDP}, 8, "other")};
  OffloadPlan plan = plan_offload(spec(), read);
  EXPECT_FALSE(plan.create_chain);
  EXPECT_EQ(plan.send, (std::vector<uint8_t>{IPPROTO_UDP}));  // the udp rule is another flowtable's
  ASSERT_EQ(plan.present.size(), 1U);
  EXPECT_EQ(plan.present[0].handle, 7U);

  read.rules = {offloading({IPPROTO_TCP, IPPROTO_UDP}, 9)};  // meta l4proto { tcp, udp }
  plan = plan_offload(spec(), read);
  EXPECT_TRUE(plan.empty());
  EXPECT_EQ(plan.present.size(), 1U);  // once, though it offloads both

  read.rules = {offloading({}, 10)};  // a bare flow add
  EXPECT_TRUE(plan_offload(spec(OffloadProtocol::kUdp), read).empty());
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
  ChainInfo prerouting = forward_chain();
  prerouting.hooknum = NF_INET_PRE_ROUTING;
  EXPECT_THROW(plan_offload(spec(), view(true, prerouting)), Error);
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
