// SPDX-License-Identifier: GPL-2.0
#include "text_table.h"

#include <algorithm>

namespace flowbulk {

void TextTable::print(std::ostream& out) const {
  std::vector<size_t> widths;
  widths.reserve(columns_.size());
  for (const Column& column : columns_) {
    widths.push_back(column.title.size());
  }
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : std::string();
      const std::string padding(widths[i] - cell.size(), ' ');
      if (i > 0) {
        line += "  ";
      }
      if (columns_[i].align == Align::kRight) {
        line += padding + cell;
      } else {
        line += cell;
        if (i + 1 < columns_.size()) {
          line += padding;
        }
      }
    }
    // Empty trailing cells would leave spaces at the end of the line.
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  };
  std::vector<std::string> titles;
  titles.reserve(columns_.size());
  for (const Column& column : columns_) {
    titles.push_back(column.title);
  }
  print_row(titles);
  for (const auto& row : rows_) {
    print_row(row);
  }
}

}  // namespace flowbulk
