// SPDX-License-Identifier: GPL-2.0
// Listings change nothing: they do not load the module, and a listing of a
// table that does not exist fails as nft's does.
#include <linux/netfilter.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "error.h"

namespace flowbulk::testing {
namespace {

using Json = nlohmann::json;

// A family lookup by name would make the kernel load the module: with the
// module absent, no generic netlink socket is even opened.
TEST_F(CliTest, AttachListWithoutTheModuleLoadsNothing) {
  EXPECT_EQ(run({"attach", "list"}), kExitOk) << err();
  EXPECT_EQ(out(), "module not loaded: no attachments\n");
  EXPECT_EQ(run({"-j", "attach", "list"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out()),
            Json::parse(R"({"schema": 2, "module_loaded": false, "attachments": []})"));
  EXPECT_EQ(transports_.opened(NETLINK_GENERIC), 0);
}

TEST_F(CliTest, StatsAndMonitorWithoutTheModuleLoadNothing) {
  for (const std::vector<std::string>& command : {std::vector<std::string>{"stats"},
                                                  {"-j", "stats", "show"},
                                                  {"monitor", "count", "1"},
                                                  {"-j", "monitor"}}) {
    EXPECT_EQ(run(command), kExitFailure);
    EXPECT_EQ(err(),
              "Error: cannot read statistics: the nf_flow_bulk module is not loaded (the first "
              "attach loads it, or modprobe nf_flow_bulk)\n");
    EXPECT_TRUE(out().empty()) << out();
  }
  EXPECT_TRUE(sleeps_.empty());
  EXPECT_EQ(transports_.opened(NETLINK_GENERIC), 0);
}

// nft list table inet nosuch: "Error: No such file or directory", exit 1.
TEST_F(CliTest, ListingAMissingTableFailsWithNftsMessage) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  EXPECT_EQ(run({"flowtable", "list", "inet", "nosuch"}), kExitFailure);
  EXPECT_EQ(err(), "Error: cannot list flowtables: table inet nosuch: No such file or directory\n");
  EXPECT_EQ(run({"-j", "offload", "list", "inet", "nosuch"}), kExitFailure);
  EXPECT_EQ(err(),
            "Error: cannot list offload rules: table inet nosuch: No such file or directory\n");
  EXPECT_TRUE(out().empty()) << out();
  // An existing table with nothing in it is an empty listing.
  EXPECT_EQ(run({"-j", "flowtable", "list", "inet", "fw"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out())["flowtables"], Json::array());
  EXPECT_EQ(run({"offload", "list", "inet", "fw"}), kExitOk) << err();
  EXPECT_EQ(out(), "");
}

}  // namespace
}  // namespace flowbulk::testing
