// SPDX-License-Identifier: GPL-2.0
#include "rollback.h"

#include <gtest/gtest.h>

namespace flowbulk {
namespace {

using Json = nlohmann::json;

TEST(Rollback, OnlyObjectsTheLoadCreatedAreDeletedRulesFirstTablesLast) {
  const Json before = Json::parse(R"({"nftables": [
      {"metainfo": {"json_schema_version": 1}},
      {"table": {"family": "ip", "name": "pre", "handle": 3}},
      {"chain": {"family": "ip", "table": "pre", "name": "c", "handle": 1}},
      {"set": {"family": "ip", "table": "pre", "name": "s", "handle": 2}},
      {"table": {"family": "inet", "name": "other", "handle": 4}}]})");
  const Json echo = Json::parse(R"({"nftables": [
      {"add": {"table": {"family": "ip", "name": "pre", "handle": 3}}},
      {"add": {"chain": {"family": "ip", "table": "pre", "name": "c", "handle": 1}}},
      {"add": {"chain": {"family": "ip", "table": "pre", "name": "d", "handle": 5}}},
      {"add": {"map": {"family": "ip", "table": "pre", "name": "m", "handle": 6}}},
      {"add": {"element": {"family": "ip", "table": "pre", "name": "s",
                           "elem": ["1.2.3.4"]}}},
      {"add": {"table": {"family": "inet", "name": "new", "handle": 9}}},
      {"add": {"chain": {"family": "inet", "table": "new", "name": "x", "handle": 1}}},
      {"add": {"rule": {"family": "inet", "table": "new", "chain": "x", "handle": 2}}},
      {"add": {"rule": {"family": "ip", "table": "pre", "chain": "c", "handle": 7}}}]})");
  // Not echoed by libnftables: named by the caller. One is in the new table.
  const RollbackPlan plan = plan_rollback(before, echo,
                                          {{.family = "ip", .table = "pre", .name = "ft"},
                                           {.family = "inet", .table = "new", .name = "ft"}});
  EXPECT_EQ(plan.commands, Json::parse(R"({"nftables": [
      {"delete": {"rule": {"family": "ip", "table": "pre", "chain": "c", "handle": 7}}},
      {"delete": {"map": {"family": "ip", "table": "pre", "handle": 6}}},
      {"delete": {"flowtable": {"family": "ip", "table": "pre", "name": "ft"}}},
      {"delete": {"chain": {"family": "ip", "table": "pre", "handle": 5}}},
      {"delete": {"table": {"family": "inet", "handle": 9}}}]})"));
  EXPECT_EQ(plan.command_lines,
            (std::vector<std::string>{
                "nft delete rule ip \"pre\" \"c\" handle 7", "nft delete map ip \"pre\" handle 6",
                "nft delete flowtable ip \"pre\" \"ft\"", "nft delete chain ip \"pre\" handle 5",
                "nft delete table inet handle 9"}));
  EXPECT_EQ(plan.kept,
            (std::vector<std::string>{"elements added to set ip pre s",
                                      "what the load did to objects that existed before it"}));
}

TEST(Rollback, DeletionsInTheFileAreReportedNotUndone) {
  const Json echo = Json::parse(R"({"nftables": [
      {"delete": {"table": {"family": "ip", "name": "gone", "handle": 2}}}]})");
  const RollbackPlan plan = plan_rollback(Json::object(), echo);
  EXPECT_TRUE(plan.empty());
  EXPECT_EQ(plan.kept,
            (std::vector<std::string>{"what the load did to objects that existed before it"}));
}

TEST(Rollback, GarbageIsNotAPlan) {
  EXPECT_TRUE(plan_rollback(Json::array(), Json("x")).empty());
  EXPECT_TRUE(plan_rollback(Json::object(), Json::parse(R"({"nftables": [1, [], {"add": 2},
      {"add": {"table": {"family": "ip", "name": "t"}}}]})"))
                  .empty());
}

}  // namespace
}  // namespace flowbulk
