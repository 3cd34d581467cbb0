// SPDX-License-Identifier: GPL-2.0
// The output layer: a field written once shows in JSON under its key and
// in text under its column.
#include "output.h"

#include <gtest/gtest.h>

#include <sstream>

namespace flowbulk {
namespace {

TEST(Output, TextOfJsonValues) {
  EXPECT_EQ(text_of(Json()), "-");
  EXPECT_EQ(text_of(Json("eth0")), "eth0");
  EXPECT_EQ(text_of(Json(-10)), "-10");
  EXPECT_EQ(text_of(Json(true)), "yes");
  EXPECT_EQ(text_of(Json(false)), "no");
  EXPECT_EQ(text_of(Json::array()), "-");
  EXPECT_EQ(text_of(Json{"eth0", "eth1"}), "eth0,eth1");
}

TEST(Output, OneFieldBothFormats) {
  RecordList list({{"name", "NAME"}, {"prio", "PRIORITY", TextTable::Align::kRight}});
  list.add().any("name", "ft").json("handle", 7).any("prio", -10).text("mean", "x");
  list.add().any("name", "longer").any("prio", Json());
  // JSON: every any() and json() field, in the order written; no text().
  EXPECT_EQ(list.json().dump(),
            R"([{"name":"ft","handle":7,"prio":-10},{"name":"longer","prio":null}])");
  // Text: the columns only, in the columns' order.
  std::ostringstream out;
  list.print_text(out);
  EXPECT_EQ(out.str(),
            "NAME    PRIORITY\n"
            "ft           -10\n"
            "longer         -\n");
}

TEST(Output, EmptyListPrintsNoText) {
  RecordList list(std::vector<Column>{{"name", "NAME"}});
  std::ostringstream out;
  list.print_text(out);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(list.json().dump(), "[]");
}

TEST(Output, VerticalRecordShowsFieldsWithDetail) {
  Record record;
  record.any("packets", 60).detail("packets", "").any("bulks", 20).detail("bulks", "mean 3.00");
  record.text("mean", "3.00").json("histogram", Json::array());
  std::ostringstream out;
  record.print_vertical(out, {{"COUNTER"}, {"VALUE", TextTable::Align::kRight}, {"DETAIL"}});
  EXPECT_EQ(out.str(),
            "COUNTER  VALUE  DETAIL\n"
            "packets     60\n"
            "bulks       20  mean 3.00\n");
  EXPECT_EQ(record.object().dump(), R"({"packets":60,"bulks":20,"histogram":[]})");
}

}  // namespace
}  // namespace flowbulk
