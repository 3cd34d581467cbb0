#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Faults under traffic (a bidirectional UDP stream through the module):
#   - the flowtable is deleted (the attachment waits) and re-created by
#     nft: another flowtable, declared hook ingress, which the module does
#     not take (the attachment turns stale; no packet taken);
#   - attached again after a re-creation at another priority: the module's
#     hook follows it (same priority) and takes packets again;
#   - the flowtable flaps 10 times, attached again each time as flowbulk -f
#     does (rescans stay bounded);
#   - (CPU 1 offline and online under traffic: nfb_lifetime.sh, 3b);
#   - the module is unloaded and reloaded;
#   - a flowtable device is deleted;
#   - the router's namespace is deleted.
# Then no WARN/BUG (checked by the runner) and no leaked device reference:
# the deleted devices' peers go away, which waits for every reference.
# Long under TCG on a busy host (up to ~280 s seen):
# nfb-timeout: 600
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 ss

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	fp_flood_stop
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

# attachment_is STATE PRIORITY DEVICE...: the one attachment's state,
# priority and devices.
# shellcheck disable=SC2317 # called through busywait
attachment_is() {
	fp_genl "$R" list | python3 -c '
import json, sys
a = json.load(sys.stdin)
ok = len(a) == 1 and a[0].get("state") == sys.argv[1] and \
     a[0]["priority"] == int(sys.argv[2]) and \
     sorted(a[0]["devices"]) == sys.argv[3:]
if not ok:
    print("INFO: attachments:", a, file=sys.stderr)
sys.exit(0 if ok else 1)' "$@"
}

# shellcheck disable=SC2317 # called through busywait
attached_at() {
	attachment_is attached "$@"
}

# shellcheck disable=SC2317 # called through busywait
rx_above() {
	[ "$(fp_rx_packets)" -ge "$1" ]
}

# none_taken N: the router receives N more packets and the module takes
# none of them.
none_taken() {
	local taken rx
	taken=$(fp_taken "$R")
	rx=$(fp_rx_packets)
	busywait 30000 rx_above $((rx + $1)) &&
		[ "$(fp_taken "$R")" = "$taken" ]
}

# shellcheck disable=SC2317 # called through busywait
gone() {
	! ip -n "$1" link show "$2" >/dev/null 2>&1
}

nfb_load_module
fp_topology
fp_ruleset 0 0
fp_genl "$R" attach inet fp ft
fp_echo_start 7000
fp_flood_start 10.0.2.1 7000
check "traffic taken by the module" fp_taken_grows 100

# Flows torn down under traffic, again and again: the lookup cache must not
# hand out a flow whose conntrack entry is dying (the stock path re-creates
# it through the forward chain each time), and the module takes the
# re-created flows. Each flush is followed by forward-chain packets.
churn_ok=1
for ((i = 0; i < 10; i++)); do
	fwd0=$(fp_fwd_packets)
	ip netns exec "$R" conntrack -F >/dev/null 2>&1 || true
	if ! busywait 10000 eval "[ \"\$(fp_fwd_packets)\" -gt $fwd0 ]"; then
		churn_ok=0
		break
	fi
done
check "conntrack flushed 10 times under traffic: slow path each time" \
	test "$churn_ok" = 1
check "after the flushes: traffic taken again" fp_taken_grows 100

# Flowtable deleted, then re-created by nft (hook ingress, as before): a
# flowtable of the same name, not the one attached, which the module must
# leave to the stock path from its first packet on.
ip netns exec "$R" nft delete table inet fp
check "flowtable deleted: attachment kept, waiting" \
	busywait 30000 attachment_is waiting 0 r0 r1
fp_ruleset 0 0
check "re-created by nft: the attachment turns stale, without hooks" \
	busywait 30000 attachment_is stale 0
check "stale: the module takes no packet of the new flowtable" none_taken 400

# Re-created at priority -100 and attached again (flowbulk -f attaches
# again after a load): the hook follows.
ip netns exec "$R" nft delete table inet fp
fp_ruleset -p -100
fp_genl "$R" attach inet fp ft
check "attached again at -100: hook at -100" busywait 30000 attached_at -100 r0 r1
check "attached again: traffic taken again" fp_taken_grows 100

# The flowtable flaps under traffic: every change of the devices' hook
# lists asks for one rescan, so the scans stay in proportion to the flaps
# (each delete and each create changes the lists), not to the packets.
scans() { fp_genl "$R" list | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["scans"])'; }
s0=$(scans)
for ((i = 0; i < 10; i++)); do
	ip netns exec "$R" nft delete table inet fp
	fp_ruleset -p -100
	fp_genl "$R" attach inet fp ft
done
check "flowtable flapped 10 times: traffic taken again" fp_taken_grows 100
s1=$(scans)
check "flowtable flapped 10 times: $((s1 - s0)) rescans, at most 4 per flap" \
	test $((s1 - s0)) -le 40

# CPUs going offline and online under traffic: nfb_lifetime.sh (3b).

# Module unload and reload under traffic.
check "module unloads under traffic" nfb_unload_module
check "module gone" eval '! nfb_module_loaded'
nfb_load_module
fp_genl "$R" attach inet fp ft
check "reloaded and re-attached: traffic taken" fp_taken_grows 100

# Delete a flowtable device (r1 is output one way, input the other).
ip -n "$R" link del r1
check "device deleted: peer gone (no leaked reference)" busywait 15000 gone "$S" s0
check "device deleted: attachment keeps r0 only" busywait 15000 attached_at -100 r0
# The stream now dies at the router; packets still reach r0 and are declined.
check "module still answers after device deletion" fp_genl "$R" stats >/dev/null

# Put a new output device in place; the flowtable does not have it, the
# slow path forwards.
ip link add s0 netns "$S" type veth peer name r1 netns "$R"
ip -n "$R" addr add 10.0.2.254/24 dev r1
ip -n "$R" link set r1 up
ip -n "$S" addr add 10.0.2.1/24 dev s0
ip -n "$S" link set s0 up
ip -n "$S" route add default via 10.0.2.254
check "new output device: ping through the slow path" \
	busywait 30000 ip netns exec "$C" ping -c1 -W1 -q 10.0.2.1

# Namespace deletion under traffic: everything of the router goes away.
ip netns exec "$R" nft flush ruleset
fp_ruleset 0 0
fp_genl "$R" detach inet fp ft
fp_genl "$R" attach inet fp ft
check "traffic taken before namespace deletion" fp_taken_grows 100
ip netns del "$R"
NS_LIST=("$C" "$S")	# R is gone: cleanup must not delete it again
check "router namespace deleted: client's veth gone (no leaked reference)" \
	busywait 20000 gone "$C" c0
fp_flood_stop

check "module unloads at the end" nfb_unload_module
exit "$ret"
