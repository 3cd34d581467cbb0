// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <string>

namespace flowbulk {

// Where `ip netns add NAME` keeps its namespaces.
inline constexpr const char* kNetnsRunDirectory = "/run/netns";

// Moves the process into the network namespace NAME, as `ip -n NAME`
// does: the file NAME in `directory`. Sockets opened afterwards (netlink,
// libnftables') belong to that namespace, so this runs before any is
// opened. Throws UsageError for a name that is not one file name, Error
// when the namespace does not exist or cannot be entered.
void enter_named_netns(const std::string& name, const std::string& directory = kNetnsRunDirectory);

}  // namespace flowbulk
