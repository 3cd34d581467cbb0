#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Where the module's hook sits among other ingress hooks, and what it costs
# when it cannot sit right before the flowtable. The module registers at the
# flowtable's priority P: the kernel puts it behind every hook of a lower
# priority and in front of every hook of P or more registered before it.
#   - a user chain at P-1 that exists before the attach runs first, and the
#     module still takes the flow's packets;
#   - a user chain at P added after the attach goes in front of the
#     module's hook: the module still takes them;
#   - a user chain at P added after the flowtable and before the attach
#     sits between the two: every packet is left to the stock path (that
#     chain must see it), the attachment reports the device as not
#     adjacent, and the module rescans a bounded number of times under
#     traffic (the hook list did not change, so there is nothing to learn:
#     no RTNL load);
#   - another writer adding and deleting a chain on r0 meanwhile costs a
#     look at r0 per change (the attachment's per-device checks grow), not
#     a walk of every device for the attachment (its scans stay put): what
#     a container's root can make the module do under RTNL does not grow
#     with the namespace's devices;
#   - once that chain goes, the module takes the packets again.
# Every user chain counts the flow's packets: policy is never skipped.
# Long under TCG on a busy host (up to ~280 s seen):
# nfb-timeout: 600
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	fp_flood_stop
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

nfb_load_module
fp_topology
fp_ruleset 0 0
fp_echo_start 7000

# user_chain NAME PRIORITY [DEV...]: netdev chains counting every packet
# that enters DEV (r0 by default), one chain per device.
user_chain() {
	local name=$1 prio=$2 dev
	shift 2
	[ $# -gt 0 ] || set -- r0
	{
		echo "table netdev user_$name {"
		for dev in "$@"; do
			echo "chain in_$dev { type filter hook ingress device $dev priority $prio; counter; }"
		done
		echo "}"
	} | ip netns exec "$R" nft -f -
}
# user_count NAME: packets counted by the chains of table user_NAME.
user_count() {
	fp_nft_counters "$R" table netdev "user_$1"
}
attach_info() {
	fp_genl "$R" list | python3 -c 'import json, sys
a = json.load(sys.stdin)[0]
print(a["scans"], int(a["adjacent"]["r0"]) + int(a["adjacent"]["r1"]), a["priority"])'
}
dc() { fp_proc "$R" decline_no_flowtable; }
# looks: r0's per-device checks plus the attachment's scans (a module
# without per-device checks shows its rescans in scans alone).
looks() {
	fp_genl "$R" list | python3 -c 'import json, sys
a = json.load(sys.stdin)[0]
print(a.get("checks", {}).get("r0", 0) + a["scans"])'
}

# A user chain one priority below the flowtable, before the attach.
user_chain low -1
fp_genl "$R" attach inet fp ft
fp_flood_start 10.0.2.1 7000
check "chain at P-1 made before attach: module takes packets" fp_taken_grows 200
read -r _ adj prio <<<"$(attach_info)"
check "chain at P-1: r0 and r1 adjacent, hook at the flowtable's priority ($adj, $prio)" \
	test "$adj" = 2 -a "$prio" = 0

# A user chain at P after the attach: in front of ours.
user_chain same_after 0
c0=$(user_count same_after)
check "chain at P added after attach: module still takes packets" fp_taken_grows 200
check "chain at P added after attach: it sees the packets" \
	test "$(user_count same_after)" -gt "$c0"

# Chains at P between the flowtable and a new attach, on both devices (the
# flood's echoes enter at r1).
fp_genl "$R" detach inet fp ft
ip netns exec "$R" nft delete table netdev user_same_after
user_chain between 0 r0 r1
fp_genl "$R" attach inet fp ft
# Wait for the module to settle on the new hook list (one rescan asked by
# the datapath after our own hook changed it), then measure.
busywait 10000 eval "[ \"\$(dc)\" -gt 100 ]" || true
read -r scans0 adj prio <<<"$(attach_info)"
check "chain between: r0 and r1 reported not adjacent" test "$adj" = 0
t0=$(fp_taken "$R")
# Every declined packet passed the chain first: read the chain's counter
# before the declines at the start and after them at the end.
b0=$(user_count between)
d0=$(dc)
# About 3 s of traffic: ~3000 packets, each of which used to ask for a
# rescan (ten a second, under RTNL, forever).
busywait 30000 eval "[ \"\$(dc)\" -ge $((d0 + 3000)) ]" || true
read -r scans1 adj prio <<<"$(attach_info)"
t1=$(fp_taken "$R")
d1=$(dc)
b1=$(user_count between)
check "chain between: nothing taken ($((t1 - t0)))" test "$t1" = "$t0"
check "chain between: declined as no_flowtable ($((d1 - d0)))" test $((d1 - d0)) -ge 3000
check "chain between: the chain saw every declined packet ($((b1 - b0)) >= $((d1 - d0)))" \
	test $((b1 - b0)) -ge $((d1 - d0))
check "chain between: rescans bounded under traffic ($scans0 -> $scans1)" \
	test "$((scans1 - scans0))" -le 1

# Another writer churns a chain on r0, in front of everything, while the
# layout stays unusable: each change makes the next packet ask for a look.
# The sweep walks every device every 64 s whatever happens: the churn's ten
# changes may meet one sweep per 64 s they take, not ten walks.
churn_start=$(date +%s)
for _ in 1 2 3 4 5; do
	l0=$(looks)
	user_chain churn -5 r0
	busywait 10000 eval "[ \"\$(looks)\" -gt $l0 ]" || true
	l0=$(looks)
	ip netns exec "$R" nft delete table netdev user_churn
	busywait 10000 eval "[ \"\$(looks)\" -gt $l0 ]" || true
done
checks2=$(fp_genl "$R" list | python3 -c 'import json, sys
print(json.load(sys.stdin)[0].get("checks", {}).get("r0", 0))')
read -r scans2 adj prio <<<"$(attach_info)"
sweeps=$((1 + ($(date +%s) - churn_start) / 64))
check "chain churn: r0 looked at again per change ($checks2 >= 10)" test "$checks2" -ge 10
check "chain churn: no walk of every device per change ($scans1 -> $scans2, sweeps <= $sweeps < 10)" \
	test "$((scans2 - scans1))" -le "$sweeps" -a "$sweeps" -lt 10
check "chain churn: nothing taken" test "$(fp_taken "$R")" = "$t1"

# The chain goes: the hook list changes, one rescan, packets taken again.
ip netns exec "$R" nft delete table netdev user_between
check "chain between deleted: module takes packets again" fp_taken_grows 200
read -r _ adj prio <<<"$(attach_info)"
check "chain between deleted: r0 and r1 adjacent again" test "$adj" = 2

fp_flood_stop
fp_genl "$R" detach inet fp ft
exit "$ret"
