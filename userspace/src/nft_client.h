// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "netlink_channel.h"
#include "nfb_client.h"
#include "raii.h"

namespace flowbulk {

struct FlowtableSpec {
  FlowtableRef ref;
  int32_t priority = 0;
  std::vector<std::string> devices;
  bool counter = false;
};

enum class OffloadProtocol { kTcp, kUdp, kAll };

// The forward chain and its `meta l4proto P flow add @FLOWTABLE` rule(s).
struct OffloadSpec {
  FlowtableRef flowtable;
  OffloadProtocol protocol = OffloadProtocol::kAll;
  bool counter = false;
  std::string chain = "forward";
};

// nftables objects through libnftnl messages sent in nfnetlink batches, so
// each command is one transaction: it applies entirely or not at all, as
// with nft.
class NftClient {
 public:
  explicit NftClient(std::unique_ptr<Transport> transport);

  void add_table(uint8_t family, const std::string& name);
  void delete_table(uint8_t family, const std::string& name);
  // family nullopt: every family.
  std::vector<NftnlTablePtr> list_tables(std::optional<uint8_t> family);

  void add_flowtable(const FlowtableSpec& spec);
  void delete_flowtable(const FlowtableRef& ref);
  std::vector<NftnlFlowtablePtr> list_flowtables(std::optional<uint8_t> family);

  void add_offload(const OffloadSpec& spec);

  bool table_exists(uint8_t family, const std::string& name);
  bool flowtable_exists(const FlowtableRef& ref);

 private:
  NetlinkChannel channel_;
};

}  // namespace flowbulk
