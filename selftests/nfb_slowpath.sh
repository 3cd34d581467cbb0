#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Slow-path cases with the module attached: they must behave as without it.
#   - TTL / hop limit 1 on an offloaded flow: ICMP time exceeded comes back;
#   - a packet over the egress MTU: ICMP frag-needed / packet-too-big;
#   - a route change: the stale route is noticed (declined, flow re-made;
#     on 7.x the flowtable's own GC may tear the flow down first);
#   - neighbour entry flushed: packets go through neigh_xmit, none lost.
# TCP FIN/RST and the transmit fallbacks are in nfb_fallback.sh.
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 nstat

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	cleanup_all_ns
	fp_cleanup_tmp
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

# decline / fallback counter of the module
dc() { fp_proc "$R" "decline_$1"; }
fb() { fp_proc "$R" "fallback_$1"; }

nfb_load_module
fp_topology
fp_tmpdir
# The output MTU is small from the start: flows record it when offloaded.
ip -n "$R" link set r1 mtu 1280
fp_ruleset 0 0
fp_genl "$R" attach inet fp ft
fp_echo_start 7000

for addr in 10.0.2.1 fd00:2::1; do
	case "$addr" in
	*:*) v=6; te=Icmp6InTimeExcds; big=Icmp6InPktTooBigs ;;
	*) v=4; te=IcmpInTimeExcds; big=IcmpInDestUnreachs ;;
	esac

	# Offload the flow: two packets through the slow path, then hits.
	n=$(fp_udpc "$addr" 7000 "send 10")
	check "ipv$v: udp echoes before the checks ($n/10)" test "$n" -ge 9
	tk0=$(fp_taken "$R")
	n=$(fp_udpc "$addr" 7000 "send 10")
	tk1=$(fp_taken "$R")
	check "ipv$v: offloaded flow taken by the module ($((tk1 - tk0)) for 20 packets)" \
		test $((tk1 - tk0)) -ge 19

	# TTL 1
	t0=$(fp_nstat "$C" "$te")
	d0=$(dc ttl)
	fp_udpc "$addr" 7000 "ttl 1" "send 3" >/dev/null
	check "ipv$v: ttl 1 gives ICMP time exceeded" \
		busywait 10000 eval "[ \"\$(fp_nstat '$C' $te)\" -ge $((t0 + 3)) ]"
	check "ipv$v: ttl 1 declined by the module" test "$(dc ttl)" -ge $((d0 + 3))
	n=$(fp_udpc "$addr" 7000 "ttl 2" "send 3")
	check "ipv$v: ttl 2 still forwarded ($n/3 echoes)" test "$n" -eq 3

	# Over the egress MTU with DF: ICMP frag-needed / packet too big.
	b0=$(fp_nstat "$C" "$big")
	d0=$(dc mtu)
	fp_udpc "$addr" 7000 df "size 1400" "send 1" >/dev/null
	check "ipv$v: oversized packet gives ICMP frag-needed / too big" \
		busywait 10000 eval "[ \"\$(fp_nstat '$C' $big)\" -gt $b0 ]"
	check "ipv$v: oversized packet declined (mtu)" test "$(dc mtu)" -gt "$d0"

	# Route change: the cached route goes stale, the flow is re-made.
	# On 6.1 and 6.12 only the packet path checks the route: the module
	# must decline the next packet (dst_stale), as the stock hook tears
	# the flow down there. 7.x's flowtable GC checks both directions'
	# routes too (nf_flow_offload_gc_step(), once a second) and may tear
	# the flow down before the first packet comes: that packet then
	# misses the flowtable (miss), with the module as without it. A
	# module that used the stale route moves neither counter.
	d0=$(dc dst_stale)
	m0=$(dc miss)
	if [ "$v" = 4 ]; then
		ip -n "$R" route add 10.0.2.1/32 dev r1
	else
		ip -n "$R" -6 route add fd00:2::1/128 dev r1
	fi
	n=$(fp_udpc "$addr" 7000 "send 10")
	check "ipv$v: route change: all echoes ($n/10)" test "$n" -eq 10
	d1=$(dc dst_stale)
	m1=$(dc miss)
	echo "# ipv$v: route change: declined dst_stale $((d1 - d0)), miss $((m1 - m0))"
	check "ipv$v: route change noticed (dst_stale, or torn down by 7.x's GC: miss)" \
		test "$d1" -gt "$d0" -o "$m1" -gt "$m0"

	# Neighbour flushed: packets wait for resolution, none is lost. S's
	# entry for R goes first: S probing it (a unicast ARP / NS once it is
	# stale) would give R an entry for S before the first packet, and the
	# module nothing to resolve (seen once, on a loaded host).
	f0=$(fb neigh)
	ip -n "$S" neigh flush dev s0
	ip -n "$R" neigh flush dev r1
	n=$(fp_udpc "$addr" 7000 "send 10")
	check "ipv$v: neighbour flushed: all echoes ($n/10)" test "$n" -eq 10
	check "ipv$v: neighbour resolution through neigh_xmit counted" \
		test "$(fb neigh)" -gt "$f0"
done

fp_genl "$R" detach inet fp ft
exit "$ret"
