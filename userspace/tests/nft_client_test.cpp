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

struct NftClientFixture : ::testing::Test {
  NftClientFixture() {
    auto owned = std::make_unique<ReplayTransport>();
    transport = owned.get();
    client = std::make_unique<NftClient>(std::move(owned));
  }
  ReplayTransport* transport;
  std::unique_ptr<NftClient> client;
};

// Changes go through libnftables: cli_test.cpp, names_priority_test.cpp and
// offload_test.cpp run them against the semantic fake nf_tables.

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

}  // namespace
}  // namespace flowbulk
