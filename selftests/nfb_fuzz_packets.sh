#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Malformed packets at the fast path (nfb_fuzz_packets.py, scapy). The
# topology of fastpath.sh with the module attached and four offloaded
# flows (UDP and TCP, IPv4 and IPv6, C -> S); then, from c0 through an
# AF_PACKET socket, fixed malformed cases and seeded random mutations of
# frames that match or nearly match the flows: lying IPv4/IPv6 lengths,
# IHL, versions, checksums, fragments, truncated TCP/UDP headers, TTL,
# 802.1Q/802.1ad/PPPoE headers that lie, zero-length payloads. Asserts:
#   - the module's counters account for every frame that reached its hook
#     (packets taken + declines per reason);
#   - valid packets of the flows are taken between the chunks and at the
#     end, and valid datagrams arrive at the server intact;
#   - a malformed frame the module took (one of each kind), sent again with
#     the module detached, is forwarded by the stock flowtable too: the
#     stock flowtable of 6.1 / 6.12 checks no IP checksum, total length,
#     version or destination MAC, and the module does what it does (the
#     kinds are printed as INFO);
#   - FIN/RST on the TCP flows (sent last) are declined;
#   - nothing in the kernel log, the module still loaded.
# The router's nft ruleset offloads only the four flows' tuples, so no
# near miss becomes a flow of its own; neighbours are permanent and the
# client's and server's stacks drop all they receive and send, so that
# nothing but the test's frames crosses the router.
#
# NFB_FUZZ_SEED (default 1), NFB_FUZZ_COUNT (random frames, 3000) and
# NFB_FUZZ_TIME (seconds for them, 20).
# Long under TCG on a busy host (up to ~280 s seen):
# nfb-timeout: 600
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 dmesg
python3 -c 'import scapy' 2>/dev/null ||
	nfb_cannot_run "python3-scapy is not installed (tools/setup installs it)"

seed=${NFB_FUZZ_SEED:-1}
count=${NFB_FUZZ_COUNT:-3000}
secs=${NFB_FUZZ_TIME:-20}

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
	if [ "$ret" != 0 ]; then
		echo "INFO: seed $seed; reproduce with:" \
			"tools/vm/run --kernel $(uname -r) -- env NFB_FUZZ_SEED=$seed" \
			"NFB_FUZZ_COUNT=$count selftests/run_guest.sh nfb_fuzz_packets.sh"
	fi
}
trap cleanup EXIT

echo "INFO: NFB_FUZZ_SEED=$seed NFB_FUZZ_COUNT=$count NFB_FUZZ_TIME=$secs"

nfb_load_module
dmesg_before=$(dmesg | wc -l)
fp_topology

# permanent NS DEV ADDR PEER_NS PEER_DEV: a permanent neighbour entry, so
# that no ARP or neighbour discovery crosses the router during the test.
permanent() {
	local mac
	mac=$(ip -n "$4" -j link show "$5" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["address"])')
	ip -n "$1" neigh replace "$3" lladdr "$mac" dev "$2" nud permanent
}
permanent "$C" c0 10.0.1.254 "$R" r0
permanent "$C" c0 fd00:1::fe "$R" r0
permanent "$R" r0 10.0.1.1 "$C" c0
permanent "$R" r0 fd00:1::1 "$C" c0
permanent "$R" r1 10.0.2.1 "$S" s0
permanent "$R" r1 fd00:2::1 "$S" s0
permanent "$S" s0 10.0.2.254 "$R" r1
permanent "$S" s0 fd00:2::fe "$R" r1

fp_ruleset -t fz -N -l none -s "chain forward_fz {
		type filter hook forward priority filter; policy accept;
		ip saddr 10.0.1.1 ip daddr 10.0.2.1 udp sport 40000 udp dport 7000 flow add @ft
		ip saddr 10.0.1.1 ip daddr 10.0.2.1 tcp sport 40001 tcp dport 7001 flow add @ft
		ip6 saddr fd00:1::1 ip6 daddr fd00:2::1 udp sport 40000 udp dport 7000 flow add @ft
		ip6 saddr fd00:1::1 ip6 daddr fd00:2::1 tcp sport 40001 tcp dport 7001 flow add @ft
	}"
fp_genl "$R" attach inet fz ft

if ! ip netns exec "$R" env NFB_FUZZ_SEED="$seed" NFB_FUZZ_COUNT="$count" \
	NFB_FUZZ_TIME="$secs" python3 "$NFB_REPO/selftests/nfb_fuzz_packets.py" "$C" "$S" fz ft; then
	ret=1
fi

check "module still loaded" nfb_module_loaded
check "still attached" test "$(fp_genl "$R" list | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')" = 1
new_log=$(dmesg | tail -n +"$((dmesg_before + 1))")
trouble=$(printf '%s\n' "$new_log" | grep -E 'BUG:|WARNING:|Oops|KASAN|refcount_t:|general protection|ubsan|skb_over_panic|skb_under_panic' || true)
check "no kernel trouble in the log${trouble:+: $trouble}" test -z "$trouble"

exit "$ret"
