#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The route stays attached to a packet the module takes, as the stock hook
# attaches it: when the next hop stops answering ARP / neighbour
# solicitations, the packets waiting for resolution come back to the
# client as ICMP host unreachable (IPv4) / address unreachable (IPv6),
# with the module as without it. dst_link_failure() needs the route.
# On kernels whose stock hook transmits with dev_queue_xmit() (6.19 on,
# fp_kernel_pushes_encap), the stock hook takes the neighbour's address as
# it is, without resolving it: a vanished next hop gets the packets sent to
# an unresolved (all-zero) address and no error comes back. The module
# does not copy that silent loss: it still resolves through neigh_xmit()
# and the errors come back; the stock run is shown, not checked, there.
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 nstat

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

nfb_load_module
fp_topology
fp_ruleset 0 0
fp_echo_start 7000
# Resolution gives up after one probe of 100 ms; every ICMP error is sent.
for f in ipv4/neigh/r1 ipv6/neigh/r1; do
	ip netns exec "$R" sysctl -qw "net/$f/mcast_solicit=1" "net/$f/ucast_solicit=1" \
		"net/$f/app_solicit=0" "net/$f/retrans_time_ms=100"
done
ip netns exec "$R" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv6.icmp.ratelimit=0

fb() { fp_proc "$R" "fallback_$1"; }

# unreachable_case WHO ADDR: offload the flow, make the next hop vanish
# (the server drops its address: no ARP / NA answer), flush the router's
# neighbour entry, send; the client must get unreachable errors back.
unreachable_case() {
	local who=$1 addr=$2 v cnt plen n u0 t0 f0
	case "$addr" in
	*:*) v=6; cnt=Icmp6InDestUnreachs; plen=64 ;;
	*) v=4; cnt=IcmpInDestUnreachs; plen=24 ;;
	esac
	n=$(fp_udpc "$addr" 7000 "send 10")
	n=$(fp_udpc "$addr" 7000 "send 10")
	check "$who ipv$v: flow forwarded before the next hop goes ($n/10)" test "$n" -ge 9
	ip -n "$S" addr del "$addr/$plen" dev s0
	ip -n "$R" neigh flush dev r1
	u0=$(fp_nstat "$C" "$cnt")
	t0=$(fp_taken "$R")
	f0=$(fb neigh)
	fp_udpc "$addr" 7000 "send 3" >/dev/null
	if [ "$who" = stock ] && fp_kernel_pushes_encap; then
		busywait 3000 eval "[ \"\$(fp_nstat '$C' $cnt)\" -gt $u0 ]" || true
		echo "# stock ipv$v (this kernel's hook does not resolve): $(($(fp_nstat "$C" "$cnt") - u0)) unreachable errors"
	else
		check "$who ipv$v: unreachable errors come back" \
			busywait 10000 eval "[ \"\$(fp_nstat '$C' $cnt)\" -gt $u0 ]"
	fi
	if [ "$who" = module ]; then
		check "module ipv$v: the packets were the module's (taken, neigh_xmit)" \
			eval "[ \"\$(fp_stat '$R' 't[\"packets\"]')\" -ge $((t0 + 3)) ] &&
			      [ \"\$(fb neigh)\" -gt $f0 ]"
	fi
	ip -n "$S" addr add "$addr/$plen" dev s0 nodad
	if [ "$v" = 4 ]; then
		ip -n "$S" route replace default via 10.0.2.254
	else
		ip -n "$S" -6 route replace default via fd00:2::fe
	fi
}

# First without the module (the reference), then with it.
for who in stock module; do
	[ "$who" = module ] && fp_genl "$R" attach inet fp ft
	unreachable_case "$who" 10.0.2.1
	unreachable_case "$who" fd00:2::1
done

fp_genl "$R" detach inet fp ft
exit "$ret"
