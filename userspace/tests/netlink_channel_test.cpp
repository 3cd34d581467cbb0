// SPDX-License-Identifier: GPL-2.0
#include "netlink_channel.h"

#include <gtest/gtest.h>
#include <linux/netfilter/nfnetlink.h>

#include <cstring>

#include "error.h"
#include "fake_kernel.h"

namespace flowbulk {
namespace {

using testing::done;
using testing::error_reply;
using testing::MessageBuilder;
using testing::messages_of;

// A request of `count` messages with the given flags, seq from the channel.
std::vector<uint8_t> request(NetlinkChannel& channel,
                             const std::vector<uint16_t>& flags_per_message) {
  std::vector<uint8_t> all;
  for (uint16_t flags : flags_per_message) {
    MessageBuilder builder(0x30, NLM_F_REQUEST | flags, channel.next_sequence(), 0);
    Datagram bytes = builder.datagram();
    all.insert(all.end(), bytes.begin(), bytes.end());
  }
  return all;
}

struct ChannelFixture : ::testing::Test {
  ChannelFixture() {
    auto owned = std::make_unique<ReplayTransport>();
    transport = owned.get();
    channel = std::make_unique<NetlinkChannel>(std::move(owned));
  }
  ReplayTransport* transport;
  std::unique_ptr<NetlinkChannel> channel;
};

TEST_F(ChannelFixture, AckCompletesRequest) {
  transport->expect(testing::ack_all());
  EXPECT_NO_THROW(channel->transact(request(*channel, {NLM_F_ACK})));
  EXPECT_TRUE(transport->exhausted());
}

TEST_F(ChannelFixture, ErrorCarriesErrnoAndExtack) {
  transport->expect([](std::span<const uint8_t> sent) {
    return std::vector<Datagram>{error_reply(*messages_of(sent)[0], EINVAL, "bad family")};
  });
  try {
    channel->transact(request(*channel, {NLM_F_ACK}));
    FAIL() << "no error";
  } catch (const KernelError& error) {
    EXPECT_EQ(error.sys_errno(), EINVAL);
    EXPECT_EQ(error.extack(), "bad family");
    EXPECT_NE(std::string(error.what()).find("bad family: Invalid argument (EINVAL, errno 22)"),
              std::string::npos)
        << error.what();
  }
}

TEST_F(ChannelFixture, UncappedErrorSkipsEchoedRequestToFindExtack) {
  transport->expect([](std::span<const uint8_t> sent) {
    const nlmsghdr& original = *messages_of(sent)[0];
    MessageBuilder builder(NLMSG_ERROR, NLM_F_ACK_TLVS, original.nlmsg_seq, 0);
    auto* error = static_cast<nlmsgerr*>(mnl_nlmsg_put_extra_header(
        builder.header(), sizeof(nlmsgerr) - sizeof(nlmsghdr) + original.nlmsg_len));
    error->error = -EPERM;
    std::memcpy(&error->msg, &original, original.nlmsg_len);
    mnl_attr_put_strz(builder.header(), NLMSGERR_ATTR_MSG, "not allowed");
    return std::vector<Datagram>{builder.datagram()};
  });
  try {
    channel->transact(request(*channel, {NLM_F_ACK}));
    FAIL() << "no error";
  } catch (const KernelError& error) {
    EXPECT_EQ(error.sys_errno(), EPERM);
    EXPECT_EQ(error.extack(), "not allowed");
  }
}

TEST_F(ChannelFixture, DumpSpansDatagramsUntilDone) {
  transport->expect([](std::span<const uint8_t> sent) {
    const nlmsghdr& req = *messages_of(sent)[0];
    MessageBuilder one(0x30, NLM_F_MULTI, req.nlmsg_seq, 0);
    MessageBuilder two(0x30, NLM_F_MULTI, req.nlmsg_seq, 0);
    MessageBuilder three(0x30, NLM_F_MULTI, req.nlmsg_seq, 0);
    return std::vector<Datagram>{testing::concat({one.datagram(), two.datagram()}),
                                 testing::concat({three.datagram(), done(req)})};
  });
  int seen = 0;
  channel->transact(request(*channel, {NLM_F_DUMP}), [&seen](const nlmsghdr&) { ++seen; });
  EXPECT_EQ(seen, 3);
  EXPECT_TRUE(transport->exhausted());
}

TEST_F(ChannelFixture, FailedDumpReportsErrorFromDone) {
  transport->expect([](std::span<const uint8_t> sent) {
    const nlmsghdr& req = *messages_of(sent)[0];
    MessageBuilder end(NLMSG_DONE, NLM_F_MULTI, req.nlmsg_seq, 0);
    *static_cast<int*>(mnl_nlmsg_put_extra_header(end.header(), sizeof(int))) = -ENOBUFS;
    return std::vector<Datagram>{end.datagram()};
  });
  try {
    channel->transact(request(*channel, {NLM_F_DUMP}));
    FAIL() << "no error";
  } catch (const KernelError& error) {
    EXPECT_EQ(error.sys_errno(), ENOBUFS);
  }
}

TEST_F(ChannelFixture, RepliesForOtherSequencesOrPortsAreIgnored) {
  transport->expect([](std::span<const uint8_t> sent) {
    const nlmsghdr& req = *messages_of(sent)[0];
    nlmsghdr stale = req;
    stale.nlmsg_seq = req.nlmsg_seq - 100;
    MessageBuilder stale_data(0x30, NLM_F_MULTI, stale.nlmsg_seq, 0);
    MessageBuilder foreign_data(0x30, NLM_F_MULTI, req.nlmsg_seq, 999);
    return std::vector<Datagram>{stale_data.datagram(), error_reply(stale, EIO),
                                 foreign_data.datagram(), done(req)};
  });
  int seen = 0;
  EXPECT_NO_THROW(
      channel->transact(request(*channel, {NLM_F_DUMP}), [&seen](const nlmsghdr&) { ++seen; }));
  EXPECT_EQ(seen, 0);
}

// A dump the ruleset changed under, as the kernel marks it.
ReplayTransport::Responder interrupted_dump() {
  return [](std::span<const uint8_t> sent) {
    const nlmsghdr& req = *messages_of(sent)[0];
    MessageBuilder data(0x30, NLM_F_MULTI, req.nlmsg_seq, 0);
    MessageBuilder changed(0x30, NLM_F_MULTI | NLM_F_DUMP_INTR, req.nlmsg_seq, 0);
    return std::vector<Datagram>{data.datagram(), changed.datagram(), done(req)};
  };
}

// As nft does: the dump is asked again (new sequence number), and only the
// complete one reaches the handler.
TEST_F(ChannelFixture, InterruptedDumpIsDumpedAgain) {
  transport->expect(interrupted_dump());
  transport->expect(interrupted_dump());
  transport->expect([](std::span<const uint8_t> sent) {
    const nlmsghdr& req = *messages_of(sent)[0];
    MessageBuilder one(0x30, NLM_F_MULTI, req.nlmsg_seq, 0);
    return std::vector<Datagram>{one.datagram(), done(req)};
  });
  int seen = 0;
  EXPECT_NO_THROW(
      channel->transact(request(*channel, {NLM_F_DUMP}), [&seen](const nlmsghdr&) { ++seen; }));
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(transport->exhausted());
  ASSERT_EQ(transport->sent().size(), 3U);
  const nlmsghdr& first = *messages_of(transport->sent()[0])[0];
  const nlmsghdr& third = *messages_of(transport->sent()[2])[0];
  EXPECT_NE(first.nlmsg_seq, third.nlmsg_seq);
  EXPECT_EQ(first.nlmsg_type, third.nlmsg_type);
  EXPECT_EQ(first.nlmsg_flags, third.nlmsg_flags);
}

TEST_F(ChannelFixture, DumpInterruptedTenTimesInARowIsAnError) {
  for (int i = 0; i < NetlinkChannel::kDumpAttempts; ++i) {
    transport->expect(interrupted_dump());
  }
  int seen = 0;
  try {
    channel->transact(request(*channel, {NLM_F_DUMP}), [&seen](const nlmsghdr&) { ++seen; });
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.sys_errno(), EINTR);
    EXPECT_NE(std::string(error.what()).find("interrupted by concurrent changes 10 times"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(seen, 0);
  EXPECT_EQ(transport->sent().size(), 10U);
  EXPECT_TRUE(transport->exhausted());
}

TEST_F(ChannelFixture, BatchWaitsForEveryAckAndReportsFirstError) {
  // begin (no ack), three messages with acks, end (no ack); the second fails.
  transport->expect(testing::fail_message(2, EEXIST, "exists"));
  try {
    channel->transact(request(*channel, {0, NLM_F_ACK, NLM_F_ACK, NLM_F_ACK, 0}));
    FAIL() << "no error";
  } catch (const KernelError& error) {
    EXPECT_EQ(error.sys_errno(), EEXIST);
    EXPECT_EQ(error.extack(), "exists");
  }
  EXPECT_TRUE(transport->exhausted());
}

TEST_F(ChannelFixture, ErrorOnBatchBeginEndsExchange) {
  // No permission: the kernel answers the batch begin only.
  transport->expect([](std::span<const uint8_t> sent) {
    return std::vector<Datagram>{error_reply(*messages_of(sent)[0], EPERM)};
  });
  try {
    channel->transact(request(*channel, {0, NLM_F_ACK, 0}));
    FAIL() << "no error";
  } catch (const KernelError& error) {
    EXPECT_EQ(error.sys_errno(), EPERM);
  }
}

TEST_F(ChannelFixture, MissingReplyIsATimeoutNotAHang) {
  transport->expect([](std::span<const uint8_t>) { return std::vector<Datagram>{}; });
  try {
    channel->transact(request(*channel, {NLM_F_ACK}));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.sys_errno(), ETIMEDOUT);
  }
}

TEST(ErrorText, NamesErrno) {
  EXPECT_EQ(errno_text(ENOENT), "No such file or directory (ENOENT, errno 2)");
  EXPECT_EQ(errno_text(4095).find("errno 4095") != std::string::npos, true);
}

}  // namespace
}  // namespace flowbulk
