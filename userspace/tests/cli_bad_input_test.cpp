// SPDX-License-Identifier: GPL-2.0
// Bad input: each case gets its precise message and exit code, and none of
// them reaches the kernel (nothing opened), so nothing can be half-applied.
#include <cctype>

#include "cli_fixture.h"
#include "error.h"

namespace flowbulk::testing {
namespace {

struct BadInput {
  std::vector<std::string> arguments;
  std::string message;  // a substring of what stderr must say
  int exit_code = kExitUsage;
};

void PrintTo(const BadInput& input, std::ostream* os) {
  for (const auto& word : input.arguments) {
    *os << word << ' ';
  }
}

class BadInputTest : public CliTest, public ::testing::WithParamInterface<BadInput> {};

TEST_P(BadInputTest, RejectedWithMessageAndExitCodeBeforeAnyNetlink) {
  const BadInput& input = GetParam();
  EXPECT_EQ(run(input.arguments), input.exit_code);
  EXPECT_NE(err().find("Error: "), std::string::npos) << err();
  EXPECT_NE(err().find(input.message), std::string::npos) << "stderr: " << err();
  EXPECT_TRUE(out().empty()) << out();
  EXPECT_TRUE(nothing_opened());
  EXPECT_TRUE(engine_.calls.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Cli, BadInputTest,
    ::testing::Values(
        BadInput{{"bogus"}, "object \"bogus\" is unknown; try \"flowbulk help\""},
        // A priority is nft's to parse; only what could end its clause in
        // the nft command is refused here.
        BadInput{{"flowtable", "add", "inet", "t", "f", "hook", "ingress", "priority",
                  "0; flush ruleset", "devices", "eth0"},
                 "invalid priority \"0; flush ruleset\""},
        BadInput{{"flowtable", "add", "inet", "t", "f", "hook", "ingress", "priority", "0", "}",
                  "devices", "eth0"},
                 "invalid priority \"0 }\""},
        BadInput{{"monitor", "interval", "0x1p-3"}, "invalid interval \"0x1p-3\""},
        BadInput{{"monitor", "interval", " 5"}, "invalid interval \" 5\""},
        BadInput{{"monitor", "interval", "1e1"}, "invalid interval \"1e1\""},
        BadInput{{"monitor", "count", "+5"}, "invalid count \"+5\""},
        BadInput{{"monitor", "count", "2", "count", "3"}, "\"count\" given twice"},
        BadInput{{"monitor", "interval", "1", "interval", "2"}, "\"interval\" given twice"},
        // `devices eth0, eth1`: the shell splits it after the comma.
        BadInput{
            {"flowtable", "add", "inet", "t", "f", "hook", "ingress", "devices", "eth0,", "eth1"},
            "empty device name in \"eth0,\"; write the list as one word without spaces"},
        BadInput{{"table", "frob"}, "table command \"frob\" is unknown"},
        BadInput{{"table", "add", "foo", "t"},
                 "unknown family \"foo\": flowtables exist in ip, ip6, inet"},
        BadInput{{"table", "add", "inet"}, "missing NAME; try \"flowbulk table help\""},
        BadInput{{"table", "add", "inet", std::string(256, 'a')},
                 "table name is longer than 255 bytes"},
        BadInput{{"table", "add", "inet", "t", "extra"}, "unexpected argument \"extra\""},
        BadInput{{"table", "list", "bridge"}, "unknown family \"bridge\""},
        BadInput{{"flowtable", "add", "inet", "t", "f", "devices", "eth0"},
                 "missing \"hook ingress\" or \"hook early_ingress\""},
        BadInput{{"flowtable", "add", "inet", "t", "f", "hook", "ingress"},
                 "missing \"devices DEV[,DEV...]\""},
        BadInput{{"flowtable", "add", "inet", "t", "f", "hook", "egress", "devices", "eth0"},
                 "hook \"egress\" is unknown"},
        BadInput{{"flowtable", "add", "inet", "t", "f", "hook", "ingress", "priority",
                  "99999999999", "devices", "eth0"},
                 "priority 99999999999 is out of range (-2147483648 .. 2147483647)"},
        BadInput{{"flowtable", "add", "inet", "t", "f", "hook", "ingress", "priority", "filter",
                  "+", "2147483648", "devices", "eth0"},
                 "priority filter + 2147483648 is out of range"},
        BadInput{{"flowtable", "add", "inet", "t", "f", "hook", "ingress", "devices", "eth0,eth0"},
                 "device \"eth0\" is listed twice"},
        BadInput{
            {"flowtable", "add", "inet", "t", "f", "hook", "ingress", "devices", "eth0,nosuch0"},
            "device \"nosuch0\" does not exist"},
        BadInput{{"flowtable", "add", "inet", "t", "f", "hook", "ingress", "devices", "eth0,,eth1"},
                 "empty device name in \"eth0,,eth1\""},
        BadInput{{"flowtable", "add", "inet", "t", "f", "hook", "ingress", "devices",
                  "averyveryverylongname"},
                 "device name \"averyveryverylongname\" is longer than 15 characters"},
        BadInput{{"flowtable", "add", "inet", "t", "f", "hook", "ingress", "hook", "ingress",
                  "devices", "eth0"},
                 "\"hook\" given twice"},
        BadInput{
            {"flowtable", "add", "inet", "t", "f", "hook", "ingress", "devices", "eth0", "offload"},
            "flowtable option \"offload\" is unknown"},
        BadInput{{"flowtable", "delete", "inet", "t"}, "missing FLOWTABLE"},
        BadInput{{"offload", "add", "inet", "t", "f", "proto", "icmp"},
                 "protocol \"icmp\" is unknown"},
        BadInput{{"offload", "add", "inet", "t", "f", "c"},
                 "offload option \"c\" is ambiguous (counter, chain)"},
        BadInput{{"offload", "add", "inet", "t", "f", "proto"}, "missing PROTO (tcp, udp or all)"},
        BadInput{{"attach", "inet", "t"}, "missing FLOWTABLE; try \"flowbulk attach help\""},
        BadInput{{"attach"}, "missing FAMILY or \"list\""},
        BadInput{{"attach", "list", "extra"}, "unexpected argument \"extra\""},
        BadInput{{"detach", "ip4", "t", "f"}, "unknown family \"ip4\""},
        BadInput{{"stats", "frob"}, "stats command \"frob\" is unknown"},
        BadInput{{"monitor", "interval", "0"}, "invalid interval \"0\""},
        BadInput{{"monitor", "interval", "nan"}, "invalid interval \"nan\""},
        BadInput{{"monitor", "count", "-1"}, "invalid count \"-1\""},
        BadInput{{"-x", "stats"}, "unknown option \"-x\""},
        BadInput{{"--frobnicate"}, "unknown option \"--frobnicate\""},
        BadInput{{"-f"}, "option -f needs a FILE"},
        BadInput{{"-f", "/nonexistent/ruleset.nft"},
                 "cannot read /nonexistent/ruleset.nft: No such file or directory (ENOENT"},
        BadInput{{"-f", "-", "table", "list"}, "-f takes no OBJECT (got \"table\")"},
        // The optional names of a listing are names of what exists.
        BadInput{{"table", "list", "inet", ""}, "table name is empty"},
        BadInput{{"flowtable", "list", "inet", ""}, "table name is empty"},
        BadInput{{"flowtable", "list", "inet", "t", std::string(256, 'a')},
                 "flowtable name is longer than 255 bytes"}),
    // Readable CTest names: the arguments with everything else as '_'.
    [](const ::testing::TestParamInfo<BadInput>& info) {
      std::string name = std::to_string(info.index);
      for (const std::string& word : info.param.arguments) {
        name += '_' + word.substr(0, 24);
      }
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) {
          c = '_';
        }
      }
      return name;
    });

TEST_F(CliTest, NoArgumentsPrintsUsageOnStderr) {
  EXPECT_EQ(run({}), kExitUsage);
  EXPECT_NE(err().find("Usage: flowbulk"), std::string::npos);
}

TEST_F(CliTest, EarlyIngressRulesetWithVariableNamesIsRejectedBeforeLoading) {
  in_.str("table inet $t { flowtable f { hook early_ingress priority 0; devices = { lo } } }\n");
  EXPECT_EQ(run({"-f", "-"}), kExitUsage);
  EXPECT_NE(err().find("no $variables"), std::string::npos) << err();
  EXPECT_TRUE(engine_.calls.empty());
  EXPECT_TRUE(nothing_opened());
}

}  // namespace
}  // namespace flowbulk::testing
