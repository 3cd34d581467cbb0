// SPDX-License-Identifier: GPL-2.0
// parse_chain_rules as a function: which rules of nft's JSON listing are
// offload rules, and what each matches before its flow statement. The
// statements are as `nft -j -p -a list chain` prints them (nft 1.0.6).
#include "offload_rules.h"

#include <gtest/gtest.h>
#include <linux/in.h>
#include <linux/netfilter.h>

namespace flowbulk {
namespace {

using Json = nlohmann::ordered_json;

const char* const kFlowAdd = R"({"flow": {"op": "add", "flowtable": "@f1"}})";

// One rule of `family` fw forward with handle 7 made of `statements`.
ChainRules one_rule(const std::string& statements, const std::string& family = "inet",
                    const std::string& comment = {}) {
  Json rule = Json::parse(R"({"family": ")" + family +
                          R"(", "table": "fw", "chain": "forward", "handle": 7})");
  if (!comment.empty()) {
    rule["comment"] = comment;
  }
  rule["expr"] = Json::parse("[" + statements + "]");
  return parse_chain_rules(
      Json{{"nftables", Json::array({Json::parse(R"({"metainfo": {}})"), Json{{"rule", rule}}})}});
}

std::string match(const std::string& left, const std::string& right, const char* op = "==") {
  return std::string(R"({"match": {"op": ")") + op + R"(", "left": )" + left + R"(, "right": )" +
         right + "}}";
}

const char* const kL4proto = R"({"meta": {"key": "l4proto"}})";
const char* const kIpProtocol = R"({"payload": {"protocol": "ip", "field": "protocol"}})";
const char* const kIp6Nexthdr = R"({"payload": {"protocol": "ip6", "field": "nexthdr"}})";

// tools/testing/selftests/net/netfilter/nft_flowtable.sh: the flow
// statement is not the last one, and a device and a port come first.
TEST(OffloadRules, TheKernelSelftestsRuleIsAnOffloadRuleThatMatchesOther) {
  const ChainRules chain =
      one_rule(match(R"({"meta": {"key": "oifname"}})", R"("veth1")") + ", " +
               match(R"({"payload": {"protocol": "tcp", "field": "dport"}})", "12345") + ", " +
               kFlowAdd + R"(, {"counter": "routed_orig"}, {"accept": null})");
  ASSERT_EQ(chain.rules.size(), 1U);
  const OffloadRule& rule = chain.rules[0];
  EXPECT_EQ(rule.flowtable, "f1");
  EXPECT_EQ(rule.handle, 7U);
  EXPECT_EQ(rule.chain, "forward");
  EXPECT_EQ(rule.match, OffloadMatch::kOther);
  EXPECT_TRUE(rule.counter);  // the named counter after flow add
  EXPECT_FALSE(rule.offloads(IPPROTO_TCP, IpVersion::kIpv4));
  EXPECT_EQ(chain.handles, std::vector<uint64_t>{7});
}

// The nft wiki's pair in an inet table: each offloads tcp and udp of one
// IP version.
TEST(OffloadRules, IpProtocolAndIp6NexthdrSetsAreProtocolsOfOneVersion) {
  ChainRules chain = one_rule(match(kIpProtocol, R"({"set": [6, 17]})") + ", " + kFlowAdd);
  ASSERT_EQ(chain.rules.size(), 1U);
  EXPECT_EQ(chain.rules[0].match, OffloadMatch::kProtocols);
  EXPECT_EQ(chain.rules[0].protocols, (std::vector<uint8_t>{IPPROTO_TCP, IPPROTO_UDP}));
  EXPECT_EQ(chain.rules[0].ip_version, IpVersion::kIpv4);
  EXPECT_TRUE(chain.rules[0].offloads(IPPROTO_UDP, IpVersion::kIpv4));
  EXPECT_FALSE(chain.rules[0].offloads(IPPROTO_UDP, IpVersion::kIpv6));

  chain = one_rule(match(kIp6Nexthdr, R"({"set": [17, 6]})") + ", " + kFlowAdd);
  ASSERT_EQ(chain.rules.size(), 1U);
  EXPECT_EQ(chain.rules[0].protocols, (std::vector<uint8_t>{IPPROTO_TCP, IPPROTO_UDP}));
  EXPECT_EQ(chain.rules[0].ip_version, IpVersion::kIpv6);

  // In an ip table `ip protocol` limits nothing the table does not.
  chain = one_rule(match(kIpProtocol, R"({"set": [6, 17]})") + ", " + kFlowAdd, "ip");
  EXPECT_EQ(chain.rules[0].ip_version, IpVersion::kAny);
  EXPECT_TRUE(chain.rules[0].is_only(IPPROTO_TCP) == false);
  EXPECT_TRUE(chain.rules[0].offloads(IPPROTO_TCP, IpVersion::kIpv4));
  // ... and `ip6 nexthdr` there matches nothing a packet can have.
  chain = one_rule(match(kIp6Nexthdr, "6") + ", " + kFlowAdd, "ip");
  EXPECT_EQ(chain.rules[0].match, OffloadMatch::kOther);
}

// `flow offload @f` and `flow add @f` are one statement; counters before
// or after it and a verdict after it do not change what it offloads.
TEST(OffloadRules, CounterAndVerdictAroundTheFlowStatement) {
  const ChainRules chain =
      one_rule(match(kL4proto, "6") + R"(, {"counter": {"packets": 3, "bytes": 180}}, )" +
                   kFlowAdd + R"(, {"accept": null})",
               "inet", "flowbulk");
  ASSERT_EQ(chain.rules.size(), 1U);
  EXPECT_TRUE(chain.rules[0].is_only(IPPROTO_TCP));
  EXPECT_TRUE(chain.rules[0].counter);
  EXPECT_TRUE(chain.rules[0].marked());
  EXPECT_EQ(chain.rules[0].comment, "flowbulk");
}

TEST(OffloadRules, VersionTestsNarrowAndProtocolNamesAreRead) {
  ChainRules chain = one_rule(match(R"({"meta": {"key": "nfproto"}})", R"("ipv6")") + ", " +
                              match(kL4proto, R"({"set": ["tcp", "udp"]})") + ", " + kFlowAdd);
  EXPECT_EQ(chain.rules[0].match, OffloadMatch::kProtocols);
  EXPECT_EQ(chain.rules[0].ip_version, IpVersion::kIpv6);
  EXPECT_EQ(chain.rules[0].protocols, (std::vector<uint8_t>{IPPROTO_TCP, IPPROTO_UDP}));

  chain = one_rule(match(R"({"meta": {"key": "protocol"}})", R"("ip")") + ", " + kFlowAdd);
  EXPECT_EQ(chain.rules[0].match, OffloadMatch::kAll);
  EXPECT_EQ(chain.rules[0].ip_version, IpVersion::kIpv4);
  EXPECT_TRUE(chain.rules[0].offloads(IPPROTO_UDP, IpVersion::kIpv4));
  EXPECT_FALSE(chain.rules[0].offloads(IPPROTO_UDP, IpVersion::kIpv6));

  // IPv4 and IPv6 at once, or two protocols at once: nothing.
  chain = one_rule(match(kIpProtocol, "6") + ", " + match(kIp6Nexthdr, "6") + ", " + kFlowAdd);
  EXPECT_EQ(chain.rules[0].match, OffloadMatch::kOther);
  chain = one_rule(match(kL4proto, "6") + ", " + match(kL4proto, "17") + ", " + kFlowAdd);
  EXPECT_EQ(chain.rules[0].match, OffloadMatch::kOther);
  // Two tests of the protocol: what both take.
  chain = one_rule(match(kL4proto, R"({"set": [6, 17]})") + ", " + match(kIpProtocol, "17") + ", " +
                   kFlowAdd);
  EXPECT_EQ(chain.rules[0].protocols, std::vector<uint8_t>{IPPROTO_UDP});
  EXPECT_EQ(chain.rules[0].ip_version, IpVersion::kIpv4);
}

TEST(OffloadRules, WhatIsNotAPlainProtocolTestIsOther) {
  for (const std::string& before : {
           match(kL4proto, R"({"set": [6, 17]})", "!="),
           match(kL4proto, R"("@protos")"),
           match(kL4proto, R"({"range": [1, 10]})"),
           match(kL4proto, R"({"set": [6, {"range": [16, 18]}]})"),
           match(kL4proto, R"("no-such-protocol")"),
           std::string(R"({"limit": {"rate": 10, "per": "second"}})"),
       }) {
    const ChainRules chain = one_rule(before + ", " + kFlowAdd);
    ASSERT_EQ(chain.rules.size(), 1U) << before;
    EXPECT_EQ(chain.rules[0].match, OffloadMatch::kOther) << before;
  }
  // Nothing but a counter and a log: every packet.
  const ChainRules chain =
      one_rule(R"({"counter": null}, {"log": {"prefix": "x"}}, )" + std::string(kFlowAdd));
  EXPECT_EQ(chain.rules[0].match, OffloadMatch::kAll);
}

TEST(OffloadRules, RulesWithoutAFlowStatementGiveOnlyTheirHandle) {
  const Json listing = Json::parse(R"({"nftables": [
      {"metainfo": {"json_schema_version": 1}},
      {"chain": {"family": "inet", "table": "fw", "name": "forward", "handle": 1}},
      {"rule": {"family": "inet", "table": "fw", "chain": "forward", "handle": 3,
                "expr": [{"accept": null}]}},
      {"rule": {"family": "inet", "table": "fw", "chain": "forward", "handle": 5,
                "expr": [{"flow": {"op": "add", "flowtable": "@ft"}}]}}]})");
  const ChainRules chain = parse_chain_rules(listing);
  EXPECT_EQ(chain.handles, (std::vector<uint64_t>{3, 5}));
  ASSERT_EQ(chain.rules.size(), 1U);
  EXPECT_EQ(chain.rules[0].handle, 5U);
  EXPECT_EQ(chain.rules[0].flowtable, "ft");
  EXPECT_EQ(chain.rules[0].match, OffloadMatch::kAll);
  EXPECT_FALSE(chain.rules[0].marked());
}

}  // namespace
}  // namespace flowbulk
