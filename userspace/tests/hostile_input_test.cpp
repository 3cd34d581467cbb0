// SPDX-License-Identifier: GPL-2.0
// -f input built to exhaust memory or stack: refused with exit 2 in one
// pass over the text, before any parser (flowbulk's or nft's) sees it.
#include <string>

#include "cli_fixture.h"
#include "error.h"
#include "input_bounds.h"

namespace flowbulk::testing {
namespace {

constexpr size_t kHostileDepth = 2'000'000;

// An early_ingress flowtable (so the tool parses and prints the document
// itself) carrying `depth` nested arrays.
std::string deep_json(size_t depth) {
  return R"({"nftables": [{"add": {"flowtable": {"family": "inet", "table": "t", "name": "f",
      "hook": "early_ingress", "prio": 0, "dev": ["eth0"], "x": )" +
         std::string(depth, '[') + std::string(depth, ']') + "}}}]}";
}

TEST_F(CliTest, DeeplyNestedJsonIsRefusedBeforeParsing) {
  in_.str(deep_json(kHostileDepth));
  EXPECT_EQ(run({"-f", "-"}), kExitUsage);
  EXPECT_NE(err().find("cannot load /dev/stdin: nested deeper than 1024 levels"), std::string::npos)
      << err().substr(0, 200);
  EXPECT_TRUE(engine_.calls.empty());
  EXPECT_TRUE(nothing_opened());
}

TEST_F(CliTest, DeeplyNestedNftSyntaxIsRefusedBeforeParsing) {
  in_.str("table inet t " + std::string(kHostileDepth, '{'));
  EXPECT_EQ(run({"-f", "-"}), kExitUsage);
  EXPECT_NE(err().find("nested deeper than 1024 levels (at byte 1038)"), std::string::npos)
      << err().substr(0, 200);
  EXPECT_TRUE(engine_.calls.empty());
  EXPECT_TRUE(nothing_opened());
}

// The limit itself passes; brackets in strings and comments do not count.
TEST_F(CliTest, NestingUpToTheLimitAndBracesInStringsAreLoaded) {
  const std::string at_limit = R"({"nftables": [{"add": {"table": {"family": "inet",
      "name": "t", "comment": "{{{[[[\"{{{", "x": )" +
                               std::string(kMaxRulesetNesting - 5, '[') +
                               std::string(kMaxRulesetNesting - 5, ']') + "}}}]}";
  in_.str(at_limit);
  EXPECT_EQ(run({"-f", "-"}), kExitOk) << err().substr(0, 200);
  EXPECT_EQ(engine_.calls.size(), 1U);
  in_.clear();
  in_.str("table inet t { # {{{{\n chain c { comment \"{{{{\"; }\n}\n" +
          std::string(kMaxRulesetNesting, '{') + std::string(kMaxRulesetNesting, '}'));
  EXPECT_EQ(run({"-f", "-"}), kExitOk) << err().substr(0, 200);
  EXPECT_EQ(engine_.calls.size(), 2U);
  in_.clear();
  in_.str(std::string(kMaxRulesetNesting + 1, '{'));
  EXPECT_EQ(run({"-f", "-"}), kExitUsage);
  EXPECT_EQ(engine_.calls.size(), 2U);
}

}  // namespace
}  // namespace flowbulk::testing
