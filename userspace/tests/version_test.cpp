// SPDX-License-Identifier: GPL-2.0
#include "version.h"

#include <gtest/gtest.h>

// The family name is what the kernel registers and what MODULE_ALIAS_GENL_FAMILY
// autoloads by; a mismatch would make every command fail with ENOENT.
TEST(GenlFamily, NameMatchesKernelFamily) {
  EXPECT_EQ(flowbulk::genl_family_name(), "nf_flow_bulk");
  EXPECT_GE(flowbulk::genl_family_version(), 1U);
}
