// SPDX-License-Identifier: GPL-2.0
#pragma once

// One print path for text and JSON, after iproute2's print_*(PRINT_ANY, ...):
// a command writes each field of what it shows once, under its JSON key.
// With -j the fields make the JSON objects, in the order they were written;
// without, the columns a list declares pick the fields that show in text,
// each under its title, in the column's order.

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text_table.h"

namespace flowbulk {

// Ordered: the members print in the order they were written.
using Json = nlohmann::ordered_json;

// The text of a JSON value in a text cell: null "-", a string as is, a
// boolean "yes"/"no", an array its elements' texts joined by "," ("-"
// when empty), anything else as JSON.
std::string text_of(const Json& value);

// One object: a JSON object and the text of each field.
class Record {
 public:
  // PRINT_ANY: `key` in JSON and, in text, text_of(value).
  Record& any(std::string_view key, Json value);
  // PRINT_ANY where the text says it differently ("-" for none, "yes").
  Record& any(std::string_view key, Json value, std::string text);
  // PRINT_JSON: in JSON only (nested detail the text leaves out).
  Record& json(std::string_view key, Json value);
  // PRINT_FP: in text only (a derived column such as a mean).
  Record& text(std::string_view key, std::string text);
  // A text-only remark about field `key`: the DETAIL of its row when the
  // record prints vertically (an empty one still makes the row).
  Record& detail(std::string_view key, std::string text);

  const Json& object() const { return object_; }
  // The text of `key`; empty when the record has none.
  std::string cell(std::string_view key) const;
  // In text as rows of name, value and detail, one per field given a
  // detail(), in that order, under `titles` (three).
  void print_vertical(std::ostream& out, std::vector<TextTable::Column> titles) const;

 private:
  Json object_ = Json::object();
  std::vector<std::pair<std::string, std::string>> cells_;
  std::vector<std::pair<std::string, std::string>> details_;
};

// A text column: the field `key`, under `title`.
struct Column {
  std::string key;
  std::string title;
  TextTable::Align align = TextTable::Align::kLeft;
};

// A list of records. -j: an array (inside a document from print_list(),
// cli_support.h); text: a table of the columns, nothing at all when the
// list is empty.
class RecordList {
 public:
  explicit RecordList(std::vector<Column> columns) : columns_(std::move(columns)) {}

  Record& add() { return records_.emplace_back(); }
  bool empty() const { return records_.empty(); }
  Json json() const;
  void print_text(std::ostream& out) const;

 private:
  std::vector<Column> columns_;
  std::vector<Record> records_;
};

}  // namespace flowbulk
