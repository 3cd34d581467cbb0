// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <string>

namespace flowbulk {

// A flowtable as nft names it: family, table, flowtable.
struct FlowtableRef {
  uint8_t family = 0;  // NFPROTO_*
  std::string table;
  std::string flowtable;

  std::string to_string() const;  // "inet filter ft", as in nft commands
  bool operator==(const FlowtableRef&) const = default;
};

}  // namespace flowbulk
