// SPDX-License-Identifier: GPL-2.0
#include "nfb_client.h"

#include <gtest/gtest.h>
#include <linux/netfilter.h>
#include <nf_flow_bulk.h>

#include <map>

#include "error.h"
#include "fake_kernel.h"

namespace flowbulk {
namespace {

using testing::attachment_message;
using testing::kFakeFamilyId;
using testing::messages_of;
using testing::stats_message;

std::map<uint16_t, const nlattr*> genl_attributes(const nlmsghdr& message) {
  std::map<uint16_t, const nlattr*> attributes;
  mnl_attr_parse(
      &message, sizeof(genlmsghdr),
      [](const nlattr* attribute, void* data) {
        (*static_cast<std::map<uint16_t, const nlattr*>*>(data))[mnl_attr_get_type(attribute)] =
            attribute;
        return MNL_CB_OK;
      },
      &attributes);
  return attributes;
}

const genlmsghdr& genl_header(const nlmsghdr& message) {
  return *static_cast<const genlmsghdr*>(mnl_nlmsg_get_payload(&message));
}

struct NfbClientFixture : ::testing::Test {
  NfbClientFixture() {
    auto owned = std::make_unique<ReplayTransport>();
    transport = owned.get();
    client = std::make_unique<NfbClient>(std::move(owned));
  }
  ReplayTransport* transport;
  std::unique_ptr<NfbClient> client;
  const FlowtableRef flowtable{.family = NFPROTO_INET, .table = "filter", .flowtable = "ft"};
};

TEST_F(NfbClientFixture, ResolvesFamilyByName) {
  transport->expect(testing::resolve_family(kFakeFamilyId));
  EXPECT_EQ(client->family_id(), kFakeFamilyId);
  const nlmsghdr& request = *messages_of(transport->sent().at(0)).at(0);
  EXPECT_EQ(request.nlmsg_type, GENL_ID_CTRL);
  EXPECT_EQ(genl_header(request).cmd, CTRL_CMD_GETFAMILY);
  auto attributes = genl_attributes(request);
  ASSERT_TRUE(attributes.count(CTRL_ATTR_FAMILY_NAME));
  EXPECT_STREQ(mnl_attr_get_str(attributes[CTRL_ATTR_FAMILY_NAME]), "nf_flow_bulk");
  // Cached: no second lookup.
  EXPECT_EQ(client->family_id(), kFakeFamilyId);
  EXPECT_EQ(transport->sent().size(), 1U);
}

TEST_F(NfbClientFixture, AbsentModuleIsNamed) {
  transport->expect(testing::family_absent());
  try {
    client->family_id();
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.sys_errno(), ENOENT);
    EXPECT_NE(std::string(error.what()).find("modprobe nf_flow_bulk"), std::string::npos);
  }
}

// A module of another interface version numbers its attributes and
// counters otherwise: refused by name, before any request is read wrong.
TEST_F(NfbClientFixture, ModuleOfAnotherInterfaceVersionIsRefused) {
  for (uint32_t version : {1U, static_cast<uint32_t>(NFB_GENL_VERSION) + 1}) {
    transport->expect(testing::resolve_family(kFakeFamilyId, version));
    try {
      client->family_id();
      FAIL() << "version " << version << " accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.sys_errno(), EPROTO);
      EXPECT_NE(std::string(error.what()).find("interface version " + std::to_string(version)),
                std::string::npos)
          << error.what();
    }
  }
}

TEST_F(NfbClientFixture, AttachSendsFamilyTableAndFlowtable) {
  transport->expect(testing::resolve_family(kFakeFamilyId));
  transport->expect(testing::ack_all());
  client->attach(flowtable);
  const nlmsghdr& request = *messages_of(transport->sent().at(1)).at(0);
  EXPECT_EQ(request.nlmsg_type, kFakeFamilyId);
  EXPECT_EQ(request.nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_EQ(genl_header(request).cmd, NFB_CMD_ATTACH);
  EXPECT_EQ(genl_header(request).version, NFB_GENL_VERSION);
  // The module validates strictly: reserved byte zero, no unknown attributes.
  EXPECT_EQ(genl_header(request).reserved, 0);
  auto attributes = genl_attributes(request);
  EXPECT_EQ(mnl_attr_get_u32(attributes.at(NFB_A_FAMILY)), NFPROTO_INET);
  EXPECT_STREQ(mnl_attr_get_str(attributes.at(NFB_A_TABLE)), "filter");
  EXPECT_STREQ(mnl_attr_get_str(attributes.at(NFB_A_FLOWTABLE)), "ft");
  EXPECT_EQ(attributes.size(), 3U);
}

TEST_F(NfbClientFixture, EveryRequestHasAZeroReservedByte) {
  transport->expect(testing::resolve_family(kFakeFamilyId));
  transport->expect(testing::ack_all());
  transport->expect(testing::ack_all());
  client->attach(flowtable);
  client->detach(flowtable);
  for (const Datagram& sent : transport->sent()) {
    for (const nlmsghdr* message : messages_of(sent)) {
      EXPECT_EQ(genl_header(*message).reserved, 0);
    }
  }
}

TEST_F(NfbClientFixture, DetachUsesDetachCommand) {
  transport->expect(testing::resolve_family(kFakeFamilyId));
  transport->expect(testing::ack_all());
  client->detach(flowtable);
  EXPECT_EQ(genl_header(*messages_of(transport->sent().at(1)).at(0)).cmd, NFB_CMD_DETACH);
}

TEST_F(NfbClientFixture, AttachErrorKeepsExtack) {
  transport->expect(testing::resolve_family(kFakeFamilyId));
  transport->expect(testing::fail_message(0, ENOENT, "flowtable not found"));
  try {
    client->attach(flowtable);
    FAIL() << "no error";
  } catch (const KernelError& error) {
    EXPECT_EQ(error.sys_errno(), ENOENT);
    EXPECT_EQ(error.extack(), "flowtable not found");
  }
}

TEST_F(NfbClientFixture, ListAttachmentsParsesDump) {
  transport->expect(testing::resolve_family(kFakeFamilyId));
  transport->expect(testing::dump_reply([](const nlmsghdr& request) {
    return std::vector<Datagram>{
        attachment_message(request, "fw", "ft", -100, {{2, "eth0"}, {3, "eth1"}}),
        attachment_message(request, "t2", "f2", 5, {})};
  }));
  auto attachments = client->list_attachments();
  const nlmsghdr& request = *messages_of(transport->sent().at(1)).at(0);
  EXPECT_EQ(request.nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
  EXPECT_EQ(genl_header(request).cmd, NFB_CMD_GET_ATTACH);
  ASSERT_EQ(attachments.size(), 2U);
  EXPECT_EQ(attachments[0].flowtable.family, NFPROTO_IPV4);
  EXPECT_EQ(attachments[0].flowtable.table, "fw");
  EXPECT_EQ(attachments[0].flowtable.flowtable, "ft");
  EXPECT_EQ(attachments[0].flowtable_priority, -100);
  ASSERT_EQ(attachments[0].devices.size(), 2U);
  EXPECT_EQ(attachments[0].devices[1].ifindex, 3U);
  EXPECT_EQ(attachments[0].devices[1].ifname, "eth1");
  EXPECT_FALSE(attachments[0].devices[1].adjacent);  // not sent: unknown
  EXPECT_FALSE(attachments[0].scans);
  EXPECT_TRUE(attachments[1].devices.empty());
}

TEST_F(NfbClientFixture, ListAttachmentsReadsScansAndAdjacency) {
  transport->expect(testing::resolve_family(kFakeFamilyId));
  transport->expect(testing::dump_reply([](const nlmsghdr& request) {
    return std::vector<Datagram>{attachment_message(
        request, "fw", "ft", 0, {{2, "eth0", 1}, {3, "eth1", 0}}, uint64_t{1} << 40)};
  }));
  const auto attachments = client->list_attachments();
  ASSERT_EQ(attachments.size(), 1U);
  EXPECT_EQ(attachments[0].scans, uint64_t{1} << 40);
  ASSERT_EQ(attachments[0].devices.size(), 2U);
  EXPECT_EQ(attachments[0].devices[0].adjacent, true);
  EXPECT_EQ(attachments[0].devices[1].adjacent, false);
}

TEST_F(NfbClientFixture, StatsParsesEveryCounterAndKeepsUnknownReasons) {
  transport->expect(testing::resolve_family(kFakeFamilyId));
  transport->expect(testing::dump_reply([](const nlmsghdr& request) {
    std::vector<uint64_t> decline(__NFB_DECLINE_MAX + 2, 0);
    decline[NFB_DECLINE_MISS] = 10;
    decline[__NFB_DECLINE_MAX + 1] = 3;  // a reason this tool does not know
    // CPUs out of order: the client sorts them.
    return std::vector<Datagram>{stats_message(request, 1, 100, 10, {0, 0, 0, 10}, decline),
                                 stats_message(request, 0, 7, 7, {7}, {})};
  }));
  auto per_cpu = client->get_stats();
  EXPECT_EQ(genl_header(*messages_of(transport->sent().at(1)).at(0)).cmd, NFB_CMD_GET_STATS);
  ASSERT_EQ(per_cpu.size(), 2U);
  EXPECT_EQ(per_cpu[0].cpu, 0U);
  EXPECT_EQ(per_cpu[1].packets, 100U);
  EXPECT_EQ(per_cpu[1].bulks, 10U);
  ASSERT_EQ(per_cpu[1].histogram.size(), 4U);
  EXPECT_EQ(per_cpu[1].histogram[3], 10U);
  ASSERT_EQ(per_cpu[1].decline.size(), __NFB_DECLINE_MAX + 2U);
  EXPECT_EQ(per_cpu[1].decline[NFB_DECLINE_MISS], 10U);
  EXPECT_EQ(per_cpu[1].decline[__NFB_DECLINE_MAX + 1], 3U);
  EXPECT_EQ(per_cpu[1].fallback.at(1), 1U);
  EXPECT_EQ(per_cpu[1].drop.at(NFB_DROP_NOMEM), 2U);

  CpuStats total = total_stats(per_cpu);
  EXPECT_EQ(total.packets, 107U);
  EXPECT_EQ(total.histogram[0], 7U);
  EXPECT_EQ(total.histogram[3], 10U);
  EXPECT_EQ(total.drop.at(NFB_DROP_NOMEM), 4U);
}

TEST_F(NfbClientFixture, ResetStatsAsksForAck) {
  transport->expect(testing::resolve_family(kFakeFamilyId));
  transport->expect(testing::ack_all());
  client->reset_stats();
  const nlmsghdr& request = *messages_of(transport->sent().at(1)).at(0);
  EXPECT_EQ(genl_header(request).cmd, NFB_CMD_RESET_STATS);
  EXPECT_EQ(request.nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_TRUE(genl_attributes(request).empty());
}

TEST(FlowtableRef, PrintsLikeNft) {
  EXPECT_EQ((FlowtableRef{.family = NFPROTO_IPV6, .table = "t", .flowtable = "f"}).to_string(),
            "ip6 t f");
}

}  // namespace
}  // namespace flowbulk
