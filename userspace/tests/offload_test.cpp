// SPDX-License-Identifier: GPL-2.0
// offload add / list / delete against the semantic fake nf_tables: what the
// chain holds afterwards, not which bytes were sent.
#include <linux/in.h>
#include <linux/netfilter.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "error.h"
#include "offload_rules.h"

namespace flowbulk::testing {
namespace {

using Json = nlohmann::ordered_json;

constexpr uint32_t kForward = NF_INET_FORWARD;

// The waits between 16 attempts that all meet another writer: from 1 ms,
// doubling, at most 100 ms each.
const std::vector<double> kBackoff = {0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.1,
                                      0.1,   0.1,   0.1,   0.1,   0.1,   0.1,   0.1};

class OffloadTest : public CliTest {
 protected:
  OffloadTest() {
    nft_kernel().add_table(NFPROTO_INET, "fw");
    nft_kernel().add_flowtable(NFPROTO_INET, "fw", "ft");
  }
  // A router's own forward chain: policy drop and one accept rule.
  uint64_t firewall() {
    nft_kernel().add_base_chain(NFPROTO_INET, "fw", "forward", kForward, 0, NF_DROP);
    return nft_kernel().add_verdict_rule(NFPROTO_INET, "fw", "forward", NF_ACCEPT);
  }
  std::vector<std::string> forward_rules() {
    return nft_kernel().rules(NFPROTO_INET, "fw", "forward");
  }
};

TEST_F(OffloadTest, ExistingChainKeepsPolicyDrop) {
  firewall();
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  auto chain = nft_kernel().chain(NFPROTO_INET, "fw", "forward");
  ASSERT_TRUE(chain);
  EXPECT_EQ(chain->policy, static_cast<uint32_t>(NF_DROP));
}

TEST_F(OffloadTest, ExistingChainKeepsPolicyDropTwice) {
  const uint64_t accept = firewall();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(nft_kernel().chain(NFPROTO_INET, "fw", "forward")->policy,
            static_cast<uint32_t>(NF_DROP));
  const auto rules = forward_rules();
  ASSERT_EQ(rules.size(), 3U) << ::testing::PrintToString(rules);
  EXPECT_EQ(rules.back(), std::to_string(accept) + ": immediate accept");
}

TEST_F(OffloadTest, NewChainIsCreatedWithTheKernelDefaultPolicy) {
  EXPECT_EQ(run({"-j", "offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  auto chain = nft_kernel().chain(NFPROTO_INET, "fw", "forward");
  ASSERT_TRUE(chain);
  EXPECT_TRUE(chain->base);
  EXPECT_EQ(chain->hooknum, kForward);
  EXPECT_EQ(chain->priority, 0);
  EXPECT_EQ(chain->policy, static_cast<uint32_t>(NF_ACCEPT));
  // udp is inserted first so that the chain reads tcp, udp.
  EXPECT_EQ(forward_rules(), (std::vector<std::string>{"4: meta cmp 6 flow_offload @ft",
                                                       "3: meta cmp 17 flow_offload @ft"}));
  const Json json = Json::parse(out());
  EXPECT_EQ(json["changed"], true);
  EXPECT_EQ(json["chain_created"], true);
  ASSERT_EQ(json["added"].size(), 2U);
  EXPECT_EQ(json["added"][0]["proto"], "tcp");
  EXPECT_EQ(json["added"][0]["handle"], 4);
}

TEST_F(OffloadTest, SecondCallChangesNothingAndSaysSo) {
  firewall();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft", "counter"}), kExitOk) << err();
  const auto before = forward_rules();
  const size_t batches = nft_kernel().batches();
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft", "counter"}), kExitOk) << err();
  EXPECT_EQ(forward_rules(), before);
  EXPECT_EQ(nft_kernel().batches(), batches);  // not even an empty transaction
  EXPECT_NE(out().find("nothing changed"), std::string::npos) << out();
  EXPECT_EQ(run({"-j", "offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  const Json json = Json::parse(out());
  EXPECT_EQ(json["changed"], false);
  EXPECT_EQ(json["present"].size(), 2U);
}

TEST_F(OffloadTest, OnlyTheMissingProtocolIsAdded) {
  firewall();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft", "proto", "udp"}), kExitOk) << err();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  const auto rules = forward_rules();
  ASSERT_EQ(rules.size(), 3U);
  EXPECT_NE(rules[0].find("cmp 6 "), std::string::npos) << rules[0];
  EXPECT_NE(rules[1].find("cmp 17 "), std::string::npos) << rules[1];
}

TEST_F(OffloadTest, DefaultPositionIsTheTopOfTheChain) {
  const uint64_t accept = firewall();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(
      forward_rules(),
      (std::vector<std::string>{"5: meta cmp 6 flow_offload @ft", "4: meta cmp 17 flow_offload @ft",
                                std::to_string(accept) + ": immediate accept"}));
}

TEST_F(OffloadTest, PositionBottomAfterAndBefore) {
  const uint64_t accept = firewall();
  const uint64_t drop = nft_kernel().add_verdict_rule(NFPROTO_INET, "fw", "forward", NF_DROP);
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft", "proto", "tcp", "position", "bottom"}),
            kExitOk)
      << err();
  auto rules = forward_rules();
  ASSERT_EQ(rules.size(), 3U);
  EXPECT_NE(rules[2].find("cmp 6 "), std::string::npos) << rules[2];

  ASSERT_EQ(run({"offload", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  ASSERT_EQ(
      run({"offload", "add", "inet", "fw", "ft", "position", "after", std::to_string(accept)}),
      kExitOk)
      << err();
  rules = forward_rules();
  ASSERT_EQ(rules.size(), 4U);
  EXPECT_NE(rules[0].find("accept"), std::string::npos);
  EXPECT_NE(rules[1].find("cmp 6 "), std::string::npos) << rules[1];
  EXPECT_NE(rules[2].find("cmp 17 "), std::string::npos) << rules[2];
  EXPECT_NE(rules[3].find("drop"), std::string::npos);

  ASSERT_EQ(run({"offload", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft", "position", "before", std::to_string(drop)}),
            kExitOk)
      << err();
  rules = forward_rules();
  ASSERT_EQ(rules.size(), 4U);
  EXPECT_NE(rules[1].find("cmp 6 "), std::string::npos) << rules[1];
  EXPECT_NE(rules[2].find("cmp 17 "), std::string::npos) << rules[2];
  EXPECT_NE(rules[3].find("drop"), std::string::npos);
}

TEST_F(OffloadTest, PositionAfterAnUnknownHandleFailsAndChangesNothing) {
  firewall();
  const auto before = forward_rules();
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft", "position", "after", "999"}), kExitFailure);
  EXPECT_NE(err().find("inet fw ft after rule handle 999: chain forward has no rule with "
                       "handle 999"),
            std::string::npos)
      << err();
  EXPECT_EQ(forward_rules(), before);
}

// Another offload add (or any writer) commits between this run's reads and
// its write: the write names the generation it read, the kernel refuses
// it, and the run reads again instead of adding the same rules twice.
TEST_F(OffloadTest, AWriterBetweenTheReadsAndTheWriteIsSeen) {
  const uint64_t accept = firewall();
  nft_kernel().before_next_batch([this] {
    nft_kernel().add_offload_rule(NFPROTO_INET, "fw", "forward", "ft", IPPROTO_UDP);
    nft_kernel().add_offload_rule(NFPROTO_INET, "fw", "forward", "ft", IPPROTO_TCP);
  });
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(nft_kernel().stale_batches(), 1U);
  const auto rules = forward_rules();
  ASSERT_EQ(rules.size(), 3U) << ::testing::PrintToString(rules);
  EXPECT_EQ(rules.back(), std::to_string(accept) + ": immediate accept");
  EXPECT_NE(out().find("already in chain inet fw forward: meta l4proto tcp"), std::string::npos)
      << out();
  EXPECT_NE(out().find("nothing changed"), std::string::npos) << out();
}

// The rule to place ours before goes between the reads and the write: the
// run reads again and says so, instead of the kernel's bare ENOENT.
TEST_F(OffloadTest, ThePositionRuleDeletedBeforeTheWriteIsReported) {
  firewall();
  const uint64_t drop = nft_kernel().add_verdict_rule(NFPROTO_INET, "fw", "forward", NF_DROP);
  const auto before = forward_rules();
  nft_kernel().before_next_batch(
      [this, drop] { nft_kernel().delete_rule(NFPROTO_INET, "fw", "forward", drop); });
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft", "position", "before", std::to_string(drop)}),
            kExitFailure);
  EXPECT_EQ(nft_kernel().stale_batches(), 1U);
  EXPECT_NE(err().find("before rule handle " + std::to_string(drop) +
                       ": chain forward has no rule with handle " + std::to_string(drop)),
            std::string::npos)
      << err();
  EXPECT_EQ(forward_rules().size(), before.size() - 1);
}

// A ruleset that changes under every attempt: a bounded number of them,
// each after a longer wait, then a clear failure with nothing of ours
// written.
TEST_F(OffloadTest, ARulesetThatNeverHoldsStillFailsAfterBoundedBackoff) {
  firewall();
  const auto before = forward_rules();
  std::function<void()> busy = [this, &busy] {
    nft_kernel().add_table(NFPROTO_INET, "t" + std::to_string(nft_kernel().generation()));
    nft_kernel().before_next_batch(busy);
  };
  nft_kernel().before_next_batch(busy);
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("the ruleset changed under each of 16 attempts (over 927 ms); nothing was "
                       "changed, try again"),
            std::string::npos)
      << err();
  EXPECT_EQ(nft_kernel().stale_batches(), 16U);
  EXPECT_EQ(sleeps_, kBackoff);
  EXPECT_EQ(forward_rules(), before);
  nft_kernel().before_next_batch(nullptr);
}

// Another writer deletes the table and makes it again between offload
// delete's listing and its delete: handles start from 1 again, so the
// handles listed now name the new table's accept rules. The delete names
// the generation it listed at, the kernel refuses it, and the rules are
// listed and chosen again: only the new offload rule goes.
TEST_F(OffloadTest, DeleteNeverTakesARuleThatGotTheSameHandleInARecreatedTable) {
  firewall();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  std::vector<uint64_t> listed;
  for (const std::string& rule : forward_rules()) {
    if (rule.find("flow_offload") != std::string::npos) {
      listed.push_back(std::stoull(rule));
    }
  }
  ASSERT_EQ(listed.size(), 2U);
  std::vector<uint64_t> accepts;
  uint64_t offload = 0;
  nft_kernel().before_next_batch([&] {
    nft_kernel().delete_table(NFPROTO_INET, "fw");
    nft_kernel().add_table(NFPROTO_INET, "fw");
    nft_kernel().add_flowtable(NFPROTO_INET, "fw", "ft");
    nft_kernel().add_base_chain(NFPROTO_INET, "fw", "forward", kForward, 0, NF_DROP);
    // Accept rules up to and past the handles listed before.
    while (accepts.empty() || accepts.back() < *std::max_element(listed.begin(), listed.end())) {
      accepts.push_back(nft_kernel().add_verdict_rule(NFPROTO_INET, "fw", "forward", NF_ACCEPT));
    }
    // Written by flowbulk too (its marker): the rule the delete is for.
    offload = nft_kernel().add_offload_rule(NFPROTO_INET, "fw", "forward", "ft", IPPROTO_TCP, 0,
                                            kOffloadMarker);
  });
  ASSERT_EQ(run({"-j", "offload", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(nft_kernel().stale_batches(), 1U);
  EXPECT_EQ(sleeps_, std::vector<double>{0.001});
  for (uint64_t handle : listed) {
    EXPECT_NE(std::find(accepts.begin(), accepts.end(), handle), accepts.end()) << handle;
  }
  std::vector<std::string> expected;
  for (uint64_t handle : accepts) {
    expected.push_back(std::to_string(handle) + ": immediate accept");
  }
  EXPECT_EQ(forward_rules(), expected);
  const Json deleted = Json::parse(out())["deleted"];
  ASSERT_EQ(deleted.size(), 1U) << out();
  EXPECT_EQ(deleted[0]["handle"], offload);
}

TEST_F(OffloadTest, DeleteUnderARulesetThatNeverHoldsStillFailsAfterBoundedBackoff) {
  firewall();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  const auto before = forward_rules();
  std::function<void()> busy = [this, &busy] {
    nft_kernel().add_table(NFPROTO_INET, "t" + std::to_string(nft_kernel().generation()));
    nft_kernel().before_next_batch(busy);
  };
  nft_kernel().before_next_batch(busy);
  EXPECT_EQ(run({"offload", "delete", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_EQ(err(),
            "Error: cannot delete offload rules of flowtable inet fw ft: the ruleset changed under "
            "each of 16 attempts (over 927 ms); nothing was changed, try again\n");
  EXPECT_EQ(nft_kernel().stale_batches(), 16U);
  EXPECT_EQ(sleeps_, kBackoff);
  EXPECT_EQ(forward_rules(), before);
  nft_kernel().before_next_batch(nullptr);
}

TEST_F(OffloadTest, BadHandlesAreUsageErrors) {
  for (const char* handle : {" 5", "+5", "-1", "0x10", "", "5x", "0"}) {
    EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft", "position", "after", handle}), kExitUsage)
        << handle;
  }
}

TEST_F(OffloadTest, ChainThatIsNotAForwardBaseChainIsRefused) {
  nft_kernel().add_base_chain(NFPROTO_INET, "fw", "forward", NF_INET_PRE_ROUTING, 0, NF_DROP);
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("not a base chain at hook forward"), std::string::npos) << err();
  EXPECT_TRUE(forward_rules().empty());
}

TEST_F(OffloadTest, MissingFlowtableIsDiagnosed) {
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "nope", "proto", "tcp"}), kExitFailure);
  EXPECT_NE(err().find("cannot add offload rule for flowtable inet fw nope: "), std::string::npos)
      << err();
  EXPECT_FALSE(nft_kernel().chain(NFPROTO_INET, "fw", "forward"));  // all or nothing
}

TEST_F(OffloadTest, ListAndDeleteTouchOnlyOffloadRules) {
  const uint64_t accept = firewall();
  nft_kernel().add_flowtable(NFPROTO_INET, "fw", "other");
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft", "counter"}), kExitOk) << err();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "other", "proto", "udp"}), kExitOk) << err();

  ASSERT_EQ(run({"-j", "offload", "list"}), kExitOk) << err();
  Json json = Json::parse(out());
  ASSERT_EQ(json["offloads"].size(), 3U) << out();
  EXPECT_EQ(json["offloads"][0]["chain"], "forward");
  ASSERT_EQ(run({"offload", "list", "inet", "fw"}), kExitOk) << err();
  EXPECT_NE(out().find("HANDLE"), std::string::npos);

  ASSERT_EQ(run({"-j", "offload", "delete", "inet", "fw", "ft", "proto", "tcp"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out())["deleted"].size(), 1U);
  ASSERT_EQ(run({"offload", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(forward_rules(),
            (std::vector<std::string>{"7: meta cmp 17 flow_offload @other",
                                      std::to_string(accept) + ": immediate accept"}));
  EXPECT_EQ(nft_kernel().chain(NFPROTO_INET, "fw", "forward")->policy,
            static_cast<uint32_t>(NF_DROP));
  EXPECT_EQ(run({"offload", "delete", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("has no offload rule"), std::string::npos) << err();
}

// Rules nft wrote, loaded by the real libnftables (-f) into the fake.
class NftWrittenOffloadTest : public OffloadTest {
 protected:
  void load_forward_chain(const std::string& rules) {
    in_.clear();  // after an earlier -f - read it to the end
    in_.str(
        "table inet fw {\n"
        "  chain forward {\n"
        "    type filter hook forward priority filter; policy accept;\n" +
        rules + "  }\n}\n");
    ASSERT_EQ(run({"-f", "-"}), kExitOk) << err();
  }
};

// Documentation/flowbulk.rst's own ruleset: an anonymous set of protocols.
TEST_F(NftWrittenOffloadTest, ASetOfProtocolsIsListedAndNotAddedAgain) {
  load_forward_chain("    meta l4proto { tcp, udp } flow add @ft\n");
  const auto before = forward_rules();
  ASSERT_EQ(before.size(), 1U);
  EXPECT_NE(before[0].find("meta lookup __set0 flow_offload @ft"), std::string::npos) << before[0];

  ASSERT_EQ(run({"-j", "offload", "list"}), kExitOk) << err();
  Json json = Json::parse(out());
  ASSERT_EQ(json["offloads"].size(), 1U) << out();
  EXPECT_EQ(json["offloads"][0]["proto"], "tcp,udp");
  EXPECT_EQ(json["offloads"][0]["flowtable"], "ft");
  EXPECT_EQ(json["offloads"][0]["counter"], false);
  ASSERT_EQ(run({"offload", "list"}), kExitOk) << err();
  EXPECT_NE(out().find("inet    fw     forward  tcp,udp  ft"), std::string::npos) << out();

  const size_t batches = nft_kernel().batches();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_NE(out().find("already in chain inet fw forward: meta l4proto { tcp, udp } flow add @ft"),
            std::string::npos)
      << out();
  EXPECT_NE(out().find("nothing changed"), std::string::npos) << out();
  ASSERT_EQ(run({"-j", "offload", "add", "inet", "fw", "ft", "proto", "udp"}), kExitOk) << err();
  json = Json::parse(out());
  EXPECT_EQ(json["changed"], false);
  ASSERT_EQ(json["present"].size(), 1U);
  EXPECT_EQ(json["present"][0]["proto"], "tcp,udp");
  EXPECT_EQ(nft_kernel().batches(), batches);
  EXPECT_EQ(forward_rules(), before);

  // nft wrote it, not flowbulk: delete leaves it and says where it is.
  EXPECT_EQ(run({"offload", "delete", "inet", "fw", "ft", "proto", "tcp"}), kExitFailure);
  EXPECT_EQ(forward_rules(), before);
  EXPECT_EQ(run({"offload", "delete", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("table inet fw has no offload rule for it that flowbulk wrote (comment "
                       "\"flowbulk\"); delete these with nft:\n  chain forward: meta l4proto { "
                       "tcp, udp } flow add @ft (handle"),
            std::string::npos)
      << err();
  EXPECT_EQ(forward_rules(), before);
}

TEST_F(NftWrittenOffloadTest, ABareFlowAddOffloadsEveryProtocol) {
  load_forward_chain("    counter flow add @ft\n");
  ASSERT_EQ(run({"-j", "offload", "list", "inet", "fw"}), kExitOk) << err();
  const Json json = Json::parse(out());
  ASSERT_EQ(json["offloads"].size(), 1U) << out();
  EXPECT_EQ(json["offloads"][0]["proto"], "all");
  EXPECT_EQ(json["offloads"][0]["counter"], true);
  const auto before = forward_rules();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_NE(out().find("nothing changed"), std::string::npos) << out();
  EXPECT_EQ(forward_rules(), before);
}

// Without `chain`, delete looks in every chain of the table, base or
// regular, not only in forward.
TEST_F(NftWrittenOffloadTest, DeleteWithoutAChainSearchesEveryChainOfTheTable) {
  in_.str(
      "table inet fw {\n"
      "  chain offloads { meta l4proto tcp flow add @ft comment \"flowbulk\"; }\n"
      "  chain forward { type filter hook forward priority filter; jump offloads; }\n"
      "  chain early { type filter hook forward priority -10; meta l4proto udp flow add @ft "
      "comment \"flowbulk\"; }\n"
      "}\n");
  ASSERT_EQ(run({"-f", "-"}), kExitOk) << err();
  ASSERT_EQ(nft_kernel().rules(NFPROTO_INET, "fw", "offloads").size(), 1U);
  ASSERT_EQ(nft_kernel().rules(NFPROTO_INET, "fw", "early").size(), 1U);
  ASSERT_EQ(run({"-j", "offload", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out())["deleted"].size(), 2U) << out();
  EXPECT_TRUE(nft_kernel().rules(NFPROTO_INET, "fw", "offloads").empty());
  EXPECT_TRUE(nft_kernel().rules(NFPROTO_INET, "fw", "early").empty());
  EXPECT_EQ(forward_rules().size(), 1U);  // the jump stays
  EXPECT_EQ(run({"offload", "delete", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("table inet fw has no offload rule for it"), std::string::npos) << err();
}

// tools/testing/selftests/net/netfilter/nft_flowtable.sh's rule: the flow
// statement is not the last one and a device and a port come first. It is
// an offload rule (listed, pointed at), but it offloads one port only.
TEST_F(NftWrittenOffloadTest, TheKernelSelftestsRuleIsListedAndLeftAlone) {
  load_forward_chain("    meta oifname \"eth1\" tcp dport 12345 flow add @ft counter accept\n");
  const auto before = forward_rules();
  ASSERT_EQ(before.size(), 1U);
  ASSERT_EQ(run({"-j", "offload", "list"}), kExitOk) << err();
  Json json = Json::parse(out());
  ASSERT_EQ(json["offloads"].size(), 1U) << out();
  EXPECT_EQ(json["offloads"][0]["proto"], "other");
  EXPECT_EQ(json["offloads"][0]["counter"], true);
  EXPECT_EQ(json["offloads"][0]["flowbulk"], false);

  // offload add: both protocols, once.
  ASSERT_EQ(run({"-j", "offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out())["added"].size(), 2U) << out();
  ASSERT_EQ(run({"-j", "offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out())["changed"], false) << out();
  EXPECT_EQ(forward_rules().size(), 3U);

  // offload delete: flowbulk's two go, the selftest's rule stays and is named.
  ASSERT_EQ(run({"-j", "offload", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  json = Json::parse(out());
  EXPECT_EQ(json["deleted"].size(), 2U) << out();
  ASSERT_EQ(json["left"].size(), 1U) << out();
  EXPECT_EQ(json["left"][0]["proto"], "other") << out();
  EXPECT_EQ(forward_rules(), before);

  // flowtable delete: EBUSY, with the rule that holds it.
  EXPECT_EQ(run({"flowtable", "delete", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("used by:\n  chain forward: ... counter flow add @ft (handle"),
            std::string::npos)
      << err();
}

// The nft wiki's pair, in its inet table: `flow offload` is `flow add`,
// and the two rules together offload tcp and udp of both IP versions.
TEST_F(NftWrittenOffloadTest, TheWikisIpAndIp6SetsCoverBothProtocols) {
  load_forward_chain(
      "    ip protocol { tcp, udp } flow offload @ft\n"
      "    ip6 nexthdr { tcp, udp } flow add @ft\n");
  ASSERT_EQ(run({"-j", "offload", "list"}), kExitOk) << err();
  const Json json = Json::parse(out());
  ASSERT_EQ(json["offloads"].size(), 2U) << out();
  EXPECT_EQ(json["offloads"][0]["proto"], "tcp,udp");
  EXPECT_EQ(json["offloads"][0]["nfproto"], "ipv4");
  EXPECT_EQ(json["offloads"][1]["proto"], "tcp,udp");
  EXPECT_EQ(json["offloads"][1]["nfproto"], "ipv6");
  ASSERT_EQ(run({"offload", "list"}), kExitOk) << err();
  EXPECT_NE(out().find("ipv4 tcp,udp"), std::string::npos) << out();

  const auto before = forward_rules();
  const size_t batches = nft_kernel().batches();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_NE(out().find("already in chain inet fw forward: ip protocol { tcp, udp } flow add @ft"),
            std::string::npos)
      << out();
  EXPECT_NE(out().find("already in chain inet fw forward: ip6 nexthdr { tcp, udp } flow add @ft"),
            std::string::npos)
      << out();
  EXPECT_NE(out().find("nothing changed"), std::string::npos) << out();
  EXPECT_EQ(nft_kernel().batches(), batches);
  EXPECT_EQ(forward_rules(), before);
}

// `meta l4proto tcp counter flow add @ft accept`: a counter and a verdict
// around the flow statement.
TEST_F(NftWrittenOffloadTest, AVerdictAfterFlowAddStillOffloads) {
  load_forward_chain("    meta l4proto tcp counter flow add @ft accept\n");
  const auto before = forward_rules();
  ASSERT_EQ(run({"-j", "offload", "add", "inet", "fw", "ft", "proto", "tcp"}), kExitOk) << err();
  const Json json = Json::parse(out());
  EXPECT_EQ(json["changed"], false) << out();
  ASSERT_EQ(json["present"].size(), 1U);
  EXPECT_EQ(json["present"][0]["proto"], "tcp");
  EXPECT_EQ(json["present"][0]["counter"], true);
  EXPECT_EQ(forward_rules(), before);
}

// The rules flowbulk writes carry `comment "flowbulk"`, as nft reads it;
// delete without proto takes those and leaves the operator's own.
TEST_F(NftWrittenOffloadTest, FlowbulksRulesAreMarkedAndDeleteTakesOnlyThose) {
  load_forward_chain("    meta l4proto tcp flow add @ft\n");
  const auto own = forward_rules();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft", "proto", "udp", "counter"}), kExitOk)
      << err();
  ASSERT_EQ(run({"-j", "offload", "list"}), kExitOk) << err();
  Json json = Json::parse(out());
  ASSERT_EQ(json["offloads"].size(), 2U) << out();
  EXPECT_EQ(json["offloads"][0]["proto"], "udp");
  EXPECT_EQ(json["offloads"][0]["comment"], "flowbulk");
  EXPECT_EQ(json["offloads"][0]["flowbulk"], true);
  EXPECT_EQ(json["offloads"][1]["proto"], "tcp");
  EXPECT_TRUE(json["offloads"][1]["comment"].is_null());
  ASSERT_EQ(run({"offload", "list"}), kExitOk) << err();
  EXPECT_NE(out().find(" flowbulk\n"), std::string::npos) << out();

  ASSERT_EQ(run({"offload", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_NE(out().find("left, not written by flowbulk:\n  chain forward: meta l4proto tcp flow "
                       "add @ft (handle"),
            std::string::npos)
      << out();
  EXPECT_EQ(forward_rules(), own);
}

// A forward base chain with another name (iptables-nft's FORWARD,
// firewalld's filter_FORWARD): offload add uses it.
TEST_F(NftWrittenOffloadTest, AForwardChainNamedFwdIsUsed) {
  in_.str(
      "table inet fw {\n"
      "  chain FWD { type filter hook forward priority filter; policy drop; "
      "ct state established accept; }\n"
      "}\n");
  ASSERT_EQ(run({"-f", "-"}), kExitOk) << err();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_FALSE(nft_kernel().chain(NFPROTO_INET, "fw", "forward"));
  const auto rules = nft_kernel().rules(NFPROTO_INET, "fw", "FWD");
  ASSERT_EQ(rules.size(), 3U) << ::testing::PrintToString(rules);
  EXPECT_NE(rules[0].find("cmp 6 flow_offload @ft"), std::string::npos) << rules[0];
  EXPECT_NE(rules[1].find("cmp 17 flow_offload @ft"), std::string::npos) << rules[1];
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_NE(out().find("nothing changed"), std::string::npos) << out();

  // A second one: which of them is for the operator to say.
  in_.clear();
  in_.str("table inet fw { chain early { type filter hook forward priority -10; }; }\n");
  ASSERT_EQ(run({"-f", "-"}), kExitOk) << err();
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("table inet fw has 2 base chains at hook forward: FWD (priority 0), early "
                       "(priority -10); name one with \"chain NAME\""),
            std::string::npos)
      << err();
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft", "chain", "early"}), kExitOk) << err();
  EXPECT_EQ(nft_kernel().rules(NFPROTO_INET, "fw", "early").size(), 2U);
}

// A table another process owns (nft -i, firewalld: NFT_TABLE_F_OWNER):
// the kernel's EPERM says nothing, flowbulk says who.
TEST_F(OffloadTest, AnOwnedTableIsNamedWithItsOwner) {
  const uint64_t accept = firewall();
  nft_kernel().set_table_owner(NFPROTO_INET, "fw", 812);
  env_.netlink_owner = [](uint32_t portid) {
    return portid == 812 ? std::string("process 812 (firewalld)") : std::string();
  };
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("cannot add offload rule for flowtable inet fw ft: table inet fw is owned "
                       "by process 812 (firewalld) (flags owner): only that process may change "
                       "it"),
            std::string::npos)
      << err();
  EXPECT_EQ(forward_rules(),
            (std::vector<std::string>{std::to_string(accept) + ": immediate accept"}));
  EXPECT_EQ(run({"offload", "delete", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("table inet fw is owned by process 812 (firewalld)"), std::string::npos)
      << err();
  env_.netlink_owner = nullptr;
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("is owned by netlink port 812 (flags owner)"), std::string::npos) << err();
}

// Rules that match more than a protocol are listed, as "other", and do not
// stand in for offload add's rules.
TEST_F(NftWrittenOffloadTest, OtherMatchesAreListedButNotTakenForTheProtocol) {
  in_.str("table inet fw { set protos { type inet_proto; elements = { tcp }; }; }\n");
  ASSERT_EQ(run({"-f", "-"}), kExitOk) << err();
  load_forward_chain(
      "    iifname \"eth0\" meta l4proto tcp flow add @ft\n"
      "    meta l4proto @protos flow add @ft\n"
      "    meta l4proto != { tcp, udp } flow add @ft\n");
  ASSERT_EQ(forward_rules().size(), 3U);
  ASSERT_EQ(run({"-j", "offload", "list"}), kExitOk) << err();
  const Json json = Json::parse(out());
  ASSERT_EQ(json["offloads"].size(), 3U) << out();
  for (const auto& rule : json["offloads"]) {
    EXPECT_EQ(rule["proto"], "other") << rule;
  }
  ASSERT_EQ(run({"-j", "offload", "add", "inet", "fw", "ft", "proto", "tcp"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out())["added"].size(), 1U) << out();
  EXPECT_EQ(forward_rules().size(), 4U);
}

}  // namespace
}  // namespace flowbulk::testing

namespace flowbulk::testing {
namespace {

TEST_F(CliTest, JsonOfANameThatIsNotUtf8IsReplacedNotAborted) {
  nft_kernel().add_table(NFPROTO_INET, "bad\xff\xfe");
  ASSERT_EQ(run({"-j", "table", "list"}), kExitOk) << err();
  const Json json = Json::parse(out());
  EXPECT_EQ(json["tables"][0]["name"], "bad\xEF\xBF\xBD\xEF\xBF\xBD");  // U+FFFD twice
}

TEST_F(CliTest, EveryJsonOutputIsAJsonDocument) {
  for (const std::vector<std::string>& words :
       std::vector<std::vector<std::string>>{{"-j", "-V"},
                                             {"-j", "help"},
                                             {"-j", "-h"},
                                             {"-j", "offload", "help"},
                                             {"-j", "table", "help"},
                                             {"-j", "stats", "help"}}) {
    ASSERT_EQ(run(words), kExitOk) << err();
    const Json json = Json::parse(out(), nullptr, false);
    EXPECT_FALSE(json.is_discarded()) << ::testing::PrintToString(words) << ": " << out();
    EXPECT_EQ(json.value("schema", 0), 2) << out();
  }
}

}  // namespace
}  // namespace flowbulk::testing
