#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The module loads only on kernels it is proven on (module/compat.h,
# NFB_KERNEL_PROVEN; the list is module/conftest.sh's KERNEL_PROVEN): those
# on which the whole selftest suite passes, the kernel's own
# nft_flowtable.sh with the module among it. On 7.3 files
# sent through the module once arrived corrupted (issue 26); that run now
# passes (nfb_kernel_flowtable.sh, run next in the same guest), but other
# selftests still differ there (issue 25). On any other kernel a plain
# load fails with EOPNOTSUPP and says why in the kernel log;
# unproven_kernel=1 loads it, with a warning, for testing.
# tools/check runs this in a guest of every kernel; on a proven kernel it
# checks that a plain load works and warns of nothing.
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"

nfb_require_tool modprobe dmesg

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

kver=$(uname -r)
major=${kver%%.*}
rest=${kver#*.}
minor=${rest%%[!0-9]*}
proven=0
# module/conftest.sh's KERNEL_PROVEN: up to 6.12, and 7.2.
if [ "$major" -lt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -le 12 ]; } ||
	{ [ "$major" -eq 7 ] && [ "$minor" -eq 2 ]; }; then
	proven=1
fi

# A plain load, whatever the run's NFB_UNPROVEN_KERNEL says.
NFB_UNPROVEN_KERNEL=0
rm -f "$NFB_UNPROVEN_CONF"
nfb_install_module
dmesg -C
if [ "$proven" = 1 ]; then
	check "$kver (proven): modprobe loads the module" modprobe "$NFB_MODULE"
	check "$kver (proven): no warning about the kernel" \
		eval "! dmesg | grep -q 'not proven'"
	exit "$ret"
fi

if modprobe "$NFB_MODULE" 2>"/tmp/nfb-gate.err"; then
	log_fail "$kver (not proven): modprobe loaded the module"
	ret=1
else
	log_pass "$kver (not proven): modprobe refuses: $(head -n 1 /tmp/nfb-gate.err)"
fi
check "$kver (not proven): the module is not loaded" eval "! nfb_module_loaded"
check "$kver (not proven): the kernel log says why" \
	eval "dmesg | grep -q 'nf_flow_bulk: not proven on Linux $kver: the project.s selftests do not all pass there'"
dmesg | grep 'nf_flow_bulk' | sed 's/^/INFO: /'
dmesg -C
check "$kver (not proven): unproven_kernel=1 loads it" \
	modprobe "$NFB_MODULE" unproven_kernel=1
check "$kver (not proven): with a warning in the kernel log" \
	eval "dmesg | grep -q 'nf_flow_bulk: loaded on Linux $kver, on which it is not proven'"
exit "$ret"
