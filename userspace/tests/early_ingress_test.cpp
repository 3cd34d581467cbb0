// SPDX-License-Identifier: GPL-2.0
#include "early_ingress.h"

#include <gtest/gtest.h>
#include <linux/netfilter.h>

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

}  // namespace
}  // namespace flowbulk
