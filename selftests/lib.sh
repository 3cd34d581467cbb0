#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The selftests' entry to the test library (tools/testing/lib, shared with
# tools/bench): every selftests/*.sh sources this file, which sources the
# library's core (nfb.sh: exit codes, check, busywait, nfb_load_module,
# setup_ns) and sets NFB_LIB, from which a test sources the rest
# (fastpath.sh, flowbulk.sh, ppp.sh, topology.sh, proc.sh).

# shellcheck source=tools/testing/lib/nfb.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tools/testing/lib/nfb.sh"
