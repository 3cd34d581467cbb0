#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# IPIP and IP6IP6 flows through the module (issue 25).
#
#   C: c0 10.0.1.1 fd00:1::1
#   R: r0 10.0.1.254 fd00:1::fe
#      r1 10.0.2.254 fd00:2::fe (the underlay)
#      tun4 ipip 10.0.2.254 -> 10.0.2.1, tun6 ip6tnl fd00:2::fe -> fd00:2::1
#      (encaplimit none); 10.0.5.0/24 and fd00:5::/64 through them
#      r1 also fd00:2::fd, tun6l ip6tnl fd00:2::fd -> fd00:2::2 with the
#      default encapsulation limit; fd00:6::/64 through it
#   S: s1 10.0.2.1 fd00:2::1, its ends of both tunnels, 10.0.5.1 and
#      fd00:5::1 on a dummy device, 10.0.1.0/24 and fd00:1::/64 through them;
#      s1 also fd00:2::2, its end of tun6l, fd00:6::1 on the dummy device,
#      and from fd00:6::1 fd00:1::/64 through tun6l
# Flowtable on R's real devices r0 r1 (a flow through a tunnel resolves to
# the underlay device from 6.19, which must be in the flowtable).
#
# Cases, for IPv4 in IPIP and IPv6 in IP6IP6: a stream C -> S, which leaves
# R through the tunnel, and one S -> C, which comes into R through it.
# Every time: the data arrives complete, intact and in order, and the
# captures show every data packet encapsulated on the underlay (outer
# addresses R's and S's underlay ones, at S) and bare at C.
# From 6.19, where the stock hook pops and pushes the outer header itself
# (the tuple's tunnel, probe FLOW_TUPLE_TUN), at least 99 % of each stream
# must be taken by the module, none declined as encap. Before it the
# flowtable knows no tunnel: the stream into the tunnel is taken (it leaves
# through the tunnel device, which pushes), the one out of it reaches R
# as IPIP / IPv6-in-IPv6 packets, which the stock hook ignores and the
# module declines (l4proto).
# Then the same two IPv6 streams (200 datagrams) through tun6l, whose
# packets carry the encapsulation limit destination option (next header
# 60, then 41): every one of them must carry it on the underlay, limit 4,
# as the tunnel device puts it on. The stock flowtable takes no such flow
# from 6.19 (path discovery through an ip6tnl device with an encapsulation
# limit fails, ip6_tnl_fill_forward_path(), so the flow is not offloaded)
# and the module declines the stream into the tunnel as misses; before
# 6.19 the flow leaves through the tunnel device, and the module takes it.
# The stream out of the tunnel reaches R with the option, which neither
# the stock hook (from 7.1.5 / 7.2 it takes only an inner header right
# behind the outer one) nor the module parses: declined (options).
# Then one IPv4 packet that fits the underlay but not with the outer
# header: declined (mtu) on every kernel.
# Then a decline's order key through tun6l, on every kernel: a flow S -> C
# from fd00:7::1, routed plain over the underlay both ways (offloaded as a
# plain flow), and a flow C -> S to fd00:8::1, plain too; 4 and 2 of their
# datagrams taken and held in the module's queue (test_hold). S then
# routes fd00:7::1's flow into tun6l: its next datagram reaches R as IPv6
# + encapsulation limit option + IPv6, which the module declines (options)
# and the stock path decapsulates and forwards to C at once. The decline's
# key is made of the inner addresses, read past the option
# (nfb_order_ext6()): the key the flow's held packets carry. Those 4 must
# leave before it (C gets 0..4 in order), in one drain, and the other
# flow's 2 stay held (S gets none) until the hold ends. Keyed by the
# outer addresses, the decline would find nothing of its flow and go
# first; knowing no key, it would send the namespace's every packet.
# nfb-timeout: 1200
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 tcpdump

PY=("$NFB_LIB/nfb_encap.py")
N=500
# NFB_TUNNEL_STREAMS=0: only the MTU and order key parts (a quicker run to
# watch a deliberately broken module fail).
streams=${NFB_TUNNEL_STREAMS:-1}
CAP_PIDS=()
hold=/sys/module/nf_flow_bulk/parameters/test_hold

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	if [ -w "$hold" ]; then echo 0 >"$hold"; fi
	cap_stop
	cleanup_all_ns
	fp_cleanup_tmp
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

topology() {
	setup_ns C R S
	ip link add c0 netns "$C" type veth peer name r0 netns "$R"
	ip link add s1 netns "$S" type veth peer name r1 netns "$R"
	ip -n "$S" link add d0 type dummy
	ip -n "$C" -batch - <<-EOF
	addr add 10.0.1.1/24 dev c0
	addr add fd00:1::1/64 dev c0 nodad
	link set c0 up
	route add default via 10.0.1.254
	route add default via fd00:1::fe
	EOF
	ip -n "$R" -batch - <<-EOF
	addr add 10.0.1.254/24 dev r0
	addr add fd00:1::fe/64 dev r0 nodad
	addr add 10.0.2.254/24 dev r1
	addr add fd00:2::fe/64 dev r1 nodad
	link set r0 up
	link set r1 up
	link add tun4 type ipip local 10.0.2.254 remote 10.0.2.1
	link add tun6 type ip6tnl local fd00:2::fe remote fd00:2::1 encaplimit none
	addr add 10.9.0.1/30 dev tun4
	addr add fd00:9::1/64 dev tun6 nodad
	link set tun4 up
	link set tun6 up
	route add 10.0.5.0/24 dev tun4
	route add fd00:5::/64 dev tun6
	addr add fd00:2::fd/64 dev r1 nodad
	link add tun6l type ip6tnl local fd00:2::fd remote fd00:2::2
	addr add fd00:a::1/64 dev tun6l nodad
	link set tun6l up
	route add fd00:6::/64 dev tun6l
	EOF
	ip -n "$S" -batch - <<-EOF
	addr add 10.0.2.1/24 dev s1
	addr add fd00:2::1/64 dev s1 nodad
	addr add 10.0.5.1/32 dev d0
	addr add fd00:5::1/128 dev d0 nodad
	link set s1 up
	link set d0 up
	link add tun4 type ipip local 10.0.2.1 remote 10.0.2.254
	link add tun6 type ip6tnl local fd00:2::1 remote fd00:2::fe encaplimit none
	addr add 10.9.0.2/30 dev tun4
	addr add fd00:9::2/64 dev tun6 nodad
	link set tun4 up
	link set tun6 up
	route add 10.0.1.0/24 dev tun4 src 10.0.5.1
	route add fd00:1::/64 dev tun6 src fd00:5::1
	addr add fd00:2::2/64 dev s1 nodad
	addr add fd00:6::1/128 dev d0 nodad
	link add tun6l type ip6tnl local fd00:2::2 remote fd00:2::fd
	addr add fd00:a::2/64 dev tun6l nodad
	link set tun6l up
	route add fd00:1::/64 dev tun6l src fd00:6::1 table 100
	EOF
	ip -n "$S" -6 rule add from fd00:6::1 table 100
	ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
	fp_ruleset -l udp
	local a
	for a in "10.0.1.1 10.0.5.1" "fd00:1::1 fd00:5::1" "fd00:1::1 fd00:6::1"; do
		read -r src dst <<<"$a"
		busywait 30000 ip netns exec "$C" ping -c1 -W1 -q -I "$src" "$dst" \
			>/dev/null || { log_fail "topology: $src -> $dst"; exit "$ksft_fail"; }
	done
}

# cap_start: capture the data packets on S's underlay and at C, until
# cap_stop.
cap_start() {
	local l
	CAP_PIDS=()
	for l in "$S s1" "$C c0"; do
		read -r ns dev <<<"$l"
		rm -f "$FP_TMP/$dev.pcap" "$FP_TMP/$dev.err"
		ip netns exec "$ns" tcpdump -i "$dev" -nn -U -B 8192 -w "$FP_TMP/$dev.pcap" \
			greater 500 2>"$FP_TMP/$dev.err" &
		CAP_PIDS+=($!)
		busywait 30000 nfb_file_has "$FP_TMP/$dev.err" "listening on"
	done
}

# cap_stop [N]: stop both captures, once each holds N packets when N is
# given (tcpdump may still be reading them when the receiver has them all).
cap_stop() {
	local p dev
	[ "${#CAP_PIDS[@]}" -gt 0 ] || return 0
	if [ -n "${1:-}" ]; then
		for dev in s1 c0; do
			busywait 30000 cap_has "$dev" "$1" ||
				echo "INFO: capture on $dev: $(cap_count "$dev") of $1 after 30 s"
		done
	fi
	for p in "${CAP_PIDS[@]}"; do
		kill -INT "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	CAP_PIDS=()
}

cap_has() {
	[ "$(cap_count "$1")" -ge "$2" ]
}

# cap_count DEV [FILTER]: packets of the last capture on DEV that match.
cap_count() {
	local dev=$1
	shift
	tcpdump -r "$FP_TMP/$dev.pcap" -nn "$@" 2>/dev/null | wc -l
}

# mstat EXPR: one number from the module's totals (t).
mstat() {
	fp_stat "$R" "$1"
}

# 6.19 brought the tunnel into the tuple with the push of VLAN / PPPoE.
tunnels=0
if fp_kernel_pushes_encap; then tunnels=1; fi

# run_case NAME SND SRC RCV DST PORT OUTER INNER [EXPECT]
# N datagrams from SRC in SND to DST in RCV. OUTER: what each of them must
# match on S's underlay (s1), INNER: at C (c0). EXPECT: what the module
# must do with them, taken or declined as miss or options; by default as
# the tunnels without an encapsulation limit (above).
run_case() {
	local name=$1 snd=$2 src=$3 rcv=$4 dst=$5 port=$6 outer=$7 inner=$8
	local expect=${9:-} p0 d0 l0 m0 o0 p1 d1 l1 m1 o1 into=yes all good
	local counts="'%d %d %d %d %d' % (t['packets'], t['decline']['encap'], t['decline']['l4proto'], t['decline']['miss'], t['decline']['options'])"

	[ "$streams" = 1 ] || return 0
	[ "$snd" = "$C" ] || into=no
	fp_stream_recv "$rcv" "$dst" "$port"
	cap_start
	read -r p0 d0 l0 m0 o0 < <(mstat "$counts")
	fp_stream "$name" "$snd" "$src" "$dst" "$port" "$N" || { cap_stop; return; }
	read -r p1 d1 l1 m1 o1 < <(mstat "$counts")
	cap_stop "$N"
	echo "INFO: $name: taken $((p1 - p0)), declined as encap $((d1 - d0)), as l4proto $((l1 - l0)), as miss $((m1 - m0)), as options $((o1 - o0))"
	if [ "$expect" = taken ]; then
		check "$name: >= 99 % taken by the module" test $((p1 - p0)) -ge $((N * 99 / 100))
	elif [ "$expect" = miss ]; then
		check "$name: declined as misses, as the stock flowtable has no such flow" \
			test $((m1 - m0)) -ge $((N * 99 / 100)) -a $((p1 - p0)) -lt $((N / 100 + 4))
	elif [ "$expect" = options ]; then
		check "$name: declined as options, as the stock hook ignores them" \
			test $((o1 - o0)) -ge $((N * 99 / 100)) -a $((p1 - p0)) -lt $((N / 100 + 4))
	elif [ "$tunnels" = 1 ] || [ "$into" = yes ]; then
		check "$name: >= 99 % taken by the module" test $((p1 - p0)) -ge $((N * 99 / 100))
		check "$name: none declined as encap" test $((d1 - d0)) -eq 0
	else
		check "$name: the tunnel's packets declined (l4proto), as the stock hook ignores them" \
			test $((l1 - l0)) -ge $((N * 99 / 100)) -a $((p1 - p0)) -lt $((N / 100 + 4))
	fi
	all=$(cap_count s1)
	good=$(cap_count s1 "$outer")
	echo "INFO: $name: s1: $all data packets, $good match '$outer'"
	check "$name: s1 (underlay): all $N data packets match '$outer'" \
		test "$good" -eq "$N" -a "$all" -eq "$N"
	all=$(cap_count c0)
	good=$(cap_count c0 "$inner")
	echo "INFO: $name: c0: $all data packets, $good match '$inner'"
	check "$name: c0: all $N data packets match '$inner'" \
		test "$good" -eq "$N" -a "$all" -eq "$N"
}

nfb_load_module
fp_tmpdir
topology
fp_genl "$R" attach inet fp ft

run_case "ipv4 into ipip" "$C" 10.0.1.1 "$S" 10.0.5.1 6101 \
	"src host 10.0.2.254 and dst host 10.0.2.1 and ip proto 4" \
	"ip and udp and dst host 10.0.5.1 and dst port 6101"
run_case "ipv4 out of ipip" "$S" 10.0.5.1 "$C" 10.0.1.1 6102 \
	"src host 10.0.2.1 and dst host 10.0.2.254 and ip proto 4" \
	"ip and udp and dst host 10.0.1.1 and dst port 6102"
run_case "ipv6 into ip6ip6" "$C" fd00:1::1 "$S" fd00:5::1 6103 \
	"src host fd00:2::fe and dst host fd00:2::1 and ip6 proto 41" \
	"ip6 and udp and dst host fd00:5::1 and dst port 6103"
run_case "ipv6 out of ip6ip6" "$S" fd00:5::1 "$C" fd00:1::1 6104 \
	"src host fd00:2::1 and dst host fd00:2::fe and ip6 proto 41" \
	"ip6 and udp and dst host fd00:1::1 and dst port 6104"

# The ip6tnl device's encapsulation limit option on every packet, limit 4.
limit_into=taken
if [ "$tunnels" = 1 ]; then limit_into=miss; fi
N=200 run_case "ipv6 into ip6tnl with encaplimit" "$C" fd00:1::1 "$S" fd00:6::1 6106 \
	"src host fd00:2::fd and dst host fd00:2::2 and ip6[6] == 60 and ip6[40] == 41 and ip6[42] == 4 and ip6[44] == 4" \
	"ip6 and udp and dst host fd00:6::1 and dst port 6106" "$limit_into"
N=200 run_case "ipv6 out of ip6tnl with encaplimit" "$S" fd00:6::1 "$C" fd00:1::1 6107 \
	"src host fd00:2::2 and dst host fd00:2::fd and ip6[6] == 60 and ip6[40] == 41 and ip6[42] == 4 and ip6[44] == 4" \
	"ip6 and udp and dst host fd00:1::1 and dst port 6107" options

# The MTU: a 1500-byte packet with DF fits the underlay but not with the
# outer header. The module must decline it (mtu), on every kernel: from
# 6.19 the flow's MTU is the underlay's and the check takes the outer
# header off (taken, it would leave 20 bytes over the underlay's MTU),
# before it is the tunnel device's. The stock path then answers with
# "fragmentation needed".
big() {
	ip netns exec "$C" python3 - <<-'EOF'
	import socket
	s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER, IP_PMTUDISC_DO
	s.bind(("10.0.1.1", 46105))
	s.sendto(b"\0" * 1472, ("10.0.5.1", 6105))
	EOF
}
declined_mtu() {
	[ "$(mstat "t['decline']['mtu']")" -gt "$1" ]
}
fp_stream_recv "$S" 10.0.5.1 6105
ip netns exec "$C" python3 "${PY[@]}" probe 10.0.1.1 10.0.5.1 6105 46105
m0=$(mstat "t['decline']['mtu']")
p0=$(mstat "t['packets']")
big
check "1500 bytes with DF into ipip: declined as mtu" busywait 30000 declined_mtu "$m0"
check "1500 bytes with DF into ipip: not taken" test "$(mstat "t['packets']")" -eq "$p0"

# A decline's order key through tun6l (above).
key_t0=$SECONDS
ip -n "$S" -batch - <<-EOF
addr add fd00:7::1/128 dev d0 nodad
addr add fd00:8::1/128 dev d0 nodad
route add fd00:1::/64 via fd00:2::fd dev s1 table 107
route add fd00:1::/64 via fd00:2::fd dev s1 table 108
EOF
ip -n "$S" -6 rule add from fd00:7::1 table 107
ip -n "$S" -6 rule add from fd00:8::1 table 108
ip -n "$R" route add fd00:7::1/128 via fd00:2::2 dev r1
ip -n "$R" route add fd00:8::1/128 via fd00:2::2 dev r1
# What of each flow has arrived: a counter where it is received.
for l in "$C ip6 saddr fd00:7::1 udp dport 6108" "$S ip6 daddr fd00:8::1 udp dport 6109"; do
	read -r ns match <<<"$l"
	ip netns exec "$ns" nft -f - <<-EOF
	table inet seen {
		chain pre { type filter hook prerouting priority -300; $match counter; }
	}
	EOF
done
seen() { fp_nft_counters "$1" chain inet seen pre; }
rx_above() { [ "$(seen "$C")" -ge "$1" ]; }
declined_options() { [ "$(fp_proc "$R" decline_options)" -ge "$1" ]; }
key_f=fd00:7::1,fd00:1::1,6108,46108
other_f=fd00:1::1,fd00:8::1,6109,46109
fp_stream_recv "$C" fd00:1::1 6108
fp_stream_recv "$S" fd00:8::1 6109
ip netns exec "$S" python3 "${PY[@]}" probe fd00:7::1 fd00:1::1 6108 46108
ip netns exec "$C" python3 "${PY[@]}" probe fd00:1::1 fd00:8::1 6109 46109
g0=$(fp_taken "$R")
echo 1 >"$hold"
ip netns exec "$S" taskset -c 0 python3 "${PY[@]}" burst 4 "$key_f,0"
ip netns exec "$C" taskset -c 0 python3 "${PY[@]}" burst 2 "$other_f,0"
check "order key through tun6l: 4 + 2 datagrams taken and held" \
	busywait 30000 fp_taken_above $((g0 + 6))
o0=$(fp_proc "$R" decline_options)
d0=$(mstat "t['drains']")
c0=$(seen "$C")
t0=$(seen "$S")
ip -n "$S" route replace fd00:1::/64 dev tun6l table 107
ip netns exec "$S" taskset -c 0 python3 "${PY[@]}" burst 1 "$key_f,4"
check "order key through tun6l: datagram 4 declined (options)" \
	busywait 30000 declined_options $((o0 + 1))
# What left first has reached C once a packet has; what the drain sent
# with it, within a few seconds more (not waited for to the end when it
# does not come: 5 is the most C can get while the hold lasts).
busywait 30000 rx_above $((c0 + 1)) || true
busywait 5000 rx_above $((c0 + 5)) || true
c1=$(seen "$C")
t1=$(seen "$S")
d1=$(mstat "t['drains']")
echo 0 >"$hold"
echo "INFO: order key through tun6l: while held C got $((c1 - c0)) of its flow, S $((t1 - t0)) of the other, drains +$((d1 - d0))"
check "order key through tun6l: the flow's 4 held datagrams and the declined one reached C while held, in one drain" \
	test $((c1 - c0)) -eq 5 -a $((d1 - d0)) -eq 1
check "order key through tun6l: the other flow's 2 stayed held" test $((t1 - t0)) -eq 0
ip netns exec "$S" python3 "${PY[@]}" end "$key_f,0"
ip netns exec "$C" python3 "${PY[@]}" end "$other_f,0"
check "order key through tun6l: C got 0..4 in order" fp_stream_verdict 6108 5
check "order key through tun6l: S got the other flow's 2 after the hold" fp_stream_verdict 6109 2
echo "INFO: order key through tun6l: $((SECONDS - key_t0)) s"

echo "INFO: module: $(mstat '{k: t[k] for k in ("packets", "bulks", "taken_encap", "taken_xmit")}')"
fp_genl "$R" detach inet fp ft
exit "$ret"
