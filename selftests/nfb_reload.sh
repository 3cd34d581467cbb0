#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# 100 (NFB_RELOAD_CYCLES) unload / reload cycles of the module under
# traffic, each followed by an attach, while other namespaces with devices
# come and go: the module's
# exit must stop the netdev notifier before it frees the per-namespace data
# the notifier reads, and a namespace being set up must not be touched
# before its data exists. The runner fails the test on any kernel trouble.
# make check runs 100 on its first kernel and 30 on the others.
# A cycle takes one to three seconds in a TCG guest:
# nfb-timeout: 900
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 insmod rmmod

churn_pid=
# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	[ -z "$churn_pid" ] || kill "$churn_pid" 2>/dev/null || true
	fp_flood_stop
	cleanup_all_ns
	ip netns list | awk '/^nfb-churn-/ { print $1 }' | xargs -r -n1 ip netns del 2>/dev/null || true
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

cycles=${NFB_RELOAD_CYCLES:-100}
case "$cycles" in
'' | *[!0-9]*) log_fail "NFB_RELOAD_CYCLES=$cycles: not a number"; exit "$ksft_fail" ;;
esac

nfb_load_module
ko=/lib/modules/$(uname -r)/updates/$NFB_MODULE.ko
fp_topology
fp_ruleset 0 0
fp_genl "$R" attach inet fp ft
fp_echo_start 7000
fp_flood_start 10.0.2.1 7000
check "traffic taken by the module" fp_taken_grows 100

# Namespaces with a veth pair, created and deleted without pause.
(
	i=0
	while :; do
		ip netns add "nfb-churn-$i" &&
			ip -n "nfb-churn-$i" link add a type veth peer name b &&
			ip -n "nfb-churn-$i" link set a up &&
			ip netns del "nfb-churn-$i"
		i=$((i + 1))
		sleep 0.1	# a steady trickle, not a CPU hog
	done
) >/dev/null 2>&1 &
churn_pid=$!

# One python process (start-up is slow under TCG): rmmod, insmod, attach.
# insmod reads no modprobe.d: NFB_UNPROVEN_KERNEL=1 (lib.sh) is passed on
# as the parameter itself.
reload_cycles() {
	local params=()
	[ "${NFB_UNPROVEN_KERNEL:-0}" != 1 ] || params=(unproven_kernel=1)
	ip netns exec "$R" python3 - "$NFB_LIB" "$ko" "$cycles" "${params[@]}" <<-'PY'
	import subprocess, sys
	sys.dont_write_bytecode = True
	sys.path.insert(0, sys.argv[1])
	import nfb_genl
	for i in range(int(sys.argv[3])):
	    subprocess.run(["rmmod", "nf_flow_bulk"], check=True)
	    subprocess.run(["insmod", sys.argv[2]] + sys.argv[4:], check=True)
	    nl = nfb_genl.Genl()
	    nl.do(nfb_genl.CMD["attach"], nfb_genl.ft_attrs(1, "fp", "ft"))
	    nl.sock.close()
	PY
}
check "$cycles unload / reload cycles under traffic and namespace churn" reload_cycles
kill "$churn_pid"
wait "$churn_pid" 2>/dev/null || true
churn_pid=
check "after the cycles: the module takes packets" fp_taken_grows 100
fp_flood_stop
exit "$ret"
