// SPDX-License-Identifier: GPL-2.0
// offload add / list / delete against the semantic fake nf_tables: what the
// chain holds afterwards, not which bytes were sent.
#include <linux/in.h>
#include <linux/netfilter.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "error.h"

namespace flowbulk::testing {
namespace {

using Json = nlohmann::ordered_json;

constexpr uint32_t kForward = NF_INET_FORWARD;

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
  EXPECT_NE(err().find("in chain forward after rule handle 999: chain forward has no rule with "
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
// then a clear failure with nothing of ours written.
TEST_F(OffloadTest, ARulesetThatNeverHoldsStillFailsAfterTenAttempts) {
  firewall();
  const auto before = forward_rules();
  std::function<void()> busy = [this, &busy] {
    nft_kernel().add_table(NFPROTO_INET, "t" + std::to_string(nft_kernel().generation()));
    nft_kernel().before_next_batch(busy);
  };
  nft_kernel().before_next_batch(busy);
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("the ruleset changed under each of 10 attempts; nothing was changed"),
            std::string::npos)
      << err();
  EXPECT_EQ(nft_kernel().stale_batches(), 10U);
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
  EXPECT_NE(err().find("cannot add offload rule for flowtable inet fw nope in chain forward: "),
            std::string::npos)
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

  // Not half of it: proto tcp is not the set's rule.
  EXPECT_EQ(run({"offload", "delete", "inet", "fw", "ft", "proto", "tcp"}), kExitFailure);
  EXPECT_EQ(forward_rules(), before);
  ASSERT_EQ(run({"offload", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_TRUE(forward_rules().empty());
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
      "  chain offloads { meta l4proto tcp flow add @ft; }\n"
      "  chain forward { type filter hook forward priority filter; jump offloads; }\n"
      "  chain early { type filter hook forward priority -10; meta l4proto udp flow add @ft; }\n"
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
