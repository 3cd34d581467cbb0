#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Namespace exit costs nothing for namespaces that never attached (second
# review, finding 3). The module's per-namespace exit took RTNL and waited
# for an RCU grace period (synchronize_net()) for every namespace, attached
# or not: a host whose containers come and go paid a grace period per
# container once the module was loaded. Now one exit runs per batch of
# namespaces, and a namespace that never attached skips RTNL, the grace
# period and the waits.
#
# A kprobe on synchronize_net() with a stack trace per call counts the
# calls made from the module's exit:
#   1. 20 namespaces, each with a veth, never attached, deleted: none;
#   2. a router namespace that attached a flowtable, deleted: at least one
#      (the probe sees the module's exit: the first count is not vacuous).
# Each deletion is waited for to the end of its exit: the peers of the
# namespaces' veths disappear when their devices go, which is before the
# module's exit in the same batch; a canary namespace deleted after that
# starts a later batch, which runs only once that one has finished.
# nfb-timeout: 600
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3

TRACE=/sys/kernel/tracing
record_cmd=

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	sync_probe off
	if [ -n "$record_cmd" ]; then echo "$record_cmd" >"$TRACE/options/record-cmd"; fi
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

sync_probe() {
	if [ "$1" = on ]; then
		echo "p:nfb_exit/sync synchronize_net" >>"$TRACE/kprobe_events"
		echo stacktrace >"$TRACE/events/nfb_exit/sync/trigger"
		: >"$TRACE/trace"
		echo 1 >"$TRACE/events/nfb_exit/sync/enable"
	elif [ -d "$TRACE/events/nfb_exit" ]; then
		echo 0 >"$TRACE/events/nfb_exit/sync/enable"
		echo '!stacktrace' >"$TRACE/events/nfb_exit/sync/trigger"
		echo "-:nfb_exit/sync" >>"$TRACE/kprobe_events"
	fi
}

# from_module_exit: synchronize_net() calls made by the module's namespace
# exit since the last call.
from_module_exit() {
	grep -c '=> nfb_net_exit' "$TRACE/trace" || true
	: >"$TRACE/trace"
}

gone() { ! ip -n "$1" link show "$2" >/dev/null 2>&1; }

# exits_done: a canary namespace deleted now is freed only after every
# namespace deleted before it (see above).
setup_ns W
exits_done() {
	local canary
	canary=nfb-canary-$RANDOM
	ip netns add "$canary"
	ip link add k0 netns "$canary" type veth peer name kw netns "$W"
	ip netns del "$canary"
	busywait 60000 gone "$W" kw
}

[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE"
# As nfb_txq.sh: no sched_switch probe patched in while CPUs run it.
record_cmd=$(cat "$TRACE/options/record-cmd")
echo 0 >"$TRACE/options/record-cmd"

nfb_load_module
sync_probe on

# 1. Namespaces that never attached.
names=()
for i in $(seq 1 20); do
	names+=("nfb-x$i-$RANDOM")
done
for n in "${names[@]}"; do
	ip netns add "$n"
	ip link add x0 netns "$n" type veth peer name "p${n#nfb-}" netns "$W"
done
for n in "${names[@]}"; do
	ip netns del "$n"
done
for n in "${names[@]}"; do
	busywait 60000 gone "$W" "p${n#nfb-}" || echo "INFO: $n: veth peer still there"
done
check "20 unattached namespaces: their exits complete" exits_done
n=$(from_module_exit)
check "20 unattached namespaces: no synchronize_net() from the module's exit ($n)" \
	test "$n" -eq 0

# 2. A namespace that attached.
fp_topology
fp_ruleset 0 0
fp_genl "$R" attach inet fp ft
ip netns del "$R"
NS_LIST=("$C" "$S" "$W")
check "attached namespace: its devices go" busywait 60000 gone "$C" c0
check "attached namespace: its exit completes" exits_done
n=$(from_module_exit)
check "attached namespace: the module's exit waited for a grace period ($n)" \
	test "$n" -ge 1

exit "$ret"
