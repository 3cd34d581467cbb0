// SPDX-License-Identifier: GPL-2.0
#include "early_ingress.h"

#include <gtest/gtest.h>
#include <linux/netfilter.h>

#include <nlohmann/json.hpp>

#include "error.h"

namespace flowbulk {
namespace {

TEST(EarlyIngress, RewritesFlowtableInTableBlockKeepingColumns) {
  const std::string input =
      "table inet fw {\n"
      "  flowtable ft {\n"
      "    hook early_ingress priority 0; devices = { eth0, eth1 }\n"
      "  }\n"
      "  chain forward { type filter hook forward priority 0; flow add @ft }\n"
      "}\n";
  auto result = rewrite_early_ingress(input);
  EXPECT_EQ(result.ruleset.size(), input.size());
  EXPECT_NE(result.ruleset.find("hook ingress       priority 0;"), std::string::npos);
  EXPECT_EQ(result.ruleset.find("early_ingress"), std::string::npos);
  ASSERT_EQ(result.flowtables.size(), 1U);
  EXPECT_EQ(result.flowtables[0],
            (FlowtableRef{.family = NFPROTO_INET, .table = "fw", .flowtable = "ft"}));
}

TEST(EarlyIngress, LeavesPlainIngressAndOtherTextAlone) {
  const std::string input =
      "# hook early_ingress in a comment\n"
      "table ip t { flowtable f { hook ingress priority 0; devices = { lo }; } }\n"
      "table netdev n { chain c { type filter hook ingress device lo priority 0; } }\n";
  auto result = rewrite_early_ingress(input);
  EXPECT_EQ(result.ruleset, input);
  EXPECT_TRUE(result.flowtables.empty());
  // The flowtable said ingress (to be detached); the netdev chain is no
  // flowtable.
  EXPECT_EQ(result.ingress,
            (std::vector<FlowtableRef>{{.family = NFPROTO_IPV4, .table = "t", .flowtable = "f"}}));
}

// A flowtable declared ingress in one place and early_ingress in another
// is attached, not detached; ingress in JSON counts as in nft syntax.
TEST(EarlyIngress, IngressFlowtablesAreListedUnlessAlsoEarlyIngress) {
  auto result = rewrite_early_ingress(
      "table inet a { flowtable f { hook ingress priority 0; } }\n"
      "add flowtable inet a f { hook early_ingress priority 0; }\n"
      "table ip6 b { flowtable g { hook ingress priority 0; } }\n");
  EXPECT_EQ(result.flowtables,
            (std::vector<FlowtableRef>{{.family = NFPROTO_INET, .table = "a", .flowtable = "f"}}));
  EXPECT_EQ(result.ingress,
            (std::vector<FlowtableRef>{{.family = NFPROTO_IPV6, .table = "b", .flowtable = "g"}}));
  auto json = rewrite_early_ingress_json(
      R"({"nftables": [{"add": {"flowtable": {"family": "ip", "table": "t", "name": "f",)"
      R"( "hook": "ingress", "prio": 0}}}]})");
  EXPECT_TRUE(json.flowtables.empty());
  EXPECT_EQ(json.ingress,
            (std::vector<FlowtableRef>{{.family = NFPROTO_IPV4, .table = "t", .flowtable = "f"}}));
}

TEST(EarlyIngress, DefaultFamilyIsIp) {
  auto result = rewrite_early_ingress(
      "table t {\nflowtable f {\nhook early_ingress priority 1\n"
      "devices = { lo }\n}\n}\n");
  ASSERT_EQ(result.flowtables.size(), 1U);
  EXPECT_EQ(result.flowtables[0].family, NFPROTO_IPV4);
  EXPECT_EQ(result.flowtables[0].table, "t");
}

TEST(EarlyIngress, CommandFormAtTopLevel) {
  auto result = rewrite_early_ingress(
      "add table ip6 t6\n"
      "add flowtable ip6 t6 f6 { hook early_ingress priority 10; devices = { lo }; }\n"
      "create flowtable inet t ff { hook early_ingress priority 10; devices = { lo }; }\n");
  ASSERT_EQ(result.flowtables.size(), 2U);
  EXPECT_EQ(result.flowtables[0],
            (FlowtableRef{.family = NFPROTO_IPV6, .table = "t6", .flowtable = "f6"}));
  EXPECT_EQ(result.flowtables[1],
            (FlowtableRef{.family = NFPROTO_INET, .table = "t", .flowtable = "ff"}));
}

TEST(EarlyIngress, QuotedNamesAndStringsAreHandled) {
  auto result = rewrite_early_ingress(
      "table inet \"my-table\" {\n"
      "  chain c { type filter hook forward priority 0; comment \"hook early_ingress {\" }\n"
      "  flowtable \"ft\" { hook early_ingress priority 0; devices = { lo } }\n"
      "}\n");
  ASSERT_EQ(result.flowtables.size(), 1U);
  EXPECT_EQ(result.flowtables[0].table, "my-table");
  EXPECT_EQ(result.flowtables[0].flowtable, "ft");
  EXPECT_NE(result.ruleset.find("comment \"hook early_ingress {\""), std::string::npos);
}

TEST(EarlyIngress, SeveralTablesAndFlowtablesInOrder) {
  auto result = rewrite_early_ingress(
      "table ip a { flowtable x { hook early_ingress priority 0; devices = { lo } } }\n"
      "table ip b { flowtable y { hook ingress priority 0; devices = { lo } }\n"
      "             flowtable z { hook early_ingress priority 0; devices = { lo } } }\n");
  ASSERT_EQ(result.flowtables.size(), 2U);
  EXPECT_EQ(result.flowtables[0].flowtable, "x");
  EXPECT_EQ(result.flowtables[1].table, "b");
  EXPECT_EQ(result.flowtables[1].flowtable, "z");
}

TEST(EarlyIngress, VariableNamesAreRejected) {
  EXPECT_THROW(rewrite_early_ingress("table inet $t { flowtable f { hook early_ingress priority 0;"
                                     " devices = { lo } } }\n"),
               UsageError);
}

TEST(EarlyIngress, FamilyWithoutFlowtableSupportIsRejected) {
  EXPECT_THROW(rewrite_early_ingress("table bridge b { flowtable f { hook early_ingress priority 0;"
                                     " devices = { lo } } }\n"),
               UsageError);
}

TEST(EarlyIngress, EarlyIngressOutsideFlowtableIsLeftForNftToReject) {
  const std::string input =
      "table netdev n { chain c { type filter hook early_ingress device lo "
      "priority 0; } }\n";
  auto result = rewrite_early_ingress(input);
  EXPECT_EQ(result.ruleset, input);
  EXPECT_TRUE(result.flowtables.empty());
}

// nft JSON (`nft -j -f`): the same rewrite on the document, not the text.
TEST(EarlyIngressJson, TellsJsonFromNftSyntax) {
  EXPECT_TRUE(is_json_ruleset("  \n{\"nftables\": []}"));
  EXPECT_FALSE(is_json_ruleset("table inet fw { }"));
  EXPECT_FALSE(is_json_ruleset("# {\n"));
  EXPECT_FALSE(is_json_ruleset(""));
}

TEST(EarlyIngressJson, RewritesAddCreateAndListedFlowtables) {
  const std::string input = R"({"nftables": [
    {"metainfo": {"json_schema_version": 1}},
    {"add": {"table": {"family": "inet", "name": "fw"}}},
    {"add": {"flowtable": {"family": "inet", "table": "fw", "name": "a", "hook": "early_ingress",
                           "prio": 0, "dev": ["eth0"]}}},
    {"create": {"flowtable": {"family": "ip", "table": "t", "name": "b",
                              "hook": "early_ingress", "prio": 10, "dev": "eth1"}}},
    {"flowtable": {"family": "ip6", "table": "t6", "name": "c", "hook": "early_ingress",
                   "prio": 0, "dev": ["eth2"]}},
    {"add": {"flowtable": {"family": "inet", "table": "fw", "name": "plain", "hook": "ingress",
                           "prio": 0, "dev": ["eth3"]}}},
    {"add": {"flowtable": {"family": "inet", "table": "fw", "name": "a", "hook": "early_ingress",
                           "prio": 0, "dev": ["eth0"]}}}]})";
  const auto result = rewrite_early_ingress_json(input);
  EXPECT_EQ(result.ruleset.find("early_ingress"), std::string::npos) << result.ruleset;
  const auto document = nlohmann::json::parse(result.ruleset);
  EXPECT_EQ(document["nftables"][2]["add"]["flowtable"]["hook"], "ingress");
  EXPECT_EQ(document["nftables"][2]["add"]["flowtable"]["dev"], nlohmann::json::array({"eth0"}));
  EXPECT_EQ(document["nftables"][4]["flowtable"]["hook"], "ingress");
  ASSERT_EQ(result.flowtables.size(), 3U);  // "a" once
  EXPECT_EQ(result.flowtables[0],
            (FlowtableRef{.family = NFPROTO_INET, .table = "fw", .flowtable = "a"}));
  EXPECT_EQ(result.flowtables[1],
            (FlowtableRef{.family = NFPROTO_IPV4, .table = "t", .flowtable = "b"}));
  EXPECT_EQ(result.flowtables[2],
            (FlowtableRef{.family = NFPROTO_IPV6, .table = "t6", .flowtable = "c"}));
}

TEST(EarlyIngressJson, LeavesADocumentWithoutEarlyIngressByteForByte) {
  const std::string input =
      "{\"nftables\": [ {\"add\": {\"table\": {\"family\": \"ip\", \"name\": \"early_ingress\"}}} "
      "]}\n";
  const auto result = rewrite_early_ingress_json(input);
  EXPECT_EQ(result.ruleset, input);
  EXPECT_TRUE(result.flowtables.empty());
}

TEST(EarlyIngressJson, RefusesWhatItCannotRead) {
  EXPECT_THROW(rewrite_early_ingress_json("{\"nftables\": [ }"), UsageError);
  EXPECT_THROW(rewrite_early_ingress_json(
                   R"({"nftables": [{"add": {"flowtable": {"family": "inet", "name": "a",
                                                             "hook": "early_ingress"}}}]})"),
               UsageError);
  EXPECT_THROW(rewrite_early_ingress_json(
                   R"({"nftables": [{"add": {"flowtable": {"family": "netdev", "table": "t",
                                                             "name": "a",
                                                             "hook": "early_ingress"}}}]})"),
               UsageError);
}

}  // namespace
}  // namespace flowbulk
