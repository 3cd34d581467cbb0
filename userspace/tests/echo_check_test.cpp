// SPDX-License-Identifier: GPL-2.0
// -e (print what was changed, with handles) and -c (check, change nothing)
// on every write command, against the semantic fake nf_tables and the real
// libnftables: what the kernel holds afterwards and what was printed.
#include <linux/netfilter.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "error.h"

namespace flowbulk::testing {
namespace {

using Json = nlohmann::ordered_json;

class EchoCheckTest : public CliTest {
 protected:
  EchoCheckTest() {
    nft_kernel().add_table(NFPROTO_INET, "fw");
    nft_kernel().add_flowtable(NFPROTO_INET, "fw", "ft");
  }
  // The whole ruleset, to compare before and after a check.
  std::string ruleset() {
    std::string text;
    const auto& state = nft_kernel().state();
    for (const auto& table : state.tables) {
      text += "table " + table.name + " " + std::to_string(table.handle) + "\n";
    }
    for (const auto& chain : state.chains) {
      text += "chain " + chain.table + " " + chain.name + "\n";
      for (const std::string& rule : nft_kernel().rules(chain.family, chain.table, chain.name)) {
        text += "  " + rule + "\n";
      }
    }
    for (const auto& flowtable : state.flowtables) {
      text += "flowtable " + flowtable.table + " " + flowtable.name + "\n";
    }
    return text;
  }
};

TEST_F(EchoCheckTest, TableAddEchoesTheHandle) {
  ASSERT_EQ(run({"-e", "table", "add", "inet", "new"}), kExitOk) << err();
  const uint64_t handle = nft_kernel().state().tables.back().handle;
  EXPECT_EQ(out(), "add table inet new # handle " + std::to_string(handle) + "\n");
  ASSERT_EQ(run({"-j", "-e", "table", "add", "inet", "newer"}), kExitOk) << err();
  const Json json = Json::parse(out());
  EXPECT_EQ(json["ok"], true);
  EXPECT_EQ(json["echo"][0]["add"]["table"]["name"], "newer");
  EXPECT_EQ(json["echo"][0]["add"]["table"]["handle"], nft_kernel().state().tables.back().handle);
}

TEST_F(EchoCheckTest, WithoutEchoNothingIsPrinted) {
  ASSERT_EQ(run({"table", "add", "inet", "new"}), kExitOk) << err();
  EXPECT_EQ(out(), "");
}

TEST_F(EchoCheckTest, TableAndFlowtableDeleteEcho) {
  ASSERT_EQ(run({"-e", "flowtable", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(out(), "delete flowtable inet fw ft\n");
  ASSERT_EQ(run({"-e", "table", "delete", "inet", "fw"}), kExitOk) << err();
  EXPECT_EQ(out(), "delete table inet fw\n");
  EXPECT_TRUE(nft_kernel().state().tables.empty());
}

TEST_F(EchoCheckTest, FlowtableAddEchoes) {
  ASSERT_EQ(run({"-e", "flowtable", "add", "inet", "fw", "f2", "hook", "ingress", "priority", "5",
                 "devices", "eth0,eth1"}),
            kExitOk)
      << err();
  EXPECT_EQ(out().rfind("add flowtable inet fw f2 { hook ingress priority 5; devices = { eth0, "
                        "eth1 }; }",
                        0),
            0U)
      << out();
}

TEST_F(EchoCheckTest, TableAndFlowtableChecksChangeNothing) {
  const std::string before = ruleset();
  const size_t generation = nft_kernel().generation();
  EXPECT_EQ(run({"-c", "table", "add", "inet", "new"}), kExitOk) << err();
  EXPECT_EQ(
      run({"-c", "flowtable", "add", "inet", "fw", "f2", "hook", "ingress", "devices", "eth0"}),
      kExitOk)
      << err();
  EXPECT_EQ(run({"-c", "-e", "flowtable", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(out(), "");  // nothing was deleted, so nothing is echoed
  EXPECT_EQ(run({"-j", "-c", "table", "delete", "inet", "fw"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out()), Json::parse(R"({"schema": 2, "ok": true, "check": true})"));
  EXPECT_EQ(nft_kernel().checks(), 4U);
  EXPECT_EQ(ruleset(), before);
  EXPECT_EQ(nft_kernel().generation(), generation);
}

TEST_F(EchoCheckTest, ACheckTheKernelRefusesIsAnError) {
  const std::string before = ruleset();
  // An exclusive create of a table that exists: the kernel's EEXIST.
  EXPECT_EQ(run({"-c", "table", "add", "inet", "fw"}), kExitFailure);
  EXPECT_EQ(err(), "Error: cannot add table inet fw: Could not process rule: File exists\n");
  EXPECT_EQ(run({"-c", "flowtable", "delete", "inet", "fw", "nosuch"}), kExitFailure);
  EXPECT_NE(err().find("No such file or directory"), std::string::npos) << err();
  EXPECT_EQ(ruleset(), before);
}

TEST_F(EchoCheckTest, CheckOfEarlyIngressAttachesNothing) {
  genl().expect(resolve_family(kFakeFamilyId));
  ASSERT_EQ(run({"-c", "flowtable", "add", "inet", "fw", "f2", "hook", "early_ingress", "devices",
                 "eth0"}),
            kExitOk)
      << err();
  EXPECT_EQ(out(), "would attach flowtable inet fw f2\n");
  EXPECT_EQ(genl().sent().size(), 1U);  // the family lookup, no attach
  EXPECT_EQ(nft_kernel().state().flowtables.size(), 1U);
}

TEST_F(EchoCheckTest, OffloadAddCheckPrintsThePlanAndCommitsNothing) {
  const std::string before = ruleset();
  ASSERT_EQ(run({"-c", "offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(out(),
            "would create chain inet fw forward { type filter hook forward priority 0; }\n"
            "would insert rule inet fw forward meta l4proto tcp flow add @ft comment "
            "\"flowbulk\"\n"
            "would insert rule inet fw forward meta l4proto udp flow add @ft comment "
            "\"flowbulk\"\n");
  EXPECT_EQ(nft_kernel().checks(), 1U);  // the kernel checked the write
  EXPECT_EQ(ruleset(), before);
  ASSERT_EQ(run({"-j", "-c", "offload", "add", "inet", "fw", "ft", "proto", "tcp"}), kExitOk)
      << err();
  const Json json = Json::parse(out());
  EXPECT_EQ(json["check"], true);
  EXPECT_EQ(json["changed"], false);
  EXPECT_EQ(json["would_change"], true);
  EXPECT_EQ(json["would_create_chain"], true);
  ASSERT_EQ(json["added"].size(), 1U);
  EXPECT_EQ(json["added"][0]["proto"], "tcp");
  EXPECT_EQ(ruleset(), before);
}

TEST_F(EchoCheckTest, OffloadAddCheckSaysWhatIsAlreadyThere) {
  nft_kernel().add_base_chain(NFPROTO_INET, "fw", "forward", NF_INET_FORWARD, 0, NF_DROP);
  const uint64_t tcp = nft_kernel().add_offload_rule(NFPROTO_INET, "fw", "forward", "ft",
                                                     IPPROTO_TCP, 0, "flowbulk");
  const std::string before = ruleset();
  ASSERT_EQ(run({"-c", "offload", "add", "inet", "fw", "ft", "position", "bottom"}), kExitOk)
      << err();
  EXPECT_EQ(out(),
            "would add rule inet fw forward meta l4proto udp flow add @ft comment \"flowbulk\"\n"
            "already present in chain inet fw forward: meta l4proto tcp flow add @ft comment "
            "\"flowbulk\" (handle " +
                std::to_string(tcp) + ")\n");
  ASSERT_EQ(run({"-c", "offload", "add", "inet", "fw", "ft", "proto", "tcp"}), kExitOk) << err();
  EXPECT_NE(out().find("nothing would change\n"), std::string::npos) << out();
  EXPECT_EQ(ruleset(), before);
}

TEST_F(EchoCheckTest, OffloadAddEchoesChainAndRulesWithHandles) {
  ASSERT_EQ(run({"-e", "offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  const auto chain = nft_kernel().chain(NFPROTO_INET, "fw", "forward");
  ASSERT_TRUE(chain);
  const auto rules = nft_kernel().rules(NFPROTO_INET, "fw", "forward");
  ASSERT_EQ(rules.size(), 2U);
  const std::string tcp = rules[0].substr(0, rules[0].find(':'));
  const std::string udp = rules[1].substr(0, rules[1].find(':'));
  EXPECT_EQ(out(), "add chain inet fw forward { type filter hook forward priority 0; } # handle " +
                       std::to_string(chain->handle) +
                       "\n"
                       "add rule inet fw forward meta l4proto tcp flow add @ft comment "
                       "\"flowbulk\" # handle " +
                       tcp +
                       "\n"
                       "add rule inet fw forward meta l4proto udp flow add @ft comment "
                       "\"flowbulk\" # handle " +
                       udp + "\n");
  ASSERT_EQ(run({"-j", "-e", "offload", "delete", "inet", "fw", "ft", "proto", "udp"}), kExitOk)
      << err();
  const Json json = Json::parse(out());
  ASSERT_EQ(json["echo"].size(), 1U);
  EXPECT_EQ(json["echo"][0]["delete"]["rule"]["handle"], std::stoull(udp));
  EXPECT_EQ(json["echo"][0]["delete"]["rule"]["proto"], "udp");
}

TEST_F(EchoCheckTest, OffloadDeleteCheckDeletesNothing) {
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  const std::string before = ruleset();
  ASSERT_EQ(run({"-c", "offload", "delete", "inet", "fw", "ft", "proto", "tcp"}), kExitOk) << err();
  EXPECT_EQ(out().rfind("would delete rule inet fw forward handle ", 0), 0U) << out();
  EXPECT_NE(out().find(": meta l4proto tcp flow add @ft comment \"flowbulk\"\n"), std::string::npos)
      << out();
  EXPECT_EQ(nft_kernel().checks(), 1U);
  EXPECT_EQ(ruleset(), before);
  ASSERT_EQ(run({"-e", "offload", "delete", "inet", "fw", "ft", "proto", "tcp"}), kExitOk) << err();
  EXPECT_EQ(out().rfind("delete rule inet fw forward meta l4proto tcp flow add @ft comment "
                        "\"flowbulk\" # handle ",
                        0),
            0U)
      << out();
  EXPECT_EQ(nft_kernel().rules(NFPROTO_INET, "fw", "forward").size(), 1U);
}

TEST_F(EchoCheckTest, ListsAndModuleCommandsHaveNoCheckMode) {
  EXPECT_EQ(run({"-c", "offload", "list"}), kExitUsage);
  EXPECT_EQ(err(), "Error: -c checks a change; offload list changes nothing\n");
  EXPECT_EQ(run({"-c", "attach", "inet", "fw", "ft"}), kExitUsage);
  EXPECT_NE(err().find("\"attach\" has no check mode"), std::string::npos) << err();
  EXPECT_EQ(run({"-c", "detach", "inet", "fw", "ft"}), kExitUsage);
  EXPECT_TRUE(nothing_opened() || genl().sent().empty());
}

TEST_F(EchoCheckTest, LoadEchoesWhatLibnftablesEchoes) {
  in_.str("table inet more {\n  chain c {\n    type filter hook input priority 0;\n  }\n}\n");
  ASSERT_EQ(run({"-e", "-f", "-"}), kExitOk) << err();
  EXPECT_NE(out().find("add chain inet more c { type filter hook input priority filter; policy "
                       "accept; } # handle "),
            std::string::npos)
      << out();
  in_.clear();
  in_.str("table inet evenmore {\n}\n");
  ASSERT_EQ(run({"-j", "-e", "-f", "-"}), kExitOk) << err();
  const Json json = Json::parse(out());
  ASSERT_EQ(json["echo"].size(), 1U) << out();
  EXPECT_EQ(json["echo"][0]["add"]["table"]["name"], "evenmore");
  EXPECT_TRUE(json["echo"][0]["add"]["table"].contains("handle")) << out();
}

}  // namespace
}  // namespace flowbulk::testing
