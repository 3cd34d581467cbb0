// SPDX-License-Identifier: GPL-2.0
// Whole commands against the scripted kernel: what is sent, what is printed.
#include <libnftnl/common.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <nf_flow_bulk.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_fixture.h"
#include "deferred_signals.h"
#include "error.h"
#include "raii.h"

namespace flowbulk::testing {
namespace {

using Json = nlohmann::json;

uint8_t genl_command(const Datagram& datagram) {
  return static_cast<const genlmsghdr*>(mnl_nlmsg_get_payload(messages_of(datagram).at(0)))->cmd;
}

Datagram flowtable_message(const nlmsghdr& request, const char* table, const char* name,
                           std::vector<const char*> devices, bool counter) {
  std::vector<uint8_t> buffer(4096);
  nlmsghdr* header =
      nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(buffer.data()), NFT_MSG_NEWFLOWTABLE,
                            NFPROTO_INET, NLM_F_MULTI, request.nlmsg_seq);
  header->nlmsg_pid = request.nlmsg_pid;
  NftnlFlowtablePtr flowtable(nftnl_flowtable_alloc());
  nftnl_flowtable_set_str(flowtable.get(), NFTNL_FLOWTABLE_TABLE, table);
  nftnl_flowtable_set_str(flowtable.get(), NFTNL_FLOWTABLE_NAME, name);
  nftnl_flowtable_set_u32(flowtable.get(), NFTNL_FLOWTABLE_HOOKNUM, NF_NETDEV_INGRESS);
  nftnl_flowtable_set_s32(flowtable.get(), NFTNL_FLOWTABLE_PRIO, -10);
  nftnl_flowtable_set_u64(flowtable.get(), NFTNL_FLOWTABLE_HANDLE, 7);
  devices.push_back(nullptr);
  nftnl_flowtable_set_array(flowtable.get(), NFTNL_FLOWTABLE_DEVICES, devices.data());
  if (counter) {
    nftnl_flowtable_set_u32(flowtable.get(), NFTNL_FLOWTABLE_FLAGS, NFT_FLOWTABLE_COUNTER);
  }
  nftnl_flowtable_nlmsg_build_payload(header, flowtable.get());
  return Datagram(buffer.begin(), buffer.begin() + header->nlmsg_len);
}

// ---- help at every level ------------------------------------------------------

TEST_F(CliTest, HelpAtEveryLevel) {
  const std::vector<std::vector<std::string>> requests = {{"help"},
                                                          {"-h"},
                                                          {"--help"},
                                                          {"table", "help"},
                                                          {"table", "add", "help"},
                                                          {"flowtable", "help"},
                                                          {"flowtable", "add", "help"},
                                                          {"offload", "help"},
                                                          {"offload", "add", "help"},
                                                          {"attach", "help"},
                                                          {"detach", "help"},
                                                          {"stats", "help"},
                                                          {"monitor", "help"},
                                                          {"h"}};
  for (const auto& request : requests) {
    EXPECT_EQ(run(request), kExitOk) << request.front();
    EXPECT_NE(out().find("Usage: flowbulk"), std::string::npos) << request.front();
    EXPECT_TRUE(err().empty());
  }
  EXPECT_TRUE(nothing_opened());
}

TEST_F(CliTest, VersionNamesFamily) {
  EXPECT_EQ(run({"-V"}), kExitOk);
  EXPECT_NE(out().find("nf_flow_bulk"), std::string::npos);
}

// ---- attach / detach -------------------------------------------------------

TEST_F(CliTest, AttachByUnambiguousPrefixes) {
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  EXPECT_EQ(run({"a", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(genl_command(genl().sent().at(1)), NFB_CMD_ATTACH);
  EXPECT_TRUE(out().empty());
  EXPECT_TRUE(genl().exhausted());
}

TEST_F(CliTest, AttachJsonPrintsEnvelope) {
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  EXPECT_EQ(run({"-j", "attach", "inet", "fw", "ft"}), kExitOk);
  EXPECT_EQ(Json::parse(out()), Json::parse(R"({"schema": 2, "ok": true})"));
}

// -e: the attach is sent first, then the module's list is read for the
// attachment it made; one the list does not have (detached in between)
// is still named, with no state.
TEST_F(CliTest, AttachEchoReadsTheAttachmentAfterTheAttach) {
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(dump_reply([](const nlmsghdr& request) {
    return std::vector<Datagram>{
        attachment_message(request, "fw", "ft", -1, {{2, "eth0"}}, 0, NFB_ATTACH_WAITING)};
  }));
  EXPECT_EQ(run({"-e", "attach", "ip", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(genl_command(genl().sent().at(1)), NFB_CMD_ATTACH);
  EXPECT_EQ(genl_command(genl().sent().at(3)), NFB_CMD_GET_ATTACH);
  EXPECT_EQ(out(), "attach flowtable ip fw ft # state waiting, priority -1, devices eth0\n");
  EXPECT_TRUE(genl().exhausted());

  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(dump_reply([](const nlmsghdr&) { return std::vector<Datagram>{}; }));
  EXPECT_EQ(run({"-j", "-e", "attach", "ip", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out())["echo"][0]["attach"]["attachment"]["state"], Json());
  EXPECT_EQ(Json::parse(out())["echo"][0]["attach"]["attachment"]["table"], "fw");
}

// -e detach reads the attachment before the detach; a failed detach
// prints no echo; with the module not loaded nothing is read (no
// autoload for the echo) and the detach's own error stands.
TEST_F(CliTest, DetachEchoReadsTheAttachmentBeforeTheDetach) {
  module_loaded_ = true;
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(dump_reply([](const nlmsghdr& request) {
    return std::vector<Datagram>{
        attachment_message(request, "fw", "ft", -10, {{2, "eth0"}}, 1, NFB_ATTACH_STALE)};
  }));
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  EXPECT_EQ(run({"-e", "detach", "ip", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(genl_command(genl().sent().at(1)), NFB_CMD_GET_ATTACH);
  EXPECT_EQ(genl_command(genl().sent().at(3)), NFB_CMD_DETACH);
  EXPECT_EQ(out(), "detach flowtable ip fw ft # state stale, priority -10, devices eth0\n");

  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(dump_reply([](const nlmsghdr&) { return std::vector<Datagram>{}; }));
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(fail_message(0, ENOENT));
  EXPECT_EQ(run({"-e", "detach", "ip", "fw", "ft"}), kExitFailure);
  EXPECT_TRUE(out().empty()) << out();
  EXPECT_NE(err().find("not attached"), std::string::npos) << err();

  module_loaded_ = false;
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(fail_message(0, ENOENT));
  EXPECT_EQ(run({"-e", "detach", "ip", "fw", "ft"}), kExitFailure);
  EXPECT_EQ(genl_command(genl().sent().back()), NFB_CMD_DETACH);
  EXPECT_TRUE(genl().exhausted());
}

TEST_F(CliTest, AttachKernelErrorShowsExtackAndErrno) {
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(fail_message(0, ENOENT, "flowtable inet fw ft not found"));
  EXPECT_EQ(run({"attach", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_EQ(err(),
            "Error: cannot attach flowtable inet fw ft: flowtable inet fw ft not found: No such "
            "file or directory (ENOENT, errno 2)\n");
}

TEST_F(CliTest, AttachWithoutExtackGetsHint) {
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(fail_message(0, EEXIST));
  EXPECT_EQ(run({"attach", "ip", "t", "f"}), kExitFailure);
  EXPECT_NE(err().find("already attached: File exists (EEXIST, errno 17)"), std::string::npos)
      << err();
}

TEST_F(CliTest, AttachWithModuleAbsent) {
  genl().expect(family_absent());
  EXPECT_EQ(run({"attach", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("nf_flow_bulk kernel module is not loaded"), std::string::npos) << err();
}

// -n NETNS, as ip -n: the namespace is entered before any socket opens,
// whatever the spelling; it needs its name and is given once.
TEST_F(CliTest, NetnsIsEnteredBeforeAnySocket) {
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(dump_reply([](const nlmsghdr&) { return std::vector<Datagram>{}; }));
  EXPECT_EQ(run({"-n", "blue", "attach", "list"}), kExitOk) << err();
  EXPECT_EQ(netns_entered_, std::vector<std::string>{"blue"});
  EXPECT_FALSE(opened_before_netns_);
  EXPECT_EQ(run({"--netns", "red", "-V"}), kExitOk) << err();
  EXPECT_EQ(run({"-netns", "green", "-V"}), kExitOk) << err();
  EXPECT_EQ(run({"-jn", "grey", "-V"}), kExitOk) << err();
  EXPECT_EQ(netns_entered_, (std::vector<std::string>{"blue", "red", "green", "grey"}));
  EXPECT_EQ(run({"-n"}), kExitUsage);
  EXPECT_EQ(err(), "Error: option -n needs a network namespace name\n");
  EXPECT_EQ(run({"-nj", "x", "-V"}), kExitUsage);
  EXPECT_EQ(err(), "Error: option -n needs a network namespace name\n");
  EXPECT_EQ(run({"-n", "a", "-n", "b", "-V"}), kExitUsage);
  EXPECT_EQ(err(), "Error: option -n given twice\n");
  EXPECT_EQ(netns_entered_.size(), 4U);
}

TEST_F(CliTest, DetachSendsDetach) {
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(fail_message(0, ENOENT));
  EXPECT_EQ(run({"detach", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_EQ(genl_command(genl().sent().at(1)), NFB_CMD_DETACH);
  EXPECT_NE(err().find("cannot detach flowtable inet fw ft: not attached"), std::string::npos);
}

// The state, the rescan count and, per device, whether the module's hook
// is adjacent to the flowtable's (eth1: another hook sits between them) and
// how often the module looked at that device again (JSON only). A stale
// attachment (its flowtable deleted, another of its name made since) has
// no devices; a state from a newer module shows as its number.
TEST_F(CliTest, AttachListTextAndJson) {
  module_loaded_ = true;
  auto script = [this] {
    genl().expect(resolve_family(kFakeFamilyId));
    genl().expect(dump_reply([](const nlmsghdr& request) {
      return std::vector<Datagram>{
          attachment_message(request, "fw", "ft", -100, {{2, "eth0", 1, 0}, {3, "eth1", 0, 7}}, 3,
                             NFB_ATTACH_ATTACHED),
          attachment_message(request, "t2", "f2", 5, {{4, "eth2", 1, 0}}, 0, NFB_ATTACH_WAITING),
          attachment_message(request, "t3", "f3", 0, {}, 4, NFB_ATTACH_STALE),
          attachment_message(request, "t4", "f4", 0, {}, 1, 9)};
    }));
  };
  script();
  EXPECT_EQ(run({"attach", "list"}), kExitOk) << err();
  EXPECT_EQ(out(),
            "FAMILY  TABLE  FLOWTABLE  STATE     PRIORITY  SCANS  DEVICES    NOT ADJACENT\n"
            "ip      fw     ft         attached      -100      3  eth0,eth1  eth1\n"
            "ip      t2     f2         waiting          5      0  eth2       -\n"
            "ip      t3     f3         stale            0      4  -          -\n"
            "ip      t4     f4         9                0      1  -          -\n");
  script();
  EXPECT_EQ(run({"-j", "attach", "l"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out()), Json::parse(R"({"schema": 2, "module_loaded": true, "attachments": [
      {"family": "ip", "table": "fw", "flowtable": "ft", "priority": -100,
       "scans": 3, "state": "attached",
       "devices": [{"ifindex": 2, "ifname": "eth0", "adjacent": true, "checks": 0},
                   {"ifindex": 3, "ifname": "eth1", "adjacent": false, "checks": 7}]},
      {"family": "ip", "table": "t2", "flowtable": "f2", "priority": 5,
       "scans": 0, "state": "waiting",
       "devices": [{"ifindex": 4, "ifname": "eth2", "adjacent": true, "checks": 0}]},
      {"family": "ip", "table": "t3", "flowtable": "f3", "priority": 0,
       "scans": 4, "state": "stale", "devices": []},
      {"family": "ip", "table": "t4", "flowtable": "f4", "priority": 0,
       "scans": 1, "state": 9, "devices": []}]})"));
}

// An attachment changed during the dump: listed from the dump asked again.
TEST_F(CliTest, AttachListDumpsAgainWhenTheDumpWasInterrupted) {
  module_loaded_ = true;
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(dump_reply([](const nlmsghdr& request) {
    Datagram stale = attachment_message(request, "old", "ft", 0, {{2, "eth0", 1}}, 1);
    reinterpret_cast<nlmsghdr*>(stale.data())->nlmsg_flags |= NLM_F_DUMP_INTR;
    return std::vector<Datagram>{stale};
  }));
  genl().expect(dump_reply([](const nlmsghdr& request) {
    return std::vector<Datagram>{attachment_message(request, "new", "ft", 0, {{2, "eth0", 1}}, 1)};
  }));
  ASSERT_EQ(run({"-j", "attach", "list"}), kExitOk) << err();
  const Json json = Json::parse(out());
  ASSERT_EQ(json["attachments"].size(), 1U) << out();
  EXPECT_EQ(json["attachments"][0]["table"], "new");
  EXPECT_TRUE(genl().exhausted());
}

// A module that reports neither: unknown, not "adjacent" or "no scans".
TEST_F(CliTest, AttachListFromAModuleWithoutScansOrAdjacency) {
  module_loaded_ = true;
  auto script = [this] {
    genl().expect(resolve_family(kFakeFamilyId));
    genl().expect(dump_reply([](const nlmsghdr& request) {
      return std::vector<Datagram>{attachment_message(request, "fw", "ft", 0, {{2, "eth0"}})};
    }));
  };
  script();
  EXPECT_EQ(run({"attach", "list"}), kExitOk) << err();
  EXPECT_EQ(out(),
            "FAMILY  TABLE  FLOWTABLE  STATE  PRIORITY  SCANS  DEVICES  NOT ADJACENT\n"
            "ip      fw     ft         -             0      -  eth0     -\n");
  script();
  EXPECT_EQ(run({"-j", "attach", "list"}), kExitOk) << err();
  const Json json = Json::parse(out());
  EXPECT_TRUE(json["attachments"][0]["scans"].is_null()) << out();
  EXPECT_TRUE(json["attachments"][0]["devices"][0]["adjacent"].is_null()) << out();
  EXPECT_TRUE(json["attachments"][0]["devices"][0]["checks"].is_null()) << out();
}

TEST_F(CliTest, EmptyListsAreEmptyArrays) {
  module_loaded_ = true;
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(dump_reply([](const nlmsghdr&) { return std::vector<Datagram>{}; }));
  EXPECT_EQ(run({"-j", "attach", "list"}), kExitOk);
  EXPECT_EQ(Json::parse(out()),
            Json::parse(R"({"schema": 2, "module_loaded": true, "attachments": []})"));
  nft().expect(dump_reply([](const nlmsghdr&) { return std::vector<Datagram>{}; }));
  EXPECT_EQ(run({"-j", "flowtable", "list"}), kExitOk);
  EXPECT_EQ(Json::parse(out()), Json::parse(R"({"schema": 2, "flowtables": []})"));
  nft().expect(dump_reply([](const nlmsghdr&) { return std::vector<Datagram>{}; }));
  EXPECT_EQ(run({"-j", "table", "list"}), kExitOk);
  EXPECT_EQ(Json::parse(out()), Json::parse(R"({"schema": 2, "tables": []})"));
}

// ---- stats / monitor -----------------------------------------------------------

void script_stats(ReplayTransport& genl, bool resolve, uint64_t packets0, uint64_t packets1) {
  if (resolve) {
    genl.expect(resolve_family(kFakeFamilyId));
  }
  genl.expect(dump_reply([=](const nlmsghdr& request) {
    std::vector<uint64_t> decline(__NFB_DECLINE_MAX + 1, 0);
    decline[NFB_DECLINE_MISS] = 5;
    decline[__NFB_DECLINE_MAX] = 1;  // newer than this tool
    return std::vector<Datagram>{
        stats_message(request, 0, packets0, packets0 / 4, {0, 0, packets0 / 4}, decline),
        stats_message(request, 1, packets1, packets1 / 2, {0, packets1 / 2}, {})};
  }));
}

TEST_F(CliTest, StatsTextSumsCpusAndNamesReasons) {
  module_loaded_ = true;
  script_stats(genl(), true, 40, 20);
  EXPECT_EQ(run({"stats"}), kExitOk) << err();
  const std::string unknown = std::to_string(__NFB_DECLINE_MAX);
  EXPECT_EQ(out(),
            "COUNTER   VALUE  DETAIL\n"
            "packets      60  encap: none 30, vlan 30; xmit: neigh 45, direct 15\n"
            "bulks        20  mean 3.00 packets per bulk\n"
            "declined      6  miss 5, " +
                unknown +
                " 1\n"
                "fallback      2  egress_hook 2\n"
                "dropped       4  nomem 4\n");
}

TEST_F(CliTest, StatsPerCpuAndHistogramWithRepeatedS) {
  module_loaded_ = true;
  script_stats(genl(), true, 40, 20);
  EXPECT_EQ(run({"-s", "-s", "stats", "show"}), kExitOk) << err();
  EXPECT_NE(out().find("CPU  PACKETS  BULKS  MEAN  DECLINED  FALLBACK  DROPPED\n"
                       "0         40     10  4.00         6         1        2\n"
                       "1         20     10  2.00         0         1        2\n"),
            std::string::npos)
      << out();
  EXPECT_NE(out().find("BULK SIZE  TOTAL  CPU0  CPU1\n"
                       "1              0     0     0\n"
                       "2-3           10     0    10\n"
                       "4-7           10    10     0\n"),
            std::string::npos)
      << out();
  EXPECT_NE(out().find("128+           0     0     0\n"), std::string::npos);
  script_stats(genl(), true, 40, 20);
  EXPECT_EQ(run({"-s", "stats"}), kExitOk);
  EXPECT_NE(out().find("CPU  PACKETS"), std::string::npos);
  EXPECT_EQ(out().find("BULK SIZE"), std::string::npos);
}

TEST_F(CliTest, StatsJsonHasTotalsCpusAndArrays) {
  module_loaded_ = true;
  script_stats(genl(), true, 40, 20);
  EXPECT_EQ(run({"-j", "stats"}), kExitOk) << err();
  Json document = Json::parse(out());
  EXPECT_EQ(document["schema"], 2);
  const Json& total = document["stats"]["total"];
  EXPECT_EQ(total["packets"], 60);
  EXPECT_EQ(total["bulks"], 20);
  EXPECT_EQ(total["declined"], 6);
  ASSERT_TRUE(total["decline"].is_array());
  EXPECT_EQ(total["decline"][NFB_DECLINE_MISS],
            Json::parse(R"({"reason": "miss", "id": 4, "packets": 5})"));
  EXPECT_EQ(total["decline"][__NFB_DECLINE_MAX]["reason"], std::to_string(__NFB_DECLINE_MAX));
  ASSERT_TRUE(total["histogram"].is_array());
  EXPECT_EQ(total["histogram"].size(), static_cast<size_t>(NFB_HIST_BUCKETS));
  EXPECT_EQ(total["histogram"][1], Json::parse(R"({"bucket": "2-3", "min": 2, "max": 3,
                                                    "bulks": 10})"));
  EXPECT_TRUE(total["histogram"][NFB_HIST_BUCKETS - 1]["max"].is_null());
  ASSERT_TRUE(total["taken_encap"].is_array());
  EXPECT_EQ(total["taken_encap"].size(), static_cast<size_t>(__NFB_ENCAP_MAX));
  EXPECT_EQ(total["taken_encap"][NFB_ENCAP_VLAN],
            Json::parse(R"({"encap": "vlan", "id": 1, "packets": 30})"));
  EXPECT_EQ(total["taken_encap"][NFB_ENCAP_VLAN_PPPOE]["packets"], 0);
  ASSERT_TRUE(total["taken_xmit"].is_array());
  EXPECT_EQ(total["taken_xmit"][NFB_XMIT_DIRECT],
            Json::parse(R"({"xmit": "direct", "id": 1, "packets": 15})"));
  ASSERT_EQ(document["stats"]["cpus"].size(), 2U);
  EXPECT_EQ(document["stats"]["cpus"][1]["cpu"], 1);
  EXPECT_EQ(document["stats"]["cpus"][1]["packets"], 20);
}

// Bucket indexes come from the kernel: one past 63 has no 2^i (1 << 64 is
// undefined); it is counted in the last bucket, 2^63 and up.
TEST_F(CliTest, StatsHistogramBucketsBeyond63AreCountedInTheLast) {
  module_loaded_ = true;
  auto script = [this] {
    genl().expect(resolve_family(kFakeFamilyId));
    genl().expect(dump_reply([](const nlmsghdr& request) {
      std::vector<uint64_t> histogram(70, 0);
      histogram[1] = 2;
      histogram[7] = 3;
      histogram[63] = 1;
      histogram[64] = 4;
      histogram[69] = 5;
      return std::vector<Datagram>{stats_message(request, 0, 10, 15, histogram, {})};
    }));
  };
  script();
  ASSERT_EQ(run({"-j", "stats"}), kExitOk) << err();
  const Json histogram = Json::parse(out())["stats"]["total"]["histogram"];
  ASSERT_EQ(histogram.size(), 64U);
  EXPECT_EQ(histogram[7], Json::parse(R"({"bucket": "128-255", "min": 128, "max": 255,
                                           "bulks": 3})"));
  EXPECT_EQ(histogram[62]["max"], (uint64_t{1} << 63) - 1);
  EXPECT_EQ(histogram[63]["bucket"], "9223372036854775808+");
  EXPECT_EQ(histogram[63]["min"], uint64_t{1} << 63);
  EXPECT_TRUE(histogram[63]["max"].is_null());
  EXPECT_EQ(histogram[63]["bulks"], 10);
  script();
  ASSERT_EQ(run({"-s", "-s", "stats"}), kExitOk) << err();
  std::string text = out();  // columns as single spaces
  text.erase(
      std::unique(text.begin(), text.end(), [](char a, char b) { return a == ' ' && b == ' '; }),
      text.end());
  EXPECT_NE(text.find("\n128-255 3 3\n"), std::string::npos) << out();
  EXPECT_NE(text.find("\n4611686018427387904-9223372036854775807 0 0\n"), std::string::npos)
      << out();
  EXPECT_NE(text.find("\n9223372036854775808+ 10 10\n"), std::string::npos) << out();
  EXPECT_EQ(text.find("18446744073709551616"), std::string::npos) << out();
}

TEST_F(CliTest, StatsReset) {
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  EXPECT_EQ(run({"stats", "res"}), kExitOk) << err();
  EXPECT_EQ(genl_command(genl().sent().at(1)), NFB_CMD_RESET_STATS);
}

TEST_F(CliTest, MonitorPrintsRatesPerInterval) {
  module_loaded_ = true;
  script_stats(genl(), true, 0, 0);
  script_stats(genl(), false, 400, 200);
  script_stats(genl(), false, 800, 200);
  EXPECT_EQ(run({"monitor", "interval", "2", "count", "2"}), kExitOk) << err();
  EXPECT_EQ(sleeps_, (std::vector<double>{2.0, 2.0}));
  EXPECT_EQ(out(),
            "TIME         PACKETS/S     BULKS/S  MEAN BULK  DECLINED/S  FALLBACK/S   DROPPED/S\n"
            "12:00:00           300         100       3.00           0           0           0\n"
            "12:00:00           200          50       4.00           0           0           0\n");
}

TEST_F(CliTest, MonitorDividesByTheMeasuredInterval) {
  module_loaded_ = true;
  clock_stretch_ = 2.0;  // each 1 s sleep took 2 s (a loaded machine)
  script_stats(genl(), true, 0, 0);
  script_stats(genl(), false, 400, 200);
  EXPECT_EQ(run({"-j", "monitor", "count", "1"}), kExitOk) << err();
  const Json sample = Json::parse(out())["sample"];
  EXPECT_EQ(sample["interval"], 1.0);              // as asked
  EXPECT_EQ(sample["elapsed"], 2.0);               // as measured
  EXPECT_EQ(sample["packets_per_second"], 300.0);  // 600 packets in 2 s, not in 1
}

TEST_F(CliTest, MonitorJsonLinesAndInterrupt) {
  module_loaded_ = true;
  interrupt_after_ = 1;  // the second sleep is interrupted (SIGINT)
  script_stats(genl(), true, 0, 0);
  script_stats(genl(), false, 100, 0);
  EXPECT_EQ(run({"-j", "monitor"}), kExitOk) << err();
  std::istringstream lines(out());
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    Json sample = Json::parse(line);
    EXPECT_EQ(sample["schema"], 2);
    EXPECT_EQ(sample["sample"]["packets_per_second"], 100.0);
    EXPECT_EQ(sample["sample"]["bulks_per_second"], 25.0);
    EXPECT_EQ(sample["sample"]["mean_bulk"], 4.0);
    ++count;
  }
  EXPECT_EQ(count, 1);
}

// ---- nftables objects ------------------------------------------------------

TEST_F(CliTest, TableAddAndExistingTable) {
  nft_kernel();
  EXPECT_EQ(run({"table", "add", "inet", "fw"}), kExitOk) << err();
  ASSERT_EQ(nft_kernel().state().tables.size(), 1U);
  EXPECT_EQ(run({"table", "add", "inet", "fw"}), kExitFailure);
  // libnftables' message (an exclusive create: nft's `create table`).
  EXPECT_EQ(err(), "Error: cannot add table inet fw: Could not process rule: File exists\n");
  EXPECT_EQ(nft_kernel().state().tables.size(), 1U);
}

TEST_F(CliTest, TableListText) {
  nft().expect(dump_reply([](const nlmsghdr& request) {
    std::vector<uint8_t> buffer(4096);
    nlmsghdr* header =
        nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(buffer.data()), NFT_MSG_NEWTABLE,
                              NFPROTO_IPV6, NLM_F_MULTI, request.nlmsg_seq);
    NftnlTablePtr table(nftnl_table_alloc());
    nftnl_table_set_str(table.get(), NFTNL_TABLE_NAME, "six");
    nftnl_table_set_u64(table.get(), NFTNL_TABLE_HANDLE, 12);
    nftnl_table_nlmsg_build_payload(header, table.get());
    return std::vector<Datagram>{Datagram(buffer.begin(), buffer.begin() + header->nlmsg_len)};
  }));
  EXPECT_EQ(run({"table", "list", "ip6"}), kExitOk) << err();
  EXPECT_EQ(out(), "FAMILY  NAME  HANDLE  OBJECTS\nip6     six       12        0\n");
}

TEST_F(CliTest, TableListJsonNamesFlags) {
  nft().expect(dump_reply([](const nlmsghdr& request) {
    std::vector<uint8_t> buffer(4096);
    nlmsghdr* header =
        nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(buffer.data()), NFT_MSG_NEWTABLE,
                              NFPROTO_INET, NLM_F_MULTI, request.nlmsg_seq);
    NftnlTablePtr table(nftnl_table_alloc());
    nftnl_table_set_str(table.get(), NFTNL_TABLE_NAME, "sleepy");
    nftnl_table_set_u32(table.get(), NFTNL_TABLE_FLAGS, NFT_TABLE_F_DORMANT | 0x100);
    nftnl_table_nlmsg_build_payload(header, table.get());
    return std::vector<Datagram>{Datagram(buffer.begin(), buffer.begin() + header->nlmsg_len)};
  }));
  EXPECT_EQ(run({"-j", "table", "list"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out())["tables"][0]["flags"], Json::parse(R"(["dormant", "256"])"));
}

TEST_F(CliTest, TableDeleteDetachesItsFlowtables) {
  module_loaded_ = true;
  nft_kernel().add_table(NFPROTO_INET, "fw");
  nft_kernel().add_flowtable(NFPROTO_INET, "fw", "ft");
  nft_kernel().add_table(NFPROTO_INET, "other");
  nft_kernel().add_flowtable(NFPROTO_INET, "other", "x");
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  EXPECT_EQ(run({"table", "delete", "inet", "fw"}), kExitOk) << err();
  ASSERT_EQ(nft_kernel().state().tables.size(), 1U);
  EXPECT_EQ(nft_kernel().state().tables[0].name, "other");
  EXPECT_EQ(genl_command(genl().sent().at(1)), NFB_CMD_DETACH);
  EXPECT_EQ(genl().sent().size(), 2U);  // only fw's flowtable
}

TEST_F(CliTest, TableDeleteMissing) {
  nft_kernel().add_table(NFPROTO_IPV4, "filter");
  EXPECT_EQ(run({"table", "delete", "ip", "filtr"}), kExitFailure);
  EXPECT_NE(err().find("cannot delete table ip filtr: Could not process rule: No such file or "
                       "directory"),
            std::string::npos)
      << err();
  EXPECT_EQ(nft_kernel().state().tables.size(), 1U);
}

TEST_F(CliTest, FlowtableListJsonAlwaysArrays) {
  nft().expect(dump_reply([](const nlmsghdr& request) {
    return std::vector<Datagram>{flowtable_message(request, "fw", "ft", {"eth0"}, true)};
  }));
  EXPECT_EQ(run({"-j", "flowtable", "list"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out()), Json::parse(R"({"schema": 2, "flowtables": [
      {"family": "inet", "table": "fw", "name": "ft", "handle": 7, "hook": "ingress",
       "prio": -10, "devices": ["eth0"], "flags": ["counter"], "use": 0}]})"));
}

TEST_F(CliTest, FlowtableListFiltersTableAndPrintsText) {
  nft().expect(dump_reply([](const nlmsghdr& request) {
    return std::vector<Datagram>{flowtable_message(request, "fw", "ft", {"eth0", "eth1"}, false),
                                 flowtable_message(request, "other", "x", {"lo"}, false)};
  }));
  EXPECT_EQ(run({"flowtable", "list", "inet", "fw"}), kExitOk) << err();
  EXPECT_EQ(out(),
            "FAMILY  TABLE  NAME  HOOK     PRIORITY  DEVICES    FLAGS  HANDLE\n"
            "inet    fw     ft    ingress       -10  eth0,eth1  -           7\n");
}

// show is list, as in ip and nft; a FAMILY and NAME (a TABLE and NAME for a
// flowtable) list that object alone, and one that does not exist is an
// error, as `nft list table` / `nft list flowtable`.
TEST_F(CliTest, ShowIsListAndListNamesOneObject) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  nft_kernel().add_flowtable(NFPROTO_INET, "fw", "ft");
  nft_kernel().add_flowtable(NFPROTO_INET, "fw", "ft2");
  nft_kernel().add_table(NFPROTO_INET, "other");
  ASSERT_EQ(run({"-j", "table", "show", "inet", "fw"}), kExitOk) << err();
  Json json = Json::parse(out());
  ASSERT_EQ(json["tables"].size(), 1U) << out();
  EXPECT_EQ(json["tables"][0]["name"], "fw");
  ASSERT_EQ(run({"-j", "flowtable", "sh", "inet", "fw", "ft2"}), kExitOk) << err();
  json = Json::parse(out());
  ASSERT_EQ(json["flowtables"].size(), 1U) << out();
  EXPECT_EQ(json["flowtables"][0]["name"], "ft2");
  ASSERT_EQ(run({"-j", "table", "show"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out())["tables"].size(), 2U) << out();
  EXPECT_EQ(run({"flowtable", "list", "inet", "fw", "nope"}), kExitFailure);
  EXPECT_NE(err().find("Error: cannot list flowtable inet fw nope: no such flowtable"),
            std::string::npos)
      << err();
  EXPECT_EQ(run({"table", "list", "inet", "nope"}), kExitFailure);
  EXPECT_NE(err().find("Error: cannot list table inet nope: no such table"), std::string::npos)
      << err();
  EXPECT_EQ(run({"table", "list", "inet", "fw", "extra"}), kExitUsage);
}

TEST_F(CliTest, FlowtableAddIngressOnlyTalksToNftables) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  EXPECT_EQ(run({"flowtable", "add", "inet", "fw", "ft", "hook", "in", "pri", "-5", "dev",
                 "eth0,eth1", "counter"}),
            kExitOk)
      << err();
  EXPECT_EQ(transports_.opened(NETLINK_GENERIC), 0);
  ASSERT_EQ(nft_kernel().state().flowtables.size(), 1U);
  const FakeNftKernel::Flowtable& flowtable = nft_kernel().state().flowtables[0];
  EXPECT_EQ(flowtable.priority, -5);
  std::vector<std::string> devices = flowtable.devices;
  std::sort(devices.begin(), devices.end());
  EXPECT_EQ(devices, (std::vector<std::string>{"eth0", "eth1"}));
  EXPECT_EQ(flowtable.flags, static_cast<uint32_t>(NFT_FLOWTABLE_COUNTER));
}

TEST_F(CliTest, FlowtableAddEarlyIngressCreatesThenAttaches) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  EXPECT_EQ(
      run({"flowtable", "add", "inet", "fw", "ft", "hook", "early_ingress", "devices", "eth0"}),
      kExitOk)
      << err();
  EXPECT_EQ(nft_kernel().state().flowtables.size(), 1U);
  EXPECT_EQ(genl_command(genl().sent().at(1)), NFB_CMD_ATTACH);
  EXPECT_TRUE(genl().exhausted());
}

TEST_F(CliTest, FlowtableAddEarlyIngressWithoutModuleCreatesNothing) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  genl().expect(family_absent());
  EXPECT_EQ(run({"flowtable", "add", "inet", "fw", "ft", "hook", "early", "devices", "eth0"}),
            kExitFailure);
  EXPECT_NE(err().find("cannot add flowtable inet fw ft with hook early_ingress: the "
                       "nf_flow_bulk kernel module is not loaded"),
            std::string::npos)
      << err();
  EXPECT_EQ(nft_kernel().batches(), 0U);
}

TEST_F(CliTest, FlowtableAddEarlyIngressAttachFailureRemovesFlowtable) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(fail_message(0, EBUSY, "device eth0 is attached twice"));
  EXPECT_EQ(
      run({"flowtable", "add", "inet", "fw", "ft", "hook", "early_ingress", "devices", "eth0"}),
      kExitFailure);
  EXPECT_NE(err().find("attach failed, flowtable removed again: device eth0 is attached twice"),
            std::string::npos)
      << err();
  EXPECT_TRUE(nft_kernel().state().flowtables.empty());
}

// The attachment outlived an earlier table of that name (attachments follow
// the flowtable when it comes back): already attached is success, as with -f,
// and the flowtable just created stays.
TEST_F(CliTest, FlowtableAddEarlyIngressAlreadyAttachedKeepsTheFlowtable) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(fail_message(0, EEXIST, "flowtable already attached"));
  EXPECT_EQ(
      run({"flowtable", "add", "inet", "fw", "ft", "hook", "early_ingress", "devices", "eth0"}),
      kExitOk)
      << err();
  EXPECT_TRUE(err().empty()) << err();
  EXPECT_EQ(genl_command(genl().sent().at(1)), NFB_CMD_ATTACH);
  EXPECT_TRUE(genl().exhausted());
  ASSERT_EQ(nft_kernel().state().flowtables.size(), 1U);
  EXPECT_EQ(nft_kernel().state().flowtables[0].name, "ft");
}

TEST_F(CliTest, FlowtableAddMissingTableIsNftsMessage) {
  nft_kernel().add_table(NFPROTO_IPV4, "filter");
  EXPECT_EQ(run({"flowtable", "add", "ip", "nope", "ft", "hook", "ingress", "devices", "eth0"}),
            kExitFailure);
  EXPECT_NE(err().find("Error: cannot add flowtable ip nope ft: No such file or directory"),
            std::string::npos)
      << err();
}

TEST_F(CliTest, FlowtableAddDuplicateName) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  nft_kernel().add_flowtable(NFPROTO_INET, "fw", "ft");
  EXPECT_EQ(run({"flowtable", "add", "inet", "fw", "ft", "hook", "ingress", "devices", "eth1"}),
            kExitFailure);
  EXPECT_NE(err().find("cannot add flowtable inet fw ft: Could not process rule: File exists"),
            std::string::npos)
      << err();
  EXPECT_EQ(nft_kernel().state().flowtables.at(0).devices, std::vector<std::string>{"eth0"});
}

TEST_F(CliTest, FlowtableDeleteInUse) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  nft_kernel().add_flowtable(NFPROTO_INET, "fw", "ft");
  ASSERT_EQ(run({"offload", "add", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(run({"flowtable", "delete", "inet", "fw", "ft"}), kExitFailure);
  EXPECT_NE(err().find("cannot delete flowtable inet fw ft: Could not process rule: Device or "
                       "resource busy"),
            std::string::npos)
      << err();
  EXPECT_EQ(nft_kernel().state().flowtables.size(), 1U);
}

TEST_F(CliTest, FlowtableDeleteDetachesWhenModuleLoaded) {
  module_loaded_ = true;
  nft_kernel().add_table(NFPROTO_INET, "fw");
  nft_kernel().add_flowtable(NFPROTO_INET, "fw", "ft");
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(fail_message(0, ENOENT));  // was not attached: fine
  EXPECT_EQ(run({"-j", "flowtable", "delete", "inet", "fw", "ft"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out())["ok"], true);
  EXPECT_TRUE(nft_kernel().state().flowtables.empty());
}

TEST_F(CliTest, PermissionErrorIsReported) {
  nft_kernel().refuse_writes(EPERM);
  EXPECT_EQ(run({"table", "add", "inet", "fw"}), kExitFailure);
  EXPECT_NE(err().find("Operation not permitted"), std::string::npos) << err();
}

// ---- -f --------------------------------------------------------------------

// A file of this test process's own: ctest runs tests in parallel, each in
// its own process, and ::testing::TempDir() is the one /tmp they share.
std::string own_temp_path(const std::string& name) {
  return ::testing::TempDir() + "/flowbulk-test-" + std::to_string(::getpid()) + "-" + name;
}

const char* kEarlyRuleset =
    "table inet fw {\n"
    "  flowtable ft { hook early_ingress priority 0; devices = { eth0 } }\n"
    "}\n";

TEST_F(CliTest, LoadPlainRulesetGoesStraightToNft) {
  const std::string path = own_temp_path("plain.nft");
  {
    std::ofstream file(path);
    file << "table inet fw { }\n";
  }
  EXPECT_EQ(run({"-f", path}), kExitOk) << err();
  // Read once by flowbulk, loaded from memory: nft never opens the path.
  EXPECT_EQ(engine_.calls, (std::vector<std::string>{"text: " + path}));
  EXPECT_EQ(engine_.loaded_text, "table inet fw { }\n");
  EXPECT_TRUE(nothing_opened());
}

TEST_F(CliTest, LoadFromAFifoReadsItOnce) {
  const std::string path = own_temp_path("ruleset.fifo");
  unlink(path.c_str());
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  std::thread writer([&path] {
    std::ofstream fifo(path);
    fifo << "table inet viafifo { }\n";
  });
  const int rc = run({"-f", path});
  writer.join();
  unlink(path.c_str());
  EXPECT_EQ(rc, kExitOk) << err();
  EXPECT_EQ(engine_.calls, (std::vector<std::string>{"text: " + path}));
  EXPECT_EQ(engine_.loaded_text, "table inet viafifo { }\n");
}

TEST_F(CliTest, LoadFromAPipeLikeProcessSubstitution) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string text = "table ip viapipe { }\n";
  ASSERT_EQ(write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fds[1]);
  const std::string path = "/proc/self/fd/" + std::to_string(fds[0]);  // like <(...)
  const int rc = run({"-f", path});
  close(fds[0]);
  EXPECT_EQ(rc, kExitOk) << err();
  EXPECT_EQ(engine_.loaded_text, text);
}

TEST_F(CliTest, LoadRefusesDirectoriesAndDevicesBeforeReading) {
  EXPECT_EQ(run({"-f", ::testing::TempDir()}), kExitUsage);
  EXPECT_NE(err().find("Error: cannot read " + ::testing::TempDir() + ": it is a directory"),
            std::string::npos)
      << err();
  EXPECT_EQ(run({"-f", "/dev/zero"}), kExitUsage);
  EXPECT_EQ(err(), "Error: cannot read /dev/zero: not a regular file, FIFO or pipe\n");
  EXPECT_EQ(run({"-f", "/nonexistent/x.nft"}), kExitUsage);
  EXPECT_NE(err().find("Error: cannot read /nonexistent/x.nft: No such file"), std::string::npos)
      << err();
  EXPECT_TRUE(engine_.calls.empty());
}

TEST_F(CliTest, LoadRefusesOversizedInput) {
  const std::string path = own_temp_path("huge.nft");
  { std::ofstream file(path); }
  ASSERT_EQ(truncate(path.c_str(), (off_t{64} << 20) + 1), 0);  // sparse: instant
  EXPECT_EQ(run({"-f", path}), kExitUsage);
  EXPECT_NE(err().find("larger than 64 MiB"), std::string::npos) << err();
  unlink(path.c_str());
  in_.str(std::string((size_t{64} << 20) + 1, '#'));
  EXPECT_EQ(run({"-f", "-"}), kExitUsage);
  EXPECT_NE(err().find("cannot read standard input: larger than 64 MiB"), std::string::npos)
      << err();
  EXPECT_TRUE(engine_.calls.empty());
}

TEST_F(CliTest, LoadEarlyIngressRulesetAttaches) {
  in_.str(kEarlyRuleset);
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  EXPECT_EQ(run({"-j", "-f", "-"}), kExitOk) << err();
  // Only the load: nothing listed before it, nothing echoed for an undo.
  EXPECT_EQ(engine_.calls, (std::vector<std::string>{"text: /dev/stdin"}));
  EXPECT_NE(engine_.loaded_text.find("hook ingress       priority 0"), std::string::npos);
  EXPECT_EQ(genl_command(genl().sent().at(1)), NFB_CMD_ATTACH);
  EXPECT_EQ(Json::parse(out()), Json::parse(R"({"schema": 2, "file": "/dev/stdin", "loaded": true,
      "attached": [{"family": "inet", "table": "fw", "flowtable": "ft"}], "failed": [],
      "detached": []})"));
}

// -c -f, as nft -c -f: libnftables' dry run (the kernel checks and aborts),
// then what the load would attach and detach; no module, no listing, no
// attach. A ruleset nft refuses is an error with nft's message, and -c
// without -f is refused.
TEST_F(CliTest, CheckRulesetChangesNothing) {
  in_.str(std::string(kEarlyRuleset) +
          "table ip t2 { flowtable f2 { hook ingress priority 0; devices = { eth1 } } }\n");
  EXPECT_EQ(run({"-c", "-f", "-"}), kExitOk) << err();
  EXPECT_EQ(engine_.calls, (std::vector<std::string>{"check: /dev/stdin"}));
  EXPECT_NE(engine_.loaded_text.find("hook ingress       priority 0"), std::string::npos);
  EXPECT_TRUE(nothing_opened());
  EXPECT_EQ(out(),
            "would attach flowtable inet fw ft\n"
            "would detach flowtable ip t2 f2 if attached (declared hook ingress)\n");
  in_.clear();
  in_.str(kEarlyRuleset);
  EXPECT_EQ(run({"-j", "--check", "-f", "-"}), kExitOk) << err();
  EXPECT_EQ(Json::parse(out()), Json::parse(R"({"schema": 2, "file": "/dev/stdin", "check": true,
      "attach": [{"family": "inet", "table": "fw", "flowtable": "ft"}], "detach": []})"));
  engine_.load_result = {.ok = false, .output = {}, .errors = "/dev/stdin:2:3: Error: nope"};
  in_.clear();
  in_.str(kEarlyRuleset);
  EXPECT_EQ(run({"-c", "-f", "-"}), kExitFailure);
  EXPECT_EQ(err(), "Error: check of the ruleset failed:\n/dev/stdin:2:3: Error: nope\n");
  EXPECT_EQ(run({"-c", "table", "list"}), kExitUsage);
  EXPECT_TRUE(nothing_opened());
}

// A flowtable the file declares hook ingress is to be the stock one: its
// attachment goes (one that is not attached is no error), and flowbulk
// says so. Without the module loaded nothing is asked (no autoload).
TEST_F(CliTest, LoadDetachesWhatTheFileDeclaresIngress) {
  const char* ruleset =
      "table inet fw { flowtable ft { hook ingress priority 0; devices = { eth0 } } }\n"
      "table ip t2 { flowtable f2 { hook ingress priority 0; devices = { eth1 } } }\n";
  in_.str(ruleset);
  EXPECT_EQ(run({"-f", "-"}), kExitOk) << err();
  EXPECT_TRUE(genl().sent().empty());
  EXPECT_EQ(out(), "");

  module_loaded_ = true;
  in_.clear();
  in_.str(ruleset);
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(ack_all());
  genl().expect(fail_message(0, ENOENT, "flowtable not attached"));
  EXPECT_EQ(run({"-f", "-"}), kExitOk) << err();
  ASSERT_EQ(genl().sent().size(), 3U);
  EXPECT_EQ(genl_command(genl().sent().at(1)), NFB_CMD_DETACH);
  EXPECT_EQ(genl_command(genl().sent().at(2)), NFB_CMD_DETACH);
  EXPECT_EQ(out(), "detached flowtable inet fw ft: /dev/stdin declares it hook ingress\n");
}

TEST_F(CliTest, LoadingTheSameRulesetAgainKeepsTheAttachment) {
  in_.str(kEarlyRuleset);
  genl().expect(resolve_family(kFakeFamilyId));
  genl().expect(fail_message(0, EEXIST, "flowtable already attached"));
  EXPECT_EQ(run({"-f", "-"}), kExitOk) << err();
  EXPECT_EQ(engine_.calls.size(), 1U);  // the load; nothing undone
}

TEST_F(CliTest, LoadEarlyIngressWithoutModuleLoadsNothing) {
  in_.str(kEarlyRuleset);
  genl().expect(family_absent());
  EXPECT_EQ(run({"-f", "-"}), kExitFailure);
  EXPECT_NE(err().find("cannot load /dev/stdin (it has early_ingress flowtables)"),
            std::string::npos)
      << err();
  EXPECT_TRUE(engine_.calls.empty());
}

TEST_F(CliTest, LoadSyntaxErrorReportsNftMessageAndAttachesNothing) {
  in_.str(kEarlyRuleset);
  engine_.load_result = {.ok = false,
                         .output = {},
                         .errors = "/dev/stdin:2:3-11: Error: syntax error, unexpected junk"};
  genl().expect(resolve_family(kFakeFamilyId));
  EXPECT_EQ(run({"-f", "-"}), kExitFailure);
  EXPECT_EQ(err(),
            "Error: cannot load the ruleset:\n/dev/stdin:2:3-11: Error: syntax error, "
            "unexpected junk\n");
  EXPECT_EQ(genl().sent().size(), 1U);  // the family lookup only
}

// nft names the file with the line and column; the file is named once.
TEST_F(CliTest, LoadErrorNamesTheFileOnce) {
  const std::string path = own_temp_path("broken.nft");
  {
    std::ofstream file(path);
    file << "table inet fw { junk }\n";
  }
  engine_.load_result = {
      .ok = false, .output = {}, .errors = path + ":1:17-20: Error: syntax error, unexpected junk"};
  EXPECT_EQ(run({"-f", path}), kExitFailure);
  EXPECT_EQ(err(), "Error: cannot load the ruleset:\n" + path +
                       ":1:17-20: Error: syntax error, unexpected junk\n");
  // A message without a location still says which file.
  engine_.load_result = {.ok = false, .output = {}, .errors = "Error: out of memory"};
  EXPECT_EQ(run({"-f", path}), kExitFailure);
  EXPECT_EQ(err(), "Error: cannot load " + path + ":\nError: out of memory\n");
  // nft's own message, from the real libnftables.
  nft_kernel();
  EXPECT_EQ(run({"-f", path}), kExitFailure);
  EXPECT_EQ(err().rfind("Error: cannot load the ruleset:\n" + path + ":1:17-20: Error: ", 0), 0U)
      << err();
  unlink(path.c_str());
}

TEST_F(CliTest, LoadErrorQuotesTheUsersLineNotTheRewrittenOne) {
  in_.str(kEarlyRuleset);
  engine_.load_result = {
      .ok = false,
      .output = {},
      .errors =
          "/dev/stdin:2:3-11: Error: oops\n"
          "  flowtable ft { hook ingress       priority 0; devices = { eth0 } }\n"
          "  ^^^^^^^^^"};
  genl().expect(resolve_family(kFakeFamilyId));
  EXPECT_EQ(run({"-f", "-"}), kExitFailure);
  EXPECT_EQ(err(),
            "Error: cannot load the ruleset:\n/dev/stdin:2:3-11: Error: oops\n"
            "  flowtable ft { hook early_ingress priority 0; devices = { eth0 } }\n"
            "  ^^^^^^^^^\n");
}

// ---- -f with an attach that fails ------------------------------------------------

// Three early_ingress flowtables; the module refuses the second.
const char* kThreeFlowtables =
    "table inet fw {\n"
    "  flowtable ft { hook early_ingress priority 0; devices = { eth0 } }\n"
    "}\n"
    "table ip t2 { flowtable f2 { hook early_ingress priority 0; } }\n"
    "table ip t3 { flowtable f3 { hook early_ingress priority 0; devices = { eth1 } } }\n";

class LoadNotAttachedTest : public CliTest {
 protected:
  LoadNotAttachedTest() {
    in_.str(kThreeFlowtables);
    genl().expect(resolve_family(kFakeFamilyId));
    genl().expect(ack_all());                                                    // fw ft
    genl().expect(fail_message(0, ENOENT, "flowtable ip t2 f2 has no device"));  // t2 f2
    genl().expect(ack_all());                                                    // t3 f3
  }
  std::vector<uint8_t> module_commands() {
    std::vector<uint8_t> commands;
    for (size_t i = 1; i < genl().sent().size(); ++i) {
      commands.push_back(genl_command(genl().sent()[i]));
    }
    return commands;
  }
};

// The load stays, whatever the module says: nothing is listed before it,
// nothing is deleted or detached after it, and the flowtable after the one
// that failed is still attached. Exit status 3 says "loaded, not attached".
TEST_F(LoadNotAttachedTest, TheLoadStaysAndEveryAttachIsTried) {
  EXPECT_EQ(run({"-f", "-"}), kExitNotAttached);
  EXPECT_EQ(engine_.calls, (std::vector<std::string>{"text: /dev/stdin"}));
  EXPECT_EQ(module_commands(),
            (std::vector<uint8_t>{NFB_CMD_ATTACH, NFB_CMD_ATTACH, NFB_CMD_ATTACH}));
  EXPECT_EQ(err(),
            "Error: loaded /dev/stdin; not attached: flowtable ip t2 f2 (flowtable ip t2 f2 has no "
            "device: No such file or directory (ENOENT, errno 2)); the ruleset stays as loaded "
            "(these flowtables work at hook ingress, without nf_flow_bulk); attach with: flowbulk "
            "attach ip t2 f2\n");
  EXPECT_TRUE(out().empty());
}

TEST_F(LoadNotAttachedTest, JsonSaysLoadedAttachedAndFailed) {
  EXPECT_EQ(run({"-j", "-f", "-"}), kExitNotAttached);
  EXPECT_EQ(Json::parse(out()),
            Json::parse(R"json({"schema": 2, "file": "/dev/stdin", "loaded": true,
      "attached": [{"family": "inet", "table": "fw", "flowtable": "ft"},
                   {"family": "ip", "table": "t3", "flowtable": "f3"}],
      "failed": [{"family": "ip", "table": "t2", "flowtable": "f2",
                  "error": "flowtable ip t2 f2 has no device: No such file or directory (ENOENT, errno 2)",
                  "errno": 2}],
      "detached": []})json"));
  EXPECT_EQ(err().rfind("Error: loaded /dev/stdin; not attached: flowtable ip t2 f2 (", 0), 0U)
      << err();
}

volatile sig_atomic_t terms_delivered = 0;
void count_term(int /*signal*/) {
  terms_delivered = terms_delivered + 1;
}

// SIGTERM during the load is held back until every attach has been tried
// and the outcome printed, then handed to main() instead of killing the
// process between the load and the attaches.
TEST_F(LoadNotAttachedTest, AnInterruptWaitsForTheAttachesToEnd) {
  struct sigaction counting {};
  counting.sa_handler = count_term;
  sigemptyset(&counting.sa_mask);
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGTERM, &counting, &previous), 0);
  terms_delivered = 0;
  engine_.on_load = [] { raise(SIGTERM); };
  EXPECT_EQ(run({"-f", "-"}), kExitNotAttached);
  EXPECT_EQ(terms_delivered, 0);
  EXPECT_EQ(module_commands().size(), 3U);
  EXPECT_NE(err().find("not attached: flowtable ip t2 f2"), std::string::npos) << err();
  EXPECT_EQ(take_deferred_signal(), SIGTERM);
  EXPECT_EQ(take_deferred_signal(), 0);
  sigset_t blocked;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, nullptr, &blocked), 0);
  EXPECT_EQ(sigismember(&blocked, SIGTERM), 0);  // the mask is as it was
  raise(SIGTERM);
  EXPECT_EQ(terms_delivered, 1);
  sigaction(SIGTERM, &previous, nullptr);
}

// The same through the real libnftables and the semantic fake nf_tables:
// after a failed attach the ruleset is exactly what `nft -f` of the file
// (early_ingress read as ingress) leaves, for a file that starts with
// `flush ruleset` as /etc/nftables.conf does and for one that adds to
// what is there.
class LoadNotAttachedRulesetTest : public CliTest {
 protected:
  LoadNotAttachedRulesetTest() { nft_kernel(); }

  // What runs at boot: a firewall that lets loopback, replies and ssh in,
  // and another program's table (docker's, libvirt's).
  void boot() {
    write_file("boot.nft",
               "table inet filter {\n"
               "  chain input {\n"
               "    type filter hook input priority filter; policy drop;\n"
               "    iifname \"lo\" accept\n"
               "    ct state established,related accept\n"
               "    tcp dport 22 accept\n"
               "  }\n"
               "}\n");
    ASSERT_EQ(run({"-f", path("boot.nft")}), kExitOk) << err();
    nft_kernel().add_table(NFPROTO_IPV4, "docker");
    nft_kernel().add_base_chain(NFPROTO_IPV4, "docker", "forward", NF_INET_FORWARD, 0, NF_DROP);
    nft_kernel().add_verdict_rule(NFPROTO_IPV4, "docker", "forward", NF_ACCEPT);
  }

  // flowbulk -f FILE with the module refusing the attach, then the same
  // file with `ingress` loaded by plain nft -f (no early_ingress, so
  // flowbulk hands it to libnftables and nothing else) onto the same
  // start: the two rulesets must be the same.
  void expect_as_nft_would_load(const std::string& file, int refusal) {
    write_file("file.nft", file);
    std::string plain = file;
    for (size_t at = plain.find("early_ingress"); at != std::string::npos;
         at = plain.find("early_ingress", at)) {
      plain.replace(at, std::string("early_ingress").size(), "ingress");
    }
    write_file("plain.nft", plain);

    boot();
    genl().expect(resolve_family(kFakeFamilyId));
    genl().expect(fail_message(0, refusal));
    EXPECT_EQ(run({"-f", path("file.nft")}), kExitNotAttached) << err();
    EXPECT_NE(err().find("Error: loaded " + path("file.nft") + "; not attached: flowtable "),
              std::string::npos)
        << err();
    EXPECT_NE(err().find("the ruleset stays as loaded"), std::string::npos) << err();
    EXPECT_EQ(genl().sent().size(), 2U);  // the family, the attach; no detach
    after_flowbulk_ = ruleset_text();

    nft_kernel_ = FakeNftKernel();
    boot();
    ASSERT_EQ(run({"-f", path("plain.nft")}), kExitOk) << err();
    EXPECT_EQ(after_flowbulk_, ruleset_text());
  }

  // Every table, chain, set, flowtable and rule of the fake, handles
  // included, one per line.
  std::string ruleset_text() {
    const FakeNftKernel::State& state = nft_kernel().state();
    std::ostringstream text;
    for (const auto& table : state.tables) {
      text << "table " << int{table.family} << " " << table.name << " " << table.handle << "\n";
    }
    for (const auto& chain : state.chains) {
      text << "chain " << int{chain.family} << " " << chain.table << " " << chain.name << " "
           << chain.handle << " base " << chain.base << " " << chain.type << " hook "
           << chain.hooknum << " priority " << chain.priority << " policy " << chain.policy << "\n";
      for (const std::string& rule : nft_kernel().rules(chain.family, chain.table, chain.name)) {
        text << "  rule " << rule << "\n";
      }
    }
    for (const auto& set : state.sets) {
      text << "set " << int{set.family} << " " << set.table << " " << set.name << " " << set.handle
           << " flags " << set.flags << " elements " << set.elements.size() << "\n";
    }
    for (const auto& flowtable : state.flowtables) {
      text << "flowtable " << int{flowtable.family} << " " << flowtable.table << " "
           << flowtable.name << " " << flowtable.handle << " priority " << flowtable.priority
           << " flags " << flowtable.flags << " devices";
      for (const std::string& device : flowtable.devices) {
        text << " " << device;
      }
      text << "\n";
    }
    return text.str();
  }

  std::string path(const std::string& name) const { return own_temp_path(name); }
  void write_file(const std::string& name, const std::string& text) const {
    std::ofstream file(path(name));
    file << text;
  }

  std::string after_flowbulk_;
};

// The issue's lock-out: the load flushes everything and makes the same
// firewall again, the attach fails. The input chain keeps `policy drop`
// and its three accept rules (an undo of "what the load created" deleted
// all three).
TEST_F(LoadNotAttachedRulesetTest, AFlushRulesetFileStaysLoadedWhole) {
  expect_as_nft_would_load(
      "flush ruleset\n"
      "table inet filter {\n"
      "  flowtable ft {\n"
      "    hook early_ingress priority 0\n"
      "    devices = { eth0, eth1 }\n"
      "  }\n"
      "  chain input {\n"
      "    type filter hook input priority filter; policy drop;\n"
      "    iifname \"lo\" accept\n"
      "    ct state established,related accept\n"
      "    tcp dport 22 accept\n"
      "  }\n"
      "  chain forward {\n"
      "    type filter hook forward priority filter; policy drop;\n"
      "    meta l4proto { tcp, udp } flow add @ft\n"
      "    ct state established,related accept\n"
      "  }\n"
      "}\n",
      ENOSPC);
  const auto input = nft_kernel().chain(NFPROTO_INET, "filter", "input");
  ASSERT_TRUE(input);
  EXPECT_EQ(input->policy, static_cast<uint32_t>(NF_DROP));
  EXPECT_EQ(nft_kernel().rules(NFPROTO_INET, "filter", "input").size(), 3U) << after_flowbulk_;
  EXPECT_NE(after_flowbulk_.find("flowtable 1 filter ft"), std::string::npos) << after_flowbulk_;
  EXPECT_EQ(after_flowbulk_.find("docker"), std::string::npos) << after_flowbulk_;  // flushed
}

// A file that adds: the rule it appends to the existing input chain, its
// new table and flowtable stay, and so does docker's table.
TEST_F(LoadNotAttachedRulesetTest, AnAppendingFileStaysLoadedAndOthersTablesStay) {
  expect_as_nft_would_load(
      "add rule inet filter input tcp dport 80 accept\n"
      "table inet fast {\n"
      "  flowtable ft { hook early_ingress priority 0; }\n"
      "  chain forward {\n"
      "    type filter hook forward priority filter; policy accept;\n"
      "    meta l4proto tcp flow add @ft\n"
      "  }\n"
      "}\n",
      ENOENT);
  EXPECT_EQ(nft_kernel().rules(NFPROTO_INET, "filter", "input").size(), 4U) << after_flowbulk_;
  EXPECT_EQ(nft_kernel().rules(NFPROTO_IPV4, "docker", "forward").size(), 1U) << after_flowbulk_;
  EXPECT_NE(after_flowbulk_.find("flowtable 1 fast ft"), std::string::npos) << after_flowbulk_;
}

TEST_F(CliTest, FlowtableDeviceAddAndDeleteKeepTheHook) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  ASSERT_EQ(run({"flowtable", "add", "inet", "fw", "ft", "hook", "ingress", "priority", "-5",
                 "devices", "eth0"}),
            kExitOk)
      << err();
  // The kernel refuses an update naming another priority: flowbulk must
  // name the flowtable's own -5.
  EXPECT_EQ(run({"flowtable", "device", "add", "inet", "fw", "ft", "eth1"}), kExitOk) << err();
  ASSERT_EQ(nft_kernel().state().flowtables.size(), 1U);
  std::vector<std::string> devices = nft_kernel().state().flowtables[0].devices;
  std::sort(devices.begin(), devices.end());
  EXPECT_EQ(devices, (std::vector<std::string>{"eth0", "eth1"}));
  EXPECT_EQ(nft_kernel().state().flowtables[0].priority, -5);

  EXPECT_EQ(run({"flowtable", "device", "delete", "inet", "fw", "ft", "eth0"}), kExitOk) << err();
  ASSERT_EQ(nft_kernel().state().flowtables.size(), 1U);
  EXPECT_EQ(nft_kernel().state().flowtables[0].devices, (std::vector<std::string>{"eth1"}));
  // A device that no longer exists may still be named (a PPPoE session
  // gone); one the flowtable lacks is nft's error.
  EXPECT_EQ(run({"flowtable", "device", "delete", "inet", "fw", "ft", "ppp9"}), kExitFailure);
  EXPECT_NE(err().find("cannot delete devices from flowtable inet fw ft"), std::string::npos)
      << err();
  EXPECT_EQ(nft_kernel().state().flowtables[0].devices, (std::vector<std::string>{"eth1"}));
}

TEST_F(CliTest, FlowtableDeviceCheckEchoAndErrors) {
  nft_kernel().add_table(NFPROTO_INET, "fw");
  nft_kernel().add_flowtable(NFPROTO_INET, "fw", "ft");
  EXPECT_EQ(run({"-c", "flowtable", "device", "add", "inet", "fw", "ft", "eth1"}), kExitOk)
      << err();
  EXPECT_EQ(nft_kernel().state().flowtables[0].devices, (std::vector<std::string>{"eth0"}));
  EXPECT_EQ(run({"-e", "flowtable", "device", "add", "inet", "fw", "ft", "eth1"}), kExitOk)
      << err();
  EXPECT_EQ(nft_kernel().state().flowtables[0].devices, (std::vector<std::string>{"eth0", "eth1"}));
  EXPECT_EQ(run({"-j", "flowtable", "device", "delete", "inet", "fw", "ft", "eth1"}), kExitOk)
      << err();
  EXPECT_EQ(Json::parse(out()), Json::parse(R"({"schema": 2, "ok": true})"));

  EXPECT_EQ(run({"flowtable", "device", "add", "inet", "fw", "nope", "eth1"}), kExitFailure);
  EXPECT_NE(err().find("No such file or directory"), std::string::npos) << err();
  EXPECT_EQ(run({"flowtable", "device", "add", "inet", "fw", "ft"}), kExitUsage);
  EXPECT_EQ(run({"flowtable", "device", "add", "inet", "fw", "ft", "eth1", "x"}), kExitUsage);
  EXPECT_EQ(run({"flowtable", "device", "frob", "inet", "fw", "ft", "eth1"}), kExitUsage);
  EXPECT_EQ(run({"flowtable", "device", "add", "inet", "fw", "ft", "nosuchdev"}), kExitUsage);
  EXPECT_EQ(run({"flowtable", "device", "delete", "inet", "fw", "ft", "eth1,eth1"}), kExitUsage);
  EXPECT_EQ(run({"flowtable", "device", "help"}), kExitOk);
  EXPECT_NE(out().find("flowtable device"), std::string::npos);
}

}  // namespace
}  // namespace flowbulk::testing
