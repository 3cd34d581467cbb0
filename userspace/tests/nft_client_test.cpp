// SPDX-License-Identifier: GPL-2.0
#include "nft_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <libnftnl/common.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include "error.h"
#include "fake_kernel.h"

namespace flowbulk {
namespace {

using testing::messages_of;

uint8_t nft_message_type(const nlmsghdr& message) {
  return message.nlmsg_type & 0xff;
}

const nfgenmsg& nfgen(const nlmsghdr& message) {
  return *static_cast<const nfgenmsg*>(mnl_nlmsg_get_payload(&message));
}

// Begin and end markers around the messages; returns the messages between.
std::vector<const nlmsghdr*> batch_body(const Datagram& datagram) {
  auto messages = messages_of(datagram);
  EXPECT_GE(messages.size(), 2U);
  EXPECT_EQ(messages.front()->nlmsg_type, NFNL_MSG_BATCH_BEGIN);
  EXPECT_EQ(ntohs(nfgen(*messages.front()).res_id), NFNL_SUBSYS_NFTABLES);
  EXPECT_EQ(messages.back()->nlmsg_type, NFNL_MSG_BATCH_END);
  return {messages.begin() + 1, messages.end() - 1};
}

struct NftClientFixture : ::testing::Test {
  NftClientFixture() {
    auto owned = std::make_unique<ReplayTransport>();
    transport = owned.get();
    client = std::make_unique<NftClient>(std::move(owned));
  }
  ReplayTransport* transport;
  std::unique_ptr<NftClient> client;
};

TEST_F(NftClientFixture, AddTableIsAnExclusiveCreateInABatch) {
  transport->expect(testing::ack_all());
  client->add_table(NFPROTO_INET, "filter");
  auto body = batch_body(transport->sent().at(0));
  ASSERT_EQ(body.size(), 1U);
  EXPECT_EQ(body[0]->nlmsg_type, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE);
  EXPECT_EQ(body[0]->nlmsg_flags, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
  EXPECT_EQ(nfgen(*body[0]).nfgen_family, NFPROTO_INET);
  NftnlTablePtr table(nftnl_table_alloc());
  ASSERT_GE(nftnl_table_nlmsg_parse(body[0], table.get()), 0);
  EXPECT_STREQ(nftnl_table_get_str(table.get(), NFTNL_TABLE_NAME), "filter");
}

TEST_F(NftClientFixture, AddTableErrorIsThrown) {
  transport->expect(testing::fail_message(1, EEXIST));
  try {
    client->add_table(NFPROTO_IPV4, "t");
    FAIL() << "no error";
  } catch (const KernelError& error) {
    EXPECT_EQ(error.sys_errno(), EEXIST);
  }
}

TEST_F(NftClientFixture, DeleteTable) {
  transport->expect(testing::ack_all());
  client->delete_table(NFPROTO_IPV6, "t6");
  auto body = batch_body(transport->sent().at(0));
  ASSERT_EQ(body.size(), 1U);
  EXPECT_EQ(nft_message_type(*body[0]), NFT_MSG_DELTABLE);
  EXPECT_EQ(nfgen(*body[0]).nfgen_family, NFPROTO_IPV6);
}

TEST_F(NftClientFixture, AddFlowtableCarriesHookPriorityDevicesAndCounter) {
  transport->expect(testing::ack_all());
  FlowtableSpec spec{.ref = {.family = NFPROTO_INET, .table = "fw", .flowtable = "ft"},
                     .priority = -50,
                     .devices = {"eth0", "eth1"},
                     .counter = true};
  client->add_flowtable(spec);
  auto body = batch_body(transport->sent().at(0));
  ASSERT_EQ(body.size(), 1U);
  EXPECT_EQ(nft_message_type(*body[0]), NFT_MSG_NEWFLOWTABLE);
  EXPECT_EQ(body[0]->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL), NLM_F_CREATE | NLM_F_EXCL);
  NftnlFlowtablePtr flowtable(nftnl_flowtable_alloc());
  ASSERT_GE(nftnl_flowtable_nlmsg_parse(body[0], flowtable.get()), 0);
  EXPECT_STREQ(nftnl_flowtable_get_str(flowtable.get(), NFTNL_FLOWTABLE_TABLE), "fw");
  EXPECT_STREQ(nftnl_flowtable_get_str(flowtable.get(), NFTNL_FLOWTABLE_NAME), "ft");
  EXPECT_EQ(nftnl_flowtable_get_u32(flowtable.get(), NFTNL_FLOWTABLE_HOOKNUM), NF_NETDEV_INGRESS);
  EXPECT_EQ(nftnl_flowtable_get_s32(flowtable.get(), NFTNL_FLOWTABLE_PRIO), -50);
  EXPECT_EQ(nftnl_flowtable_get_u32(flowtable.get(), NFTNL_FLOWTABLE_FLAGS),
            static_cast<uint32_t>(NFT_FLOWTABLE_COUNTER));
  const char* const* devices = nftnl_flowtable_get_array(flowtable.get(), NFTNL_FLOWTABLE_DEVICES);
  ASSERT_NE(devices, nullptr);
  EXPECT_STREQ(devices[0], "eth0");
  EXPECT_STREQ(devices[1], "eth1");
  EXPECT_EQ(devices[2], nullptr);
}

TEST_F(NftClientFixture, FlowtableWithoutCounterHasNoFlags) {
  transport->expect(testing::ack_all());
  client->add_flowtable(
      FlowtableSpec{.ref = {.family = NFPROTO_IPV4, .table = "t", .flowtable = "f"},
                    .priority = 0,
                    .devices = {"lo"},
                    .counter = false});
  NftnlFlowtablePtr flowtable(nftnl_flowtable_alloc());
  ASSERT_GE(nftnl_flowtable_nlmsg_parse(batch_body(transport->sent().at(0))[0], flowtable.get()),
            0);
  EXPECT_FALSE(nftnl_flowtable_is_set(flowtable.get(), NFTNL_FLOWTABLE_FLAGS) &&
               nftnl_flowtable_get_u32(flowtable.get(), NFTNL_FLOWTABLE_FLAGS) != 0);
}

TEST_F(NftClientFixture, DeleteFlowtable) {
  transport->expect(testing::ack_all());
  client->delete_flowtable({.family = NFPROTO_INET, .table = "fw", .flowtable = "ft"});
  auto body = batch_body(transport->sent().at(0));
  ASSERT_EQ(body.size(), 1U);
  EXPECT_EQ(nft_message_type(*body[0]), NFT_MSG_DELFLOWTABLE);
}

// Offload rules: offload_test.cpp, against the semantic fake nf_tables.

Datagram table_message(const nlmsghdr& request, uint8_t family, const char* name, uint64_t handle) {
  std::vector<uint8_t> buffer(4096);
  nlmsghdr* header = nftnl_nlmsg_build_hdr(reinterpret_cast<char*>(buffer.data()), NFT_MSG_NEWTABLE,
                                           family, NLM_F_MULTI, request.nlmsg_seq);
  header->nlmsg_pid = request.nlmsg_pid;
  NftnlTablePtr table(nftnl_table_alloc());
  nftnl_table_set_str(table.get(), NFTNL_TABLE_NAME, name);
  nftnl_table_set_u64(table.get(), NFTNL_TABLE_HANDLE, handle);
  nftnl_table_nlmsg_build_payload(header, table.get());
  return Datagram(buffer.begin(), buffer.begin() + header->nlmsg_len);
}

TEST_F(NftClientFixture, ListTablesDumpsAndParses) {
  transport->expect(testing::dump_reply([](const nlmsghdr& request) {
    return std::vector<Datagram>{table_message(request, NFPROTO_INET, "a", 1),
                                 table_message(request, NFPROTO_IPV4, "b", 2)};
  }));
  auto tables = client->list_tables(std::nullopt);
  const nlmsghdr& request = *messages_of(transport->sent().at(0)).at(0);
  EXPECT_EQ(nft_message_type(request), NFT_MSG_GETTABLE);
  EXPECT_NE(request.nlmsg_flags & NLM_F_DUMP, 0);
  EXPECT_EQ(nfgen(request).nfgen_family, NFPROTO_UNSPEC);
  ASSERT_EQ(tables.size(), 2U);
  EXPECT_STREQ(nftnl_table_get_str(tables[1].get(), NFTNL_TABLE_NAME), "b");
  EXPECT_EQ(nftnl_table_get_u32(tables[1].get(), NFTNL_TABLE_FAMILY), NFPROTO_IPV4);
  EXPECT_EQ(nftnl_table_get_u64(tables[1].get(), NFTNL_TABLE_HANDLE), 2U);
}

TEST_F(NftClientFixture, TableExistsLooksInTheFamily) {
  transport->expect(testing::dump_reply([](const nlmsghdr& request) {
    return std::vector<Datagram>{table_message(request, NFPROTO_INET, "a", 1)};
  }));
  EXPECT_TRUE(client->table_exists(NFPROTO_INET, "a"));
  EXPECT_EQ(nfgen(*messages_of(transport->sent().at(0)).at(0)).nfgen_family, NFPROTO_INET);
}

}  // namespace
}  // namespace flowbulk
