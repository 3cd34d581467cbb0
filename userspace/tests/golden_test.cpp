// SPDX-License-Identifier: GPL-2.0
// What every command prints, compared byte for byte with tests/golden/:
// the JSON of each -j command is a published format (schema version,
// Documentation/flowbulk-json.schema.json), and the text is what people
// read. A difference fails; after a deliberate change (and, for JSON, the
// schema version raised where a field changed meaning or disappeared),
// regenerate with
//   FLOWBULK_UPDATE_GOLDEN=1 ctest --test-dir build/userspace -R Golden
// and review the diff of tests/golden/ like code.
#include <linux/netfilter.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli_fixture.h"
#include "error.h"
#include "version.h"

namespace flowbulk::testing {
namespace {

class GoldenTest : public CliTest {
 protected:
  // Runs ARGUMENTS, expects exit 0, and compares stdout with FILE.
  void expect_golden(const std::string& file, const std::vector<std::string>& arguments) {
    SCOPED_TRACE(file);
    ASSERT_EQ(run(arguments), kExitOk) << err();
    std::string output = out();
    // The tool's version moves with every release; the format does not.
    const std::string version(tool_version());
    for (size_t at = output.find(version); at != std::string::npos; at = output.find(version, at)) {
      output.replace(at, version.size(), "VERSION");
    }
    const std::string path = std::string(FLOWBULK_GOLDEN_DIR) + "/" + file;
    if (const char* update = std::getenv("FLOWBULK_UPDATE_GOLDEN"); update && *update == '1') {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << output;
      updated_ = true;
      return;
    }
    std::ifstream golden(path, std::ios::binary);
    ASSERT_TRUE(golden) << "no golden file " << path
                        << "; create it with FLOWBULK_UPDATE_GOLDEN=1 and review it";
    std::ostringstream expected;
    expected << golden.rdbuf();
    EXPECT_EQ(output, expected.str()) << "regenerate with FLOWBULK_UPDATE_GOLDEN=1 if intended";
  }
  void TearDown() override {
    if (updated_) {
      GTEST_SKIP() << "golden files rewritten, not compared";
    }
  }

  // Two CPUs' counters, every kind of counter non-zero somewhere.
  void script_stats(bool resolve, uint64_t scale) {
    if (resolve) {
      genl().expect(resolve_family(kFakeFamilyId));
    }
    genl().expect(dump_reply([scale](const nlmsghdr& request) {
      std::vector<uint64_t> decline(__NFB_DECLINE_MAX, 0);
      decline[NFB_DECLINE_MISS] = 5 * scale;
      decline[NFB_DECLINE_TTL] = scale;
      return std::vector<Datagram>{
          stats_message(request, 0, 40 * scale, 10 * scale, {0, 0, 10 * scale}, decline),
          stats_message(request, 1, 20 * scale, 10 * scale, {0, 10 * scale}, {})};
    }));
  }

  void script_attachments() {
    genl().expect(resolve_family(kFakeFamilyId));
    genl().expect(dump_reply([](const nlmsghdr& request) {
      return std::vector<Datagram>{
          attachment_message(request, "fw", "ft", -10, {{2, "eth0", 1, 0}, {3, "eth1", 0, 7}}, 3),
          attachment_message(request, "t2", "f2", 5, {{4, "eth2"}})};
    }));
  }

  // table fw with flowtable ft and the offload rules, made by the tool.
  void make_ruleset() {
    nft_kernel();
    ASSERT_EQ(run({"table", "add", "inet", "fw"}), kExitOk) << err();
    ASSERT_EQ(run({"flowtable", "add", "inet", "fw", "ft", "hook", "ingress", "priority", "-10",
                   "devices", "eth0,eth1", "counter"}),
              kExitOk)
        << err();
  }

  bool updated_ = false;
};

TEST_F(GoldenTest, HelpAndVersion) {
  expect_golden("stats-help.json", {"-j", "stats", "help"});
  expect_golden("version.json", {"-j", "-V"});
  expect_golden("version.txt", {"-V"});
}

TEST_F(GoldenTest, ChangesPrintOk) {
  nft_kernel();
  expect_golden("table-add.json", {"-j", "table", "add", "inet", "fw"});
  expect_golden("table-add-check.json", {"-j", "-c", "table", "add", "inet", "other"});
  expect_golden("table-add-echo.json", {"-j", "-e", "table", "add", "inet", "other"});
  expect_golden("table-add-echo.txt", {"-e", "table", "add", "inet", "third"});
}

// -c prints the plan it checked, -e what the kernel echoed.
TEST_F(GoldenTest, OffloadCheckAndEcho) {
  make_ruleset();
  expect_golden("offload-add-check.json", {"-j", "-c", "offload", "add", "inet", "fw", "ft"});
  expect_golden("offload-add-check.txt", {"-c", "offload", "add", "inet", "fw", "ft"});
  expect_golden("offload-add-echo.json", {"-j", "-e", "offload", "add", "inet", "fw", "ft"});
  expect_golden("offload-delete-check.txt", {"-c", "offload", "delete", "inet", "fw", "ft"});
  expect_golden("offload-delete-echo.txt", {"-e", "offload", "delete", "inet", "fw", "ft"});
}

TEST_F(GoldenTest, NftablesObjects) {
  make_ruleset();
  expect_golden("offload-add.json", {"-j", "offload", "add", "inet", "fw", "ft"});
  expect_golden("table-list.json", {"-j", "table", "list"});
  expect_golden("table-list.txt", {"table", "list"});
  expect_golden("flowtable-list.json", {"-j", "flowtable", "list"});
  expect_golden("flowtable-list.txt", {"flowtable", "list"});
  expect_golden("offload-list.json", {"-j", "offload", "list"});
  expect_golden("offload-list.txt", {"offload", "list"});
  expect_golden("offload-delete.json", {"-j", "offload", "delete", "inet", "fw", "ft"});
}

TEST_F(GoldenTest, Attachments) {
  module_loaded_ = true;
  script_attachments();
  expect_golden("attach-list.json", {"-j", "attach", "list"});
  script_attachments();
  expect_golden("attach-list.txt", {"attach", "list"});
  module_loaded_ = false;
  expect_golden("attach-list-unloaded.json", {"-j", "attach", "list"});
  expect_golden("attach-list-unloaded.txt", {"attach", "list"});
}

// -e on attach and detach: the attachment as the module lists it, after
// the attach and before the detach.
TEST_F(GoldenTest, AttachDetachEcho) {
  module_loaded_ = true;
  auto script_echo = [this](bool attach_first) {
    genl().expect(resolve_family(kFakeFamilyId));
    if (attach_first) {
      genl().expect(ack_all());
      genl().expect(resolve_family(kFakeFamilyId));
    }
    genl().expect(dump_reply([](const nlmsghdr& request) {
      return std::vector<Datagram>{
          attachment_message(request, "t2", "f2", 5, {{4, "eth2"}}),
          attachment_message(request, "fw", "ft", -10, {{2, "eth0", 1, 0}, {3, "eth1", 0, 7}}, 3,
                             NFB_ATTACH_ATTACHED)};
    }));
    if (!attach_first) {
      genl().expect(resolve_family(kFakeFamilyId));
      genl().expect(ack_all());
    }
  };
  script_echo(true);
  expect_golden("attach-echo.json", {"-j", "-e", "attach", "ip", "fw", "ft"});
  script_echo(true);
  expect_golden("attach-echo.txt", {"-e", "attach", "ip", "fw", "ft"});
  script_echo(false);
  expect_golden("detach-echo.json", {"-j", "-e", "detach", "ip", "fw", "ft"});
  script_echo(false);
  expect_golden("detach-echo.txt", {"-e", "detach", "ip", "fw", "ft"});
}

TEST_F(GoldenTest, Stats) {
  module_loaded_ = true;
  script_stats(true, 1);
  expect_golden("stats.json", {"-j", "stats"});
  script_stats(true, 1);
  expect_golden("stats.txt", {"-s", "-s", "stats"});
}

TEST_F(GoldenTest, Monitor) {
  module_loaded_ = true;
  script_stats(true, 1);
  script_stats(false, 3);
  script_stats(false, 4);
  expect_golden("monitor.json", {"-j", "monitor", "count", "2"});
  script_stats(true, 1);
  script_stats(false, 3);
  expect_golden("monitor.txt", {"monitor", "count", "1"});
}

TEST_F(GoldenTest, LoadFile) {
  nft_kernel();
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  in_.str(
      "table inet fw {\n"
      "  flowtable ft { hook early_ingress priority 0; devices = { eth0 }; }\n"
      "}\n");
  expect_golden("load.json", {"-j", "-f", "-"});
}

}  // namespace
}  // namespace flowbulk::testing
