// SPDX-License-Identifier: GPL-2.0
#include "output.h"

#include <algorithm>

namespace flowbulk {

std::string text_of(const Json& value) {
  if (value.is_null()) {
    return "-";
  }
  if (value.is_string()) {
    return value.get<std::string>();
  }
  if (value.is_boolean()) {
    return value.get<bool>() ? "yes" : "no";
  }
  if (value.is_array()) {
    std::string joined;
    for (const Json& element : value) {
      joined += (joined.empty() ? "" : ",") + text_of(element);
    }
    return joined.empty() ? std::string("-") : joined;
  }
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Record& Record::any(std::string_view key, Json value) {
  std::string text = text_of(value);
  return any(key, std::move(value), std::move(text));
}

Record& Record::any(std::string_view key, Json value, std::string text) {
  json(key, std::move(value));
  return this->text(key, std::move(text));
}

Record& Record::json(std::string_view key, Json value) {
  object_[std::string(key)] = std::move(value);
  return *this;
}

Record& Record::text(std::string_view key, std::string text) {
  cells_.emplace_back(key, std::move(text));
  return *this;
}

Record& Record::detail(std::string_view key, std::string text) {
  details_.emplace_back(key, std::move(text));
  return *this;
}

std::string Record::cell(std::string_view key) const {
  const auto found = std::find_if(cells_.begin(), cells_.end(),
                                  [key](const auto& cell) { return cell.first == key; });
  return found == cells_.end() ? std::string() : found->second;
}

void Record::print_vertical(std::ostream& out, std::vector<TextTable::Column> titles) const {
  TextTable table(std::move(titles));
  for (const auto& [key, text] : details_) {
    table.add_row({key, cell(key), text});
  }
  table.print(out);
}

Json RecordList::json() const {
  Json list = Json::array();
  for (const Record& record : records_) {
    list.push_back(record.object());
  }
  return list;
}

void RecordList::print_text(std::ostream& out) const {
  if (records_.empty()) {
    return;
  }
  std::vector<TextTable::Column> titles;
  titles.reserve(columns_.size());
  for (const Column& column : columns_) {
    titles.push_back({column.title, column.align});
  }
  TextTable table(std::move(titles));
  for (const Record& record : records_) {
    std::vector<std::string> row;
    row.reserve(columns_.size());
    for (const Column& column : columns_) {
      row.push_back(record.cell(column.key));
    }
    table.add_row(std::move(row));
  }
  table.print(out);
}

}  // namespace flowbulk
