// SPDX-License-Identifier: GPL-2.0
#pragma once

// libnftables against the semantic fake nf_tables. libnftables opens its own
// netfilter socket through libmnl and has no API to hand it another one, so
// the unit test binary defines the libmnl socket functions (and sendmsg(),
// which libnftables calls directly for its batches) itself: the dynamic
// linker binds libnftables to these definitions. A socket opened this way is
// one end of a socketpair; what libnftables sends is answered by the fake
// kernel before send returns, as the real kernel does, so its
// select()-then-read loop finds every reply. Without a FakeNftSocketScope no
// socket opens at all: unit tests never reach the host's nf_tables.

#include "fake_nft_kernel.h"

namespace flowbulk::testing {

class FakeNftSocketScope {
 public:
  explicit FakeNftSocketScope(FakeNftKernel& kernel);
  ~FakeNftSocketScope();
  FakeNftSocketScope(const FakeNftSocketScope&) = delete;
  FakeNftSocketScope& operator=(const FakeNftSocketScope&) = delete;
};

}  // namespace flowbulk::testing
