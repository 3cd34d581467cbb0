#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# nfb_forward.sh with masquerade on the router's output (SNAT of addresses
# and ports, both directions, IPv4 and IPv6).
set -eu
NFB_FWD_MASQ=1 exec "$(dirname "$0")/nfb_forward.sh"
