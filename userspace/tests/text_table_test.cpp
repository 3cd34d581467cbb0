// SPDX-License-Identifier: GPL-2.0
#include "text_table.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace flowbulk
