// SPDX-License-Identifier: GPL-2.0
#include "text_table.h"

#include <gtest/gtest.h>
#include <nf_flow_bulk.h>

#include <sstream>

#include "names.h"

namespace flowbulk {
namespace {

TEST(TextTable, AlignsColumnsNumbersRight) {
  TextTable table({{"NAME"}, {"COUNT", TextTable::Align::kRight}, {"NOTE"}});
  table.add_row({"a", "1", "x"});
  table.add_row({"longer", "12345", ""});
  std::ostringstream out;
  table.print(out);
  EXPECT_EQ(out.str(),
            "NAME    COUNT  NOTE\n"
            "a           1  x\n"
            "longer  12345\n");
}

TEST(Names, FamiliesRoundTrip) {
  for (const char* name : {"ip", "ip6", "inet"}) {
    auto family = family_from_name(name);
    ASSERT_TRUE(family.has_value());
    EXPECT_EQ(family_name(*family), name);
  }
  EXPECT_FALSE(family_from_name("netdev").has_value());
  EXPECT_EQ(family_name(250), "250");
}

TEST(Names, UnknownReasonsAreNumbers) {
  EXPECT_EQ(reason_name(decline_reason_names(), 4), "miss");
  EXPECT_EQ(reason_name(decline_reason_names(), 1000), "1000");
  for (size_t i = 0; i < drop_reason_names().size(); ++i) {
    EXPECT_FALSE(drop_reason_names()[i].empty()) << i;
  }
}

// The tables come from the uapi's one list (nf_flow_bulk_names.h): a name
// per member, at the member's number.
TEST(Names, TablesFollowTheUapiList) {
  EXPECT_EQ(decline_reason_names().size(), size_t{__NFB_DECLINE_MAX});
  EXPECT_EQ(decline_reason_names()[NFB_DECLINE_NOT_IP], "not_ip");
  EXPECT_EQ(decline_reason_names()[NFB_DECLINE_ENCAP_GSO], "encap_gso");
  EXPECT_EQ(fallback_reason_names()[NFB_FALLBACK_EGRESS_HOOK], "egress_hook");
  EXPECT_EQ(drop_reason_names()[NFB_DROP_QUEUE_FULL], "queue_full");
  EXPECT_EQ(encap_names()[NFB_ENCAP_VLAN_PPPOE], "vlan_pppoe");
  EXPECT_EQ(xmit_type_names()[NFB_XMIT_DIRECT], "direct");
  ASSERT_EQ(attach_state_names().size(), size_t{__NFB_ATTACH_STATE_MAX});
  EXPECT_EQ(reason_name(attach_state_names(), NFB_ATTACH_STALE), "stale");
  EXPECT_EQ(reason_name(attach_state_names(), __NFB_ATTACH_STATE_MAX), "3");
  for (auto names : {attach_state_names(), decline_reason_names(), fallback_reason_names(),
                     drop_reason_names(), encap_names(), xmit_type_names()}) {
    for (size_t i = 0; i < names.size(); ++i) {
      EXPECT_FALSE(names[i].empty()) << i;
    }
  }
}

}  // namespace
}  // namespace flowbulk
