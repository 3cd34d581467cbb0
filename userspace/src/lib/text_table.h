// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace flowbulk {

// Column-aligned text output: widths come from the widest cell, numbers are
// right-aligned so digits line up.
class TextTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kLeft;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  void print(std::ostream& out) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace flowbulk
