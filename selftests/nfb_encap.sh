#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Encapsulation and direct transmit through the module (issue 11).
#
#   C: c0 10.0.1.1       c0.10 10.0.11.1 (802.1Q 10)
#                        c0.100.10 10.0.21.1 (802.1Q 10 in 802.1ad 100)
#   R: r0 10.0.1.254     r0.10 10.0.11.254   r0.100.10 10.0.21.254
#      r1 10.0.2.254     r1.10 10.0.12.254   r1.20 10.0.22.254
#      br0 10.0.3.254, bridge port r2
#   S: s0 10.0.2.1       s0.10 10.0.12.1     s0.20 10.0.22.1
#      s2 10.0.3.1 (on R's bridge)
# Flowtable on r0 r1 r2 (the real devices and the bridge port).
#
# Cases: VLAN -> untagged, untagged -> VLAN, VLAN -> VLAN (tag rewritten,
# with the priority code point of r1.20's egress map before 6.19),
# 802.1ad + 802.1Q -> untagged, untagged -> 802.1ad + 802.1Q (from 6.19 the
# module pushes both tags itself, the inner one into the packet),
# routed port -> bridge port (FLOW_OFFLOAD_XMIT_DIRECT; the replies go
# bridge port -> routed port). For each: the data arrives complete, intact
# and in order; at least 99 % of the stream was taken by the module (its
# per-encapsulation / per-xmit-type counters); a capture on S shows the
# right tag (or none) and, for the bridge, the cached MAC addresses.
#
# Before 6.19, where the module stands in for the VLAN device (its tags
# pushed, the bulk to the real device): a stream into VLAN 10 must be
# counted in r1.10's transmit counters, as the stock path's is, and with a
# qdisc on r1.10 the stream must go through that qdisc. A tap on r1.10
# (tcpdump on the router) must see every packet of the stream as r1.10's
# transmit shows it on the stock path (untagged, from r1.10's address),
# the module still taking the stream in lists, and r1.10's tx packets must
# equal what its tap saw. Packets the real device drops (longer than its
# peer's MTU) count in r1.10's tx dropped, as on the stock path, not in its
# tx packets.
#
# Mixed: untagged, VLAN 10 and VLAN 20 flows to the same output device r1,
# held in the module's queue (test_hold) and released at once, so that
# they are grouped in one drain: every packet arrives at its own address
# with its own tag, and bulks of more than one packet were sent.
#
# GSO into 802.1ad + 802.1Q: a flow's datagrams held in the module's queue,
# then a UDP GSO packet of the same flow, which from 6.19 the module
# declines (encap_gso) for the stock hook to segment: C must get all of
# them in order (the queued ones leave before the declined one).
#
# Stand-in down: the VLAN device a bulk stands in for goes down while its
# packets are queued: dropped and counted as dev_down, none delivered.
#
# Malformed: truncated PPPoE header, PPPoE length beyond the frame, wrong
# PPPoE version, PPP protocol LCP, truncated inner 802.1Q tag: each
# declined and counted under its reason; none reaches S.
# nfb-timeout: 1800
# nfb-long
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 tcpdump jq tc

PY=("$NFB_LIB/nfb_encap.py")
N=500
# NFB_ENCAP_STREAMS=0: only the mixed, GSO and malformed parts (a quicker
# run to watch a deliberately broken module fail); =standin: those and the
# VLAN stand-in's cases.
streams=${NFB_ENCAP_STREAMS:-1}
hold=/sys/module/nf_flow_bulk/parameters/test_hold
CAP_PID=
TAP_PID=

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	if [ -w "$hold" ]; then echo 0 >"$hold"; fi
	cap_stop
	tap_stop
	cleanup_all_ns
	fp_cleanup_tmp
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

# vlan NS DEV ID [ADDR [PROTO]]
vlan() {
	ip -n "$1" link add link "$2" name "$2.$3" type vlan id "$3" \
		protocol "${5:-802.1Q}"
	[ -z "${4:-}" ] || ip -n "$1" addr add "$4" dev "$2.$3"
	ip -n "$1" link set "$2.$3" up
}

topology() {
	setup_ns C R S
	ip link add c0 netns "$C" type veth peer name r0 netns "$R"
	ip link add s0 netns "$S" type veth peer name r1 netns "$R"
	ip link add s2 netns "$S" type veth peer name r2 netns "$R"
	ip -n "$C" addr add 10.0.1.1/24 dev c0
	ip -n "$R" addr add 10.0.1.254/24 dev r0
	ip -n "$R" addr add 10.0.2.254/24 dev r1
	ip -n "$S" addr add 10.0.2.1/24 dev s0
	ip -n "$S" addr add 10.0.3.1/24 dev s2
	ip -n "$R" link add br0 type bridge
	ip -n "$R" link set r2 master br0
	ip -n "$R" addr add 10.0.3.254/24 dev br0
	for l in "$C c0" "$R r0" "$R r1" "$R r2" "$R br0" "$S s0" "$S s2"; do
		read -r ns dev <<<"$l"
		ip -n "$ns" link set "$dev" up
	done
	vlan "$C" c0 10 10.0.11.1/24
	vlan "$R" r0 10 10.0.11.254/24
	vlan "$R" r1 10 10.0.12.254/24
	vlan "$R" r1 20 10.0.22.254/24
	# Priority 0 leaves r1.20 with priority code point 5 (below).
	ip -n "$R" link set r1.20 type vlan egress-qos-map 0:5
	vlan "$S" s0 10 10.0.12.1/24
	vlan "$S" s0 20 10.0.22.1/24
	vlan "$C" c0 100 "" 802.1ad
	vlan "$C" c0.100 10 10.0.21.1/24
	vlan "$R" r0 100 "" 802.1ad
	vlan "$R" r0.100 10 10.0.21.254/24
	# Each source address leaves through its own interface.
	ip -n "$C" route add default via 10.0.1.254
	ip -n "$C" rule add from 10.0.11.1 table 11
	ip -n "$C" route add default via 10.0.11.254 table 11
	ip -n "$C" rule add from 10.0.21.1 table 21
	ip -n "$C" route add default via 10.0.21.254 table 21
	ip -n "$S" route add default via 10.0.2.254
	local t
	for t in 12 22 3; do
		ip -n "$S" rule add from "10.0.$t.1" table "$t"
		ip -n "$S" route add default via "10.0.$t.254" table "$t"
	done
	ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
	fp_ruleset -d "r0 r1 r2" -l udp
	local a
	for a in "10.0.1.1 10.0.2.1" "10.0.11.1 10.0.12.1" "10.0.1.1 10.0.22.1" \
		"10.0.1.1 10.0.3.1" "10.0.21.1 10.0.2.1"; do
		read -r src dst <<<"$a"
		busywait 30000 ip netns exec "$C" ping -c1 -W1 -q -I "$src" "$dst" \
			>/dev/null || { log_fail "topology: $src -> $dst"; exit "$ksft_fail"; }
	done
}

# cap_start NS IFNAME: capture in NS, until cap_stop. Every data packet
# (longer than 500 bytes) whatever its tags, which "udp" alone would not
# see behind a tag in the frame (802.1ad + 802.1Q), and the short ones of
# the malformed part.
cap_start() {
	rm -f "$FP_TMP/cap.pcap" "$FP_TMP/cap.err"
	ip netns exec "$1" tcpdump -i "$2" -nn -U -B 8192 -w "$FP_TMP/cap.pcap" \
		"greater 500 or (udp and not port 53)" 2>"$FP_TMP/cap.err" &
	CAP_PID=$!
	busywait 30000 nfb_file_has "$FP_TMP/cap.err" "listening on"
}

# cap_stop [N]: stop the capture, once it holds N data packets when N is
# given: tcpdump may still be reading them when the receiver has them all,
# and the packets it has not read when interrupted are lost to the file.
cap_stop() {
	[ -n "$CAP_PID" ] || return 0
	if [ -n "${1:-}" ] && ! busywait 30000 cap_has "$1"; then
		echo "INFO: capture: $(cap_count "greater 500") of $1 data packets after 30 s"
	fi
	kill -INT "$CAP_PID" 2>/dev/null || true
	wait "$CAP_PID" 2>/dev/null || true
	CAP_PID=
	# "N packets dropped by kernel": a short capture says so.
	sed -n 's/^\([1-9][0-9]* packets dropped by kernel\)$/INFO: capture: \1/p' "$FP_TMP/cap.err"
}

cap_has() {
	[ "$(cap_count "greater 500")" -ge "$1" ]
}

# cap_count FILTER: packets of the last capture that match.
cap_count() {
	tcpdump -r "$FP_TMP/cap.pcap" -nn "$@" 2>/dev/null | wc -l
}

# tap_start IFNAME / tap_stop / tap_count FILTER: as cap_*, on R, for what
# IFNAME sends (every frame: no filter).
tap_start() {
	rm -f "$FP_TMP/tap.pcap" "$FP_TMP/tap.err"
	ip netns exec "$R" tcpdump -i "$1" -Q out -nn -U -B 8192 \
		-w "$FP_TMP/tap.pcap" 2>"$FP_TMP/tap.err" &
	TAP_PID=$!
	busywait 30000 nfb_file_has "$FP_TMP/tap.err" "listening on"
}

tap_stop() {
	[ -n "$TAP_PID" ] || return 0
	kill -INT "$TAP_PID" 2>/dev/null || true
	wait "$TAP_PID" 2>/dev/null || true
	TAP_PID=
}

tap_has() {
	[ "$(tap_count "greater 500")" -ge "$1" ]
}

tap_count() {
	tcpdump -r "$FP_TMP/tap.pcap" -nn "$@" 2>/dev/null | wc -l
}

# mstat EXPR: one number from the module's totals (t).
mstat() {
	fp_stat "$R" "$1"
}

# run_case NAME SRC DST PORT CAPIF ENCAP XMIT CAPFILTER...
# From C to S, or from S to C when SRC is one of S's addresses. ENCAP / XMIT: the
# taken_encap and taken_xmit counters the stream must land in, on every
# kernel: from 6.19, where the stock hook pushes the egress tag on the real
# device itself, the module does too; CAPFILTER: what every data packet
# captured on the receiver's CAPIF must match.
run_case() {
	local name=$1 src=$2 dst=$3 port=$4 capif=$5 enc=$6 xm=$7
	shift 7
	local e0 x0 f0 e1 x1 f1 d0 d1 all good snd=$C rcv=$S

	case $src in
	10.0.2.* | 10.0.3.* | 10.0.12.* | 10.0.22.*)
		snd=$S
		rcv=$C
		;;
	esac
	fp_stream_recv "$rcv" "$dst" "$port"
	cap_start "$rcv" "$capif"
	read -r e0 x0 d0 < <(mstat "'%d %d %d' % (t['taken_encap']['$enc'], t['taken_xmit']['$xm'], t['decline']['encap'])")
	f0=$(fp_nft_counters "$R" chain inet fp fwdchain)
	fp_stream "$name" "$snd" "$src" "$dst" "$port" "$N" || { cap_stop; return; }
	read -r e1 x1 d1 < <(mstat "'%d %d %d' % (t['taken_encap']['$enc'], t['taken_xmit']['$xm'], t['decline']['encap'])")
	f1=$(fp_nft_counters "$R" chain inet fp fwdchain)
	cap_stop "$N"
	echo "INFO: $name: taken as $enc $((e1 - e0)), as $xm $((x1 - x0)), declined as encap $((d1 - d0)), slow path $((f1 - f0))"
	check "$name: >= 99 % taken by the module as $enc" \
		test $((e1 - e0)) -ge $((N * 99 / 100))
	check "$name: >= 99 % taken by the module as $xm transmit" \
		test $((x1 - x0)) -ge $((N * 99 / 100))
	# Every data packet (the probes and end markers are short), whatever
	# its tag: a filter reads past "vlan" 4 bytes further on.
	all=$(cap_count "greater 500")
	good=$(cap_count "($*) and greater 500")
	echo "INFO: $name: captured $all data packets, $good match '$*'"
	check "$name: capture on $capif: all $N data packets match '$*'" \
		test "$good" -eq "$N" -a "$all" -eq "$N"
}

nfb_load_module
fp_tmpdir
topology
fp_genl "$R" attach inet fp ft

r_br=$(ip -n "$R" -j link show br0 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')
s_s2=$(ip -n "$S" -j link show s2 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')

if [ "$streams" = 1 ]; then
	run_case "vlan -> untagged" 10.0.11.1 10.0.2.1 6001 s0 vlan neigh \
		"dst host 10.0.2.1 and dst port 6001 and not vlan"
	run_case "untagged -> vlan" 10.0.1.1 10.0.12.1 6002 s0 none neigh \
		"vlan 10 and dst host 10.0.12.1 and dst port 6002"
	# r1.20's egress map gives the tag its priority code point 5, as the
	# stock path through r1.20 does before 6.19; from 6.19 the stock hook
	# pushes the bare id (nf_flow_vlan_push()), and so does the module.
	pcp=5
	if fp_kernel_pushes_encap; then pcp=0; fi
	run_case "vlan -> vlan" 10.0.11.1 10.0.22.1 6003 s0 vlan neigh \
		"vlan 20 and (ether[14] & 0xe0) = $((pcp << 5)) and dst host 10.0.22.1 and dst port 6003"
	run_case "802.1ad + 802.1Q -> untagged" 10.0.21.1 10.0.2.1 6006 s0 vlan2 neigh \
		"dst host 10.0.2.1 and dst port 6006 and not vlan"
	run_case "untagged -> 802.1ad + 802.1Q" 10.0.2.1 10.0.21.1 6007 c0 none neigh \
		"vlan 100 and vlan 10 and dst host 10.0.21.1 and dst port 6007"
	run_case "routed -> bridge port (direct)" 10.0.1.1 10.0.3.1 6004 s2 none direct \
		"ether src $r_br and ether dst $s_s2 and dst host 10.0.3.1 and dst port 6004 and not vlan"

	run_case "bridge port -> routed port" 10.0.3.1 10.0.1.1 6005 c0 none neigh \
		"dst host 10.0.1.1 and dst port 6005 and not vlan"
fi

# Before 6.19 the stock path sends through the VLAN device, and the module
# stands in for it (its tag pushed, the bulk to the real device): the VLAN
# device's transmit counters must count the packets all the same, and a
# qdisc on it must see them (the module then sends through it).
txp() {
	ip -n "$R" -s -j link show "$1" | jq '.[0].stats64.tx.packets'
}
txd() {
	ip -n "$R" -s -j link show "$1" | jq '.[0].stats64.tx.dropped'
}
txd_is() {
	[ "$(txd "$1")" -eq "$2" ]
}
qdisc_sent() {
	tc -n "$R" -s -j qdisc show dev "$1" | jq '[.[] | select(.kind == "pfifo")][0].packets'
}
fallbacks() {
	mstat "'%d %d' % (t['fallback']['qdisc'], sum(t['fallback'].values()))"
}
if [ "$streams" != 0 ] && ! fp_kernel_pushes_encap; then
	# Nothing else through r1.10 meanwhile: no neighbour probe of R's, no
	# ARP reply to S's (6.12 sent one during the stream), no IPv6 of its
	# own. Its tap and its counters then see the stream alone.
	s_vlan=$(ip -n "$S" -j link show s0.10 | jq -r '.[0].address')
	r_vlan=$(ip -n "$R" -j link show r1.10 | jq -r '.[0].address')
	ip -n "$R" neigh replace 10.0.12.1 lladdr "$s_vlan" dev r1.10 nud permanent
	ip -n "$S" neigh replace 10.0.12.254 lladdr "$r_vlan" dev s0.10 nud permanent
	ip netns exec "$R" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/r1.10/disable_ipv6'
	tap_start r1.10
	t0=$(txp r1.10)
	read -r _ fb0 < <(fallbacks)
	run_case "untagged -> vlan (the VLAN device's counters and tap)" 10.0.1.1 10.0.12.1 6008 s0 none neigh \
		"vlan 10 and dst host 10.0.12.1 and dst port 6008"
	busywait 30000 tap_has "$N" || echo "INFO: tap: $(tap_count "greater 500") of $N data packets after 30 s"
	t1=$(txp r1.10)
	read -r _ fb1 < <(fallbacks)
	tap_stop
	tap_all=$(tap_count)
	tap_data=$(tap_count "greater 500")
	tap_good=$(tap_count "ether src $r_vlan and ether dst $s_vlan and dst host 10.0.12.1 and dst port 6008 and greater 500 and not vlan")
	echo "INFO: tap on r1.10: $tap_all frames, $tap_data data packets, $tap_good as the stock path shows them; r1.10 tx packets +$((t1 - t0))"
	tcpdump -r "$FP_TMP/tap.pcap" -nn -e "not greater 500" 2>/dev/null | sed 's/^/INFO: tap on r1.10, not data: /'
	check "the tap on r1.10 saw all $N data packets, untagged, from r1.10's address" \
		test "$tap_good" -eq "$N" -a "$tap_data" -eq "$N"
	check "r1.10 counted what it sent, as its tap saw it (tx packets +$((t1 - t0)), tap $tap_all)" \
		test $((t1 - t0)) -eq "$tap_all"
	check "the module sent it in lists to r1, through r1.10 not one by one (fallbacks +$((fb1 - fb0)))" \
		test $((fb1 - fb0)) -eq 0
	# A frame longer than the peer's MTU is dropped by veth
	# (NET_XMIT_DROP): r1.10 counts it dropped, not sent.
	M=20
	f=10.0.1.1,10.0.12.1,6010,46010,0
	fp_stream_recv "$S" 10.0.12.1 6010
	ip netns exec "$C" python3 "${PY[@]}" probe 10.0.1.1 10.0.12.1 6010 46010
	ip -n "$S" link set s0 mtu 1000
	t0=$(txp r1.10)
	d0=$(txd r1.10)
	k0=$(fp_taken "$R")
	ip netns exec "$C" taskset -c 0 python3 "${PY[@]}" burst "$M" "$f"
	busywait 30000 txd_is r1.10 $((d0 + M)) || true
	t1=$(txp r1.10)
	d1=$(txd r1.10)
	k1=$(fp_taken "$R")
	# s0.10 took s0's smaller MTU; it does not take the larger one back.
	ip -n "$S" link set s0 mtu 1500
	ip -n "$S" link set s0.10 mtu 1500
	ip netns exec "$C" python3 "${PY[@]}" end "$f"
	echo "INFO: $M over the peer's MTU: r1.10 tx packets +$((t1 - t0)), tx dropped +$((d1 - d0)), taken by the module +$((k1 - k0))"
	check "the module took the $M packets the real device then dropped" \
		test $((k1 - k0)) -ge "$M"
	check "r1.10 counted the $M dropped, not sent (tx dropped +$((d1 - d0)), tx packets +$((t1 - t0)))" \
		test $((d1 - d0)) -eq "$M" -a $((t1 - t0)) -lt "$M"
	ip -n "$R" neigh del 10.0.12.1 dev r1.10
	ip -n "$S" neigh del 10.0.12.254 dev s0.10
	ip netns exec "$R" sh -c 'echo 0 >/proc/sys/net/ipv6/conf/r1.10/disable_ipv6'
	tc -n "$R" qdisc add dev r1.10 root pfifo limit 1000
	read -r q0 _ < <(fallbacks)
	run_case "untagged -> vlan (a qdisc on the VLAN device)" 10.0.1.1 10.0.12.1 6009 s0 none neigh \
		"vlan 10 and dst host 10.0.12.1 and dst port 6009"
	read -r q1 _ < <(fallbacks)
	check "the qdisc on r1.10 sent the stream (sent $(qdisc_sent r1.10), at least $N)" \
		test "$(qdisc_sent r1.10)" -ge "$N"
	check "the module sent it through r1.10 (fallback qdisc +$((q1 - q0)), at least $N)" \
		test $((q1 - q0)) -ge "$N"
	tc -n "$R" qdisc del dev r1.10 root
fi

# Mixed: three flows, three encapsulations, one output device.
flows=("10.0.11.1,10.0.2.1,6011,46011,0" "10.0.1.1,10.0.12.1,6012,46012,0"
	"10.0.11.1,10.0.22.1,6013,46013,0")
for f in "${flows[@]}"; do
	IFS=, read -r src dst port sport _ <<<"$f"
	fp_stream_recv "$S" "$dst" "$port"
	ip netns exec "$C" python3 "${PY[@]}" probe "$src" "$dst" "$port" "$sport"
done
# An echoed probe offloads its flow (the reply is confirmed).
cap_start "$S" s0
ip netns exec "$R" python3 "$NFB_LIB/nfb_genl.py" reset
rounds=40
echo 1 >"$hold"
ip netns exec "$C" taskset -c 0 python3 "${PY[@]}" burst "$rounds" "${flows[@]}"
busywait 30000 eval "[ \"\$(fp_taken \"\$R\")\" -ge $((3 * rounds)) ]" ||
	echo "INFO: mixed: only $(fp_taken "$R") packets queued"
echo 0 >"$hold"
ip netns exec "$C" python3 "${PY[@]}" end "${flows[@]}"
for f in "${flows[@]}"; do
	IFS=, read -r src dst port sport _ <<<"$f"
	check "mixed: $dst:$port got its $rounds datagrams intact and in order" \
		fp_stream_verdict "$port" "$rounds"
done
cap_stop $((3 * rounds))
echo "INFO: mixed: $(mstat '{k: t[k] for k in ("packets", "bulks", "hist", "taken_encap")}')"
# flowbulk's view of the same counters (the tool parses nests 9 and 10).
fb_taken() {
	ip netns exec "$R" "$NFB_REPO/build/userspace/flowbulk" -j stats |
		jq -c '[.stats.total.taken_encap[].packets, .stats.total.taken_xmit[].packets]'
}
mod_taken() {
	mstat "[*t['taken_encap'].values(), *t['taken_xmit'].values()]" | tr -d ' '
}
fbt=$(fb_taken)
echo "INFO: flowbulk -j stats: taken_encap + taken_xmit $fbt"
check "mixed: flowbulk -j stats shows the module's taken_encap and taken_xmit" \
	test "$fbt" = "$(mod_taken)" -a "$fbt" != "[0,0,0,0,0,0,0]"
check "mixed: the module took all $((3 * rounds)) packets" \
	test "$(mstat "t['packets']")" -ge $((3 * rounds))
check "mixed: the module sent bulks of more than one packet" \
	test "$(mstat "t['bulks']")" -lt "$(mstat "t['packets']")"
# libpcap reads what follows "vlan" 4 bytes further: "not vlan" goes last.
for want in "dst host 10.0.2.1 and greater 500 and not vlan" \
	"vlan 10 and dst host 10.0.12.1 and greater 500" \
	"vlan 20 and dst host 10.0.22.1 and greater 500"; do
	check "mixed: capture: $rounds data packets with '$want'" \
		test "$(cap_count "$want")" -eq "$rounds"
done
check "mixed: capture: $((3 * rounds)) data packets in all" \
	test "$(cap_count "greater 500")" -eq $((3 * rounds))

# declined REASON N: at least N packets declined for REASON so far (polled:
# read from /proc, fp_proc).
declined() {
	[ "$(fp_proc "$R" "decline_$1")" -ge "$2" ]
}

# GSO into 802.1ad + 802.1Q: datagrams 0..3 of a flow from S to C's
# c0.100.10, taken and held in the module's queue, then 4..7 in one UDP GSO
# packet (as GRO on the LAN side or a TSO sender makes them). From 6.19 the
# module leaves that one to the stock hook, which segments it before it
# pushes the tags (encap_gso); the queued ones must leave first, even held.
# Before 6.19 it is taken like the others. Either way C gets 0..7 in order.
gso_f=10.0.2.1,10.0.21.1,6014,46014
fp_stream_recv "$C" 10.0.21.1 6014
ip netns exec "$S" python3 "${PY[@]}" probe 10.0.2.1 10.0.21.1 6014 46014
g0=$(fp_taken "$R")
gd0=$(fp_proc "$R" decline_encap_gso)
echo 1 >"$hold"
ip netns exec "$S" taskset -c 0 python3 "${PY[@]}" burst 4 "$gso_f,0"
check "GSO into 802.1ad + 802.1Q: datagrams 0..3 taken and held" \
	busywait 30000 fp_taken_above $((g0 + 4))
ip netns exec "$S" taskset -c 0 python3 "${PY[@]}" gso "$gso_f,4" 4
if fp_kernel_pushes_encap; then
	check "GSO into 802.1ad + 802.1Q: the GSO packet declined as encap_gso" \
		busywait 30000 declined encap_gso $((gd0 + 1))
else
	check "GSO into 802.1ad + 802.1Q: the GSO packet taken" \
		busywait 30000 fp_taken_above $((g0 + 5))
fi
echo 0 >"$hold"
ip netns exec "$S" python3 "${PY[@]}" end "$gso_f,0"
check "GSO into 802.1ad + 802.1Q: C got datagrams 0..7 intact and in order" \
	fp_stream_verdict 6014 8

# The VLAN device a bulk stands in for (r1.10: the stream's route device;
# the bulk goes to r1) goes down while ten datagrams wait in the queue:
# they are dropped and counted as dev_down, as when a bulk's own device is
# down, not sent through r1.10 one by one as if its neighbour were being
# resolved (fallback neigh), and S gets none of them.
down_f=10.0.1.1,10.0.12.1,6015,46015
fp_stream_recv "$S" 10.0.12.1 6015
ip netns exec "$C" python3 "${PY[@]}" probe 10.0.1.1 10.0.12.1 6015 46015
read -r dd0 dn0 < <(mstat "'%d %d' % (t['drop']['dev_down'], t['fallback']['neigh'])")
g0=$(fp_taken "$R")
echo 1 >"$hold"
ip netns exec "$C" taskset -c 0 python3 "${PY[@]}" burst 10 "$down_f,0"
check "stand-in down: 10 datagrams into VLAN 10 taken and held" \
	busywait 30000 fp_taken_above $((g0 + 10))
ip -n "$R" link set r1.10 down
echo 0 >"$hold"
busywait 30000 eval "[ \"\$(fp_proc \"\$R\" drop_dev_down)\" -ge $((dd0 + 10)) ]" || true
read -r dd1 dn1 < <(mstat "'%d %d' % (t['drop']['dev_down'], t['fallback']['neigh'])")
ip -n "$R" link set r1.10 up
check "stand-in down: the 10 dropped as dev_down (+$((dd1 - dd0)))" \
	test $((dd1 - dd0)) -eq 10
check "stand-in down: none sent through r1.10 one by one (fallback neigh +$((dn1 - dn0)))" \
	test "$dn1" -eq "$dn0"
busywait 30000 ip netns exec "$C" ping -c1 -W1 -q -I 10.0.1.1 10.0.12.1 >/dev/null || true
ip netns exec "$C" python3 "${PY[@]}" end "$down_f,0"
check "stand-in down: S got none of them" fp_stream_verdict 6015 0

# Malformed encapsulations into r0.
r0mac=$(ip -n "$R" -j link show r0 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')
cap_start "$S" s0
for m in "pppoe_trunc encap_header" "pppoe_len pppoe" "pppoe_ver pppoe" \
	"ppp_proto ppp_proto" "vlan_trunc encap_header"; do
	read -r kind reason <<<"$m"
	b=$(mstat "t['decline']['$reason']")
	echo "$r0mac" | ip netns exec "$C" python3 "${PY[@]}" raw c0 "$kind" 5
	check "malformed $kind: declined as $reason" \
		busywait 30000 declined "$reason" $((b + 5))
done
cap_stop
check "malformed: nothing reached S" test "$(cap_count "dst port 7777")" -eq 0

fp_genl "$R" detach inet fp ft
exit "$ret"
