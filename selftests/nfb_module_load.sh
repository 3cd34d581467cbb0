#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The harness end to end: the module built for the running kernel loads with
# modprobe, shows up in /sys/module with the version it was built with,
# coexists with a network namespace and a veth pair, and unloads cleanly.
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"

nfb_require_tool ip modprobe modinfo

ret=0
cleanup() {
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

nfb_load_module
if nfb_module_loaded; then
	log_pass "modprobe $NFB_MODULE"
else
	log_fail "modprobe $NFB_MODULE: not in /sys/module"
	exit "$ksft_fail"
fi

built=$(modinfo -F version "$NFB_REPO/build/kmod/$(uname -r)/module/$NFB_MODULE.ko")
loaded=$(cat "/sys/module/$NFB_MODULE/version")
if [ -n "$built" ] && [ "$built" = "$loaded" ]; then
	log_pass "loaded version $loaded is the one built"
else
	log_fail "loaded version '$loaded' differs from built '$built'"
	ret=1
fi

ns1=
setup_ns ns1
ip -n "$ns1" link add veth0 type veth peer name veth1
ip -n "$ns1" link set veth0 up
ip -n "$ns1" link set veth1 up
veth_up() { [ "$(ip netns exec "$ns1" cat /sys/class/net/veth0/operstate)" = up ]; }
if busywait 2000 veth_up; then
	log_pass "veth pair up in a namespace with the module loaded"
else
	log_fail "veth pair did not come up"
	ret=1
fi
cleanup_all_ns

nfb_unload_module
if nfb_module_loaded; then
	log_fail "module still loaded after modprobe -r"
	ret=1
else
	log_pass "modprobe -r $NFB_MODULE"
fi
exit "$ret"
