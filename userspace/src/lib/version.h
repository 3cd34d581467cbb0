// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <string_view>

namespace flowbulk {

// The generic netlink family and version this build speaks.
std::string_view genl_family_name();
unsigned genl_family_version();

// The tool's own version (the CMake project version).
std::string_view tool_version();

}  // namespace flowbulk
