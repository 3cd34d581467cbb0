// SPDX-License-Identifier: GPL-2.0
// Names and priorities as nft takes them: the tool hands them to libnftables
// (the real one, talking to the semantic fake nf_tables) instead of judging
// them itself, so any name the kernel allows works and nft's priority
// expressions are evaluated by nft.
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <nf_flow_bulk.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "error.h"
#include "names.h"

namespace flowbulk::testing {
namespace {

using Json = nlohmann::json;

class NamesTest : public CliTest {
 protected:
  NamesTest() { nft_kernel(); }
  std::vector<int32_t> priorities() {
    std::vector<int32_t> result;
    for (const auto& flowtable : nft_kernel().state().flowtables) {
      result.push_back(flowtable.priority);
    }
    return result;
  }
};

// Names the kernel and nft's JSON take but nft's listing cannot give back
// (`table inet my table {`): a table someone else made may have one, a
// table flowbulk makes may not.
std::vector<std::string> unusual_names() {
  return {"my table", "1st", "a:b@c", "caf\xc3\xa9", "x\"y", "-x", "counter", "flow", "table"};
}

TEST_F(NamesTest, TablesWithAnyNameTheKernelTakesAreListedAndDeleted) {
  for (const std::string& name : unusual_names()) {
    nft_kernel().add_table(NFPROTO_INET, name);
    ASSERT_EQ(run({"-j", "table", "list", "inet"}), kExitOk) << err();
    const Json listed = Json::parse(out());
    ASSERT_EQ(listed["tables"].size(), 1U) << out();
    EXPECT_EQ(listed["tables"][0]["name"], name);
    ASSERT_EQ(run({"table", "delete", "inet", name}), kExitOk) << name << ": " << err();
    EXPECT_TRUE(nft_kernel().state().tables.empty()) << name;
  }
}

// What flowbulk creates, nft can read back from its own listing: table,
// flowtable and chain names follow nft's identifiers and avoid its
// keywords; the refusal is a usage error before anything is sent.
TEST_F(NamesTest, NewNamesAreOnesNftReadsBack) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  nft_kernel().add_flowtable(NFPROTO_INET, "fw", "ft");
  for (const std::string& name : unusual_names()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(run({"table", "add", "inet", name}), kExitUsage);
    EXPECT_NE(
        err().find("Error: table name \"" + name + "\" would make a ruleset nft cannot read back"),
        std::string::npos)
        << err();
    EXPECT_EQ(run({"flowtable", "add", "inet", "fw", name, "hook", "ingress", "devices", "eth0"}),
              kExitUsage);
    EXPECT_NE(err().find("flowtable name \"" + name + "\" would make"), std::string::npos) << err();
    EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft", "chain", name}), kExitUsage);
    EXPECT_NE(err().find("chain name \"" + name + "\" would make"), std::string::npos) << err();
  }
  EXPECT_EQ(nft_kernel().batches(), 0U);
  for (const std::string name : {"my-table.v2", "_x", ".x", "a/b", "state", "last", "Counter"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(run({"table", "add", "inet", name}), kExitOk) << err();
    EXPECT_EQ(run({"flowtable", "add", "inet", name, name, "hook", "ingress", "devices", "eth0"}),
              kExitOk)
        << err();
    EXPECT_EQ(run({"offload", "add", "inet", name, name, "chain", name}), kExitOk) << err();
  }
}

TEST_F(NamesTest, EveryKeywordIsRefusedAndTheListIsSorted) {
  EXPECT_TRUE(std::is_sorted(nft_unreadable_keywords().begin(), nft_unreadable_keywords().end()));
  for (std::string_view keyword : nft_unreadable_keywords()) {
    EXPECT_FALSE(nft_readable_name(keyword)) << keyword;
  }
  EXPECT_TRUE(nft_readable_name("fw"));
}

TEST_F(NamesTest, EmptyNamesAreUsageErrors) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  EXPECT_EQ(run({"table", "add", "inet", ""}), kExitUsage);
  EXPECT_NE(err().find("table name is empty"), std::string::npos) << err();
  EXPECT_EQ(run({"table", "delete", "inet", ""}), kExitUsage);
  EXPECT_EQ(run({"flowtable", "add", "inet", "fw", "", "hook", "ingress", "devices", "eth0"}),
            kExitUsage);
  EXPECT_NE(err().find("flowtable name is empty"), std::string::npos) << err();
  EXPECT_EQ(run({"attach", "inet", "fw", ""}), kExitUsage);
  EXPECT_EQ(run({"offload", "add", "inet", "fw", "ft", "chain", ""}), kExitUsage);
  EXPECT_NE(err().find("chain name is empty"), std::string::npos) << err();
  EXPECT_EQ(nft_kernel().batches(), 0U);
  EXPECT_EQ(transports_.opened(NETLINK_GENERIC), 0);
}

TEST_F(NamesTest, AFlowtableInATableWithAnUnusualNameIsAttached) {
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  EXPECT_EQ(run({"attach", "inet", "my table", "ft 2"}), kExitOk) << err();
  EXPECT_EQ(genl().sent().size(), 2U);
}

// The kernel's limit (NFT_NAME_MAXLEN - 1 bytes), for new names and for
// names of what exists.
TEST_F(NamesTest, TheKernelsLengthLimit) {
  const std::string longest(255, 'a');
  const std::string too_long(256, 'a');
  EXPECT_EQ(run({"table", "add", "inet", too_long}), kExitUsage);
  EXPECT_NE(err().find("table name is longer than 255 bytes"), std::string::npos) << err();
  EXPECT_EQ(run({"table", "delete", "inet", too_long}), kExitUsage);
  EXPECT_EQ(nft_kernel().batches(), 0U);
  EXPECT_EQ(run({"table", "add", "inet", longest}), kExitOk) << err();
  EXPECT_EQ(
      run({"flowtable", "add", "inet", longest, too_long, "hook", "ingress", "devices", "eth0"}),
      kExitUsage);
  EXPECT_NE(err().find("flowtable name is longer than 255 bytes"), std::string::npos) << err();
  EXPECT_EQ(
      run({"flowtable", "add", "inet", longest, longest, "hook", "ingress", "devices", "eth0"}),
      kExitOk)
      << err();
  EXPECT_EQ(run({"offload", "add", "inet", longest, longest, "chain", too_long}), kExitUsage);
  EXPECT_NE(err().find("chain name is longer than 255 bytes"), std::string::npos) << err();
  EXPECT_EQ(run({"offload", "add", "inet", longest, longest, "chain", longest}), kExitOk) << err();
  EXPECT_EQ(run({"table", "delete", "inet", longest}), kExitOk) << err();
}

TEST_F(NamesTest, ANameThatIsNotUtf8CannotBeWrittenAsNftCommands) {
  EXPECT_EQ(run({"table", "delete", "inet", "bad\xff"}), kExitUsage);
  EXPECT_NE(err().find("not valid UTF-8"), std::string::npos) << err();
}

TEST_F(NamesTest, FlowtablePriorityExpressionsAreEvaluatedByNft) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  const std::vector<std::pair<std::vector<std::string>, int32_t>> cases = {
      {{"filter", "+", "10"}, 10},
      {{"filter"}, 0},
      {{"filter", "-", "5"}, -5},
      {{"-5"}, -5},
      {{"42"}, 42},
  };
  for (const auto& [words, expected] : cases) {
    std::vector<std::string> command = {"flowtable", "add",  "inet",    "fw",
                                        "ft",        "hook", "ingress", "priority"};
    command.insert(command.end(), words.begin(), words.end());
    command.insert(command.end(), {"devices", "eth0"});
    ASSERT_EQ(run(command), kExitOk) << ::testing::PrintToString(words) << ": " << err();
    EXPECT_EQ(priorities(), std::vector<int32_t>{expected}) << ::testing::PrintToString(words);
    ASSERT_EQ(run({"flowtable", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  }
}

TEST_F(NamesTest, PriorityAfterTheDevicesAndWithCounter) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  ASSERT_EQ(run({"flowtable", "add", "inet", "fw", "ft", "hook", "ingress", "devices", "eth0",
                 "priority", "filter", "+", "10", "counter"}),
            kExitOk)
      << err();
  EXPECT_EQ(priorities(), std::vector<int32_t>{10});
  EXPECT_EQ(nft_kernel().state().flowtables[0].flags, static_cast<uint32_t>(NFT_FLOWTABLE_COUNTER));
}

TEST_F(NamesTest, PrioritiesNftRejectsAreNftsMessage) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  // dstnat is a chain priority; a flowtable knows only filter.
  for (const std::vector<std::string>& words :
       std::vector<std::vector<std::string>>{{"dstnat"}, {"foo", "+", "1"}}) {
    std::vector<std::string> command = {"flowtable", "add",  "inet",    "fw",
                                        "ft",        "hook", "ingress", "priority"};
    command.insert(command.end(), words.begin(), words.end());
    command.insert(command.end(), {"devices", "eth0"});
    EXPECT_EQ(run(command), kExitFailure) << ::testing::PrintToString(words);
    EXPECT_NE(err().find("cannot add flowtable inet fw ft: invalid priority expression"),
              std::string::npos)
        << err();
  }
  EXPECT_TRUE(nft_kernel().state().flowtables.empty());
}

TEST_F(NamesTest, APriorityCannotEndItsClause) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  EXPECT_EQ(run({"flowtable", "add", "inet", "fw", "ft", "hook", "ingress", "priority",
                 "0; }; delete table inet fw; add table inet x {", "devices", "eth0"}),
            kExitUsage);
  EXPECT_EQ(nft_kernel().batches(), 0U);
  EXPECT_EQ(nft_kernel().state().tables.size(), 1U);
}

TEST_F(NamesTest, AFlowtableInATableNftSyntaxCannotNameTakesANumericPriority) {
  nft_kernel().add_table(NFPROTO_INET, "my table");
  ASSERT_EQ(run({"flowtable", "add", "inet", "my table", "ft", "hook", "ingress", "priority", "10",
                 "devices", "eth0,eth1"}),
            kExitOk)
      << err();
  EXPECT_EQ(priorities(), std::vector<int32_t>{10});
  std::vector<std::string> devices = nft_kernel().state().flowtables[0].devices;
  std::sort(devices.begin(), devices.end());
  EXPECT_EQ(devices, (std::vector<std::string>{"eth0", "eth1"}));
  ASSERT_EQ(run({"flowtable", "delete", "inet", "my table", "ft"}), kExitOk) << err();
  // nft 1.0.6's JSON has no priority expressions and no flowtable flags.
  EXPECT_EQ(run({"flowtable", "add", "inet", "my table", "ft", "hook", "ingress", "priority",
                 "filter", "+", "10", "devices", "eth0"}),
            kExitUsage);
  EXPECT_NE(err().find("give the priority as a number"), std::string::npos) << err();
  EXPECT_TRUE(nft_kernel().state().flowtables.empty());
}

// nft keywords are names the kernel takes and nft's syntax cannot write:
// flowbulk makes none, but works with a table and flowtable someone else
// named so, without turning them into a syntax error about a command the
// user never typed.
TEST_F(NamesTest, ObjectsSomeoneElseNamedWithNftKeywords) {
  for (const std::string name : {"flow", "table", "counter", "ip", "inet", "offload"}) {
    SCOPED_TRACE(name);
    nft_kernel().add_table(NFPROTO_INET, name);
    nft_kernel().add_flowtable(NFPROTO_INET, name, name);
    ASSERT_EQ(run({"offload", "add", "inet", name, name}), kExitOk) << err();
    EXPECT_EQ(nft_kernel().rules(NFPROTO_INET, name, "forward").size(), 2U);
    ASSERT_EQ(run({"-j", "offload", "list", "inet", name}), kExitOk) << err();
    EXPECT_EQ(Json::parse(out())["offloads"].size(), 2U) << out();
    ASSERT_EQ(run({"offload", "delete", "inet", name, name}), kExitOk) << err();
    ASSERT_EQ(run({"flowtable", "delete", "inet", name, name}), kExitOk) << err();
    ASSERT_EQ(run({"flowtable", "add", "inet", name, "ft", "hook", "ingress", "devices", "eth0"}),
              kExitOk)
        << err();
    ASSERT_EQ(run({"table", "delete", "inet", name}), kExitOk) << err();
  }
  EXPECT_TRUE(nft_kernel().state().tables.empty());
}

// A keyword table name with what only nft's syntax can say: nft's error,
// and what to do instead.
TEST_F(NamesTest, AKeywordNameWithCounterSaysWhatToDoInstead) {
  nft_kernel().add_table(NFPROTO_INET, "flow");
  EXPECT_EQ(run({"flowtable", "add", "inet", "flow", "ft", "hook", "ingress", "devices", "eth0",
                 "counter"}),
            kExitFailure);
  EXPECT_NE(err().find("syntax error"), std::string::npos) << err();
  EXPECT_NE(err().find("one of its keywords; with a numeric priority (filter is 0) and without "
                       "counter flowbulk writes the names as JSON"),
            std::string::npos)
      << err();
  EXPECT_TRUE(nft_kernel().state().flowtables.empty());
}

// -f with an nft JSON ruleset, as `nft -j -f` loads it: through the real
// libnftables, early_ingress flowtables made at ingress and attached.
TEST_F(NamesTest, AJsonRulesetIsLoadedAndItsEarlyIngressFlowtablesAttached) {
  in_.str(R"({"nftables": [{"add": {"table": {"family": "inet", "name": "my table"}}}]})");
  ASSERT_EQ(run({"-f", "-"}), kExitOk) << err();
  ASSERT_EQ(nft_kernel().state().tables.size(), 1U);
  EXPECT_EQ(nft_kernel().state().tables[0].name, "my table");

  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  in_.clear();  // the first -f - read to the end
  in_.str(R"({"nftables": [
      {"add": {"flowtable": {"family": "inet", "table": "my table", "name": "ft",
                             "hook": "early_ingress", "prio": 5, "dev": ["eth0"]}}}]})");
  ASSERT_EQ(run({"-j", "-f", "-"}), kExitOk) << err();
  ASSERT_EQ(nft_kernel().state().flowtables.size(), 1U) << out() << err();
  EXPECT_EQ(nft_kernel().state().flowtables[0].priority, 5);
  const Json result = Json::parse(out());
  ASSERT_EQ(result["attached"].size(), 1U) << out();
  EXPECT_EQ(result["attached"][0]["table"], "my table");
  ASSERT_EQ(genl().sent().size(), 2U);
  const auto* header = reinterpret_cast<const nlmsghdr*>(genl().sent()[1].data());
  EXPECT_EQ(static_cast<const genlmsghdr*>(mnl_nlmsg_get_payload(header))->cmd, NFB_CMD_ATTACH);
}

TEST_F(NamesTest, AJsonRulesetThatIsNotJsonSaysSo) {
  in_.str("{\"nftables\": [ {\"add\": ");
  EXPECT_EQ(run({"-f", "-"}), kExitUsage);
  EXPECT_NE(err().find("cannot load /dev/stdin: not valid JSON"), std::string::npos) << err();
  EXPECT_EQ(nft_kernel().batches(), 0U);
}

TEST_F(NamesTest, OffloadIntoATableAndChainWithUnusualNames) {
  nft_kernel().add_table(NFPROTO_INET, "my table");
  nft_kernel().add_flowtable(NFPROTO_INET, "my table", "ft");
  nft_kernel().add_base_chain(NFPROTO_INET, "my table", "fwd 1", NF_INET_FORWARD, 0, NF_ACCEPT);
  ASSERT_EQ(run({"offload", "add", "inet", "my table", "ft", "chain", "fwd 1"}), kExitOk) << err();
  EXPECT_EQ(nft_kernel().rules(NFPROTO_INET, "my table", "fwd 1").size(), 2U);
  ASSERT_EQ(run({"offload", "delete", "inet", "my table", "ft", "chain", "fwd 1"}), kExitOk)
      << err();
  EXPECT_TRUE(nft_kernel().rules(NFPROTO_INET, "my table", "fwd 1").empty());
}

}  // namespace
}  // namespace flowbulk::testing
