// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flowtable_ref.h"
#include "netlink_channel.h"

namespace flowbulk {

struct AttachedDevice {
  uint32_t ifindex = 0;
  std::string ifname;
  // Whether the module's hook runs right before the flowtable's on this
  // device (false: another hook sits between them and every packet is left
  // to the stock path); nullopt from a module that does not say.
  std::optional<bool> adjacent;
  // How often a packet found this device's hook list changed and the module
  // looked at this device again; nullopt from a module that does not say.
  std::optional<uint64_t> checks;
};

// One NFB_CMD_GET_ATTACH dump message.
struct Attachment {
  FlowtableRef flowtable;
  // The flowtable's hook priority, at which the module's hook runs too.
  std::optional<int32_t> flowtable_priority;
  // How often the module looked for the flowtable since the attach.
  std::optional<uint64_t> scans;
  // enum nfb_attach_state; nullopt from a module that does not say.
  std::optional<uint8_t> state;
  std::vector<AttachedDevice> devices;
};

// Bulk-size histogram buckets the tool keeps: bucket i counts bulks of 2^i
// to 2^(i+1)-1 packets, so 2^63 is the last size a bucket can start at. A
// kernel that sends more (a bad or future module) has them counted in the
// last one.
constexpr size_t kMaxHistogramBuckets = 64;

// One NFB_CMD_GET_STATS dump message (one CPU). The reason vectors are
// indexed by the uapi enums and sized by what the kernel sent, so reasons
// added by a newer module are kept (and printed as numbers).
struct CpuStats {
  uint32_t cpu = 0;
  uint64_t packets = 0;
  uint64_t bulks = 0;
  std::vector<uint64_t> histogram;
  std::vector<uint64_t> decline;
  std::vector<uint64_t> fallback;
  std::vector<uint64_t> drop;
  // Taken packets by receive encapsulation and by transmit type (each sums
  // to `packets`); empty from a module older than these counters.
  std::vector<uint64_t> taken_encap;
  std::vector<uint64_t> taken_xmit;

  CpuStats& operator+=(const CpuStats& other);
};

// Client of the module's generic netlink family.
class NfbClient {
 public:
  explicit NfbClient(std::unique_ptr<Transport> transport);

  // Resolves the family id (the kernel autoloads the module by its alias).
  // Throws an Error naming the module when it is absent.
  uint16_t family_id();

  void attach(const FlowtableRef& flowtable);
  void detach(const FlowtableRef& flowtable);
  std::vector<Attachment> list_attachments();
  std::vector<CpuStats> get_stats();
  void reset_stats();

 private:
  std::vector<uint8_t> build_request(uint8_t command, uint16_t flags,
                                     const FlowtableRef* flowtable);

  NetlinkChannel channel_;
  std::optional<uint16_t> family_id_;
};

// Sums the per-CPU rows; the result's cpu field is meaningless.
CpuStats total_stats(const std::vector<CpuStats>& per_cpu);

}  // namespace flowbulk
