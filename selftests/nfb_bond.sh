#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A bond or a team as the router's output (second review, finding 1).
#
#   C: c0 10.0.1.1 fd00:1::1
#   R: r0 10.0.1.254 fd00:1::fe
#      o0 10.0.2.254 fd00:2::fe   (bond or team of o0a, o0b)
#      br0 10.0.3.254, bridge port o1 (bond or team of o1a, o1b)
#   S: s0 10.0.2.1 fd00:2::1      (bond of p0a, p0b: peers of o0a, o0b)
#      s1 10.0.3.1                (bond of p1a, p1b: peers of o1a, o1b)
# Flowtable on r0 o0 o1. R's masters, in turn: bond balance-xor, bond
# 802.3ad (S's bonds 802.3ad too, LACP negotiated before traffic), team
# loadbalance, and a single-queue bond balance-xor (numtxqueues 1).
#
# bond, team (and net_failover, netvsc) have an ndo_select_queue() that
# writes qdisc_skb_cb(skb)->slave_dev_queue_mapping, bytes 4..5 of
# skb->cb, and their ndo_start_xmit() reads it back. The module picks the
# transmit queue while its own control block is still in use: with the
# next hop in bytes 0..15 the pick corrupted every IPv6 next hop (ND for
# a wrong address, the stream lost) and every cached destination MAC of a
# bridged (FLOW_OFFLOAD_XMIT_DIRECT) flow, and the clear before transmit
# wiped the mapping the master reads. IPv4 next hops (bytes 0..3) were
# spared. For each master and each of IPv4 (NEIGH), IPv6 (NEIGH) and IPv4
# through the bridge (DIRECT): every datagram arrives, intact and in order,
# and the module took at least 99 % of the stream with that transmit type.
#
# The mapping itself: c0 sends from transmit queue 2 (XPS), and the packet
# reaches r0 with a queue_mapping that says so; bond_select_queue() and
# team_select_queue() save it, and the master hands the packet to its
# slave with it (bond_dev_queue_xmit()). A kprobe on __dev_queue_xmit()
# records the queue_mapping the slaves get: with the module the stream
# must get the one the stock flowtable's path gives it (measured first, on
# a stream the module does not see; it must not be 0, or the check would
# prove nothing), not the 0 a cleared control block leaves.
#
# A single-queue master gets no ndo_select_queue() call (the core picks
# queue 0 itself) and hands its slaves whatever the control block holds
# at that byte: with the module it must be what the stock path leaves
# there too. On 7.x, where the master's slot lies inside the module's own
# control block, the module keeps it aside before the pick and puts it
# back before the transmit; its inline pick for single-queue devices once
# skipped the keeping, and the slaves got the bytes of the module's own
# state instead (fe8f974).
# nfb-timeout: 1200
# nfb-long
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 teamnl taskset pahole jq

PY=("$NFB_LIB/nfb_encap.py")
N=200
TRACE=/sys/kernel/tracing

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	qm_probe off
	cleanup_all_ns
	fp_cleanup_tmp
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

# master KIND NS NAME SLAVE...: a bond (xor, lacp) or team of SLAVEs.
master() {
	local kind=$1 ns=$2 name=$3 s mac
	shift 3
	case "$kind" in
	xor)
		ip -n "$ns" link add "$name" type bond mode balance-xor \
			xmit_hash_policy layer3+4
		;;
	xor1)
		ip -n "$ns" link add "$name" numtxqueues 1 type bond mode balance-xor \
			xmit_hash_policy layer3+4
		;;
	lacp)
		ip -n "$ns" link add "$name" type bond mode 802.3ad lacp_rate fast \
			xmit_hash_policy layer3+4
		;;
	team)
		ip -n "$ns" link add "$name" type team
		ip netns exec "$ns" teamnl "$name" setoption mode loadbalance
		# The team driver leaves the ports' addresses to teamd: as
		# teamd does, each port takes the team's, or frames to the
		# team's address arrive as PACKET_OTHERHOST.
		mac=$(ip -n "$ns" -j link show "$name" | jq -r '.[0].address')
		for s in "$@"; do
			ip -n "$ns" link set "$s" address "$mac"
		done
		;;
	esac
	for s in "$@"; do
		ip -n "$ns" link set "$s" master "$name"
		ip -n "$ns" link set "$s" up
	done
	ip -n "$ns" link set "$name" up
}

# lacp_ready NS BOND: the bond's aggregator has a partner.
lacp_ready() {
	ip netns exec "$1" cat "/proc/net/bonding/$2" 2>/dev/null |
		grep -q 'Partner Mac Address: [0-9a-f:]*[1-9a-f]'
}

topology() {
	local kind=$1 peer=xor
	[ "$kind" != lacp ] || peer=lacp
	setup_ns C R S
	ip link add c0 netns "$C" numtxqueues 4 type veth peer name r0 \
		netns "$R" numrxqueues 4
	for i in 0a 0b 1a 1b; do
		ip link add "o$i" netns "$R" type veth peer name "p$i" netns "$S"
	done
	master "$kind" "$R" o0 o0a o0b
	master "$kind" "$R" o1 o1a o1b
	master "$peer" "$S" s0 p0a p0b
	master "$peer" "$S" s1 p1a p1b
	ip -n "$R" -b - <<-EOF
	link add br0 type bridge
	link set o1 master br0
	link set br0 up
	link set r0 up
	addr add 10.0.1.254/24 dev r0
	addr add fd00:1::fe/64 dev r0 nodad
	addr add 10.0.2.254/24 dev o0
	addr add fd00:2::fe/64 dev o0 nodad
	addr add 10.0.3.254/24 dev br0
	EOF
	ip -n "$C" -b - <<-EOF
	link set c0 up
	addr add 10.0.1.1/24 dev c0
	addr add fd00:1::1/64 dev c0 nodad
	route add default via 10.0.1.254
	route add default via fd00:1::fe
	EOF
	ip -n "$S" -b - <<-EOF
	addr add 10.0.2.1/24 dev s0
	addr add fd00:2::1/64 dev s0 nodad
	addr add 10.0.3.1/24 dev s1
	route add default via 10.0.2.254
	route add default via fd00:2::fe
	rule add from 10.0.3.1 table 3
	route add default via 10.0.3.254 table 3
	EOF
	ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
	ip netns exec "$R" sysctl -qw net.ipv6.conf.all.forwarding=1
	# XPS on c0: the senders run on CPU 0 (taskset), and their packets
	# leave on queue 2 (a mask of CPU 0 only: make check runs this test
	# in a 1-vCPU guest, where a mask naming CPU 1 is refused).
	ip netns exec "$C" sh -c 'echo 1 >/sys/class/net/c0/queues/tx-2/xps_cpus'
	fp_ruleset -d "r0 o0 o1" -l udp
	if [ "$kind" = lacp ]; then
		if ! busywait 60000 lacp_ready "$R" o0 || ! busywait 60000 lacp_ready "$R" o1; then
			log_fail "$kind: no LACP partner after 60 s"
			return 1
		fi
	fi
	local a
	for a in 10.0.2.1 fd00:2::1 10.0.3.1; do
		busywait 60000 ip netns exec "$C" ping -c1 -W1 -q "$a" >/dev/null ||
			{ log_fail "$kind: topology: no connectivity to $a"; return 1; }
	done
}

# qm_probe on|off: a kprobe on __dev_queue_xmit() recording the device
# name and skb->queue_mapping (offsets from the running kernel's BTF).
qm_probe() {
	if [ "$1" = on ]; then
		local qm dev name
		qm=$(pahole -C sk_buff /sys/kernel/btf/vmlinux 2>/dev/null |
			sed -n 's|.*__u16 *queue_mapping; */\* *\([0-9]*\) .*|\1|p' | head -n 1)
		dev=$(pahole -C sk_buff /sys/kernel/btf/vmlinux 2>/dev/null |
			sed -n 's|.*struct net_device \* *dev; */\* *\([0-9]*\) .*|\1|p' | head -n 1)
		# Not at 0 since net_device's cacheline groups (6.8).
		name=$(pahole -C net_device /sys/kernel/btf/vmlinux 2>/dev/null |
			sed -n 's|.*char *name\[16\]; */\* *\([0-9]*\) .*|\1|p' | head -n 1)
		if [ -z "$qm" ] || [ -z "$dev" ] || [ -z "$name" ]; then
			log_fail "no offsets of sk_buff.queue_mapping, sk_buff.dev, net_device.name in the kernel's BTF"
			exit "$ksft_fail"
		fi
		[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE"
		echo 0 >"$TRACE/options/record-cmd"
		echo "p:nfb_bond/qx __dev_queue_xmit qm=+$qm(%di):u16 dev=+$name(+$dev(%di)):string" \
			>>"$TRACE/kprobe_events"
		: >"$TRACE/trace"
		echo 1 >"$TRACE/events/nfb_bond/qx/enable"
	elif [ -d "$TRACE/events/nfb_bond" ]; then
		echo 0 >"$TRACE/events/nfb_bond/qx/enable"
		echo "-:nfb_bond/qx" >>"$TRACE/kprobe_events"
	fi
}

# qm_top: the queue_mapping the slaves o0a / o0b were handed most often
# since the last call, and how often: "QM COUNT".
qm_top() {
	grep -o 'qm=[0-9]* dev="o0[ab]"' "$TRACE/trace" | sed 's/qm=//; s/ dev=.*//' |
		sort | uniq -c | sort -rn | awk 'NR == 1 { print $2, $1 } END { if (!NR) print "none 0" }'
	: >"$TRACE/trace"
}

# stream KIND NAME SRC DST PORT XMIT: N datagrams from C, verdict and the
# module's share of them.
stream() {
	local kind=$1 name=$2 src=$3 dst=$4 port=$5 xm=$6 x0 x1
	fp_stream_recv "$S" "$dst" "$port"
	x0=$(fp_stat "$R" "t['taken_xmit']['$xm']")
	fp_stream "$kind: $name" "$C" "$src" "$dst" "$port" "$N" || return
	x1=$(fp_stat "$R" "t['taken_xmit']['$xm']")
	check "$kind: $name: >= 99 % taken by the module as $xm transmit ($((x1 - x0)))" \
		test $((x1 - x0)) -ge $((N * 99 / 100))
}

nfb_load_module
fp_tmpdir
[ "$(uname -m)" = x86_64 ] || nfb_cannot_run "the probe reads x86-64 registers"
for kind in xor lacp team xor1; do
	if ! topology "$kind"; then
		ret=1
		cleanup_all_ns
		continue
	fi
	# The stock flowtable alone first: the mapping its path hands on.
	qm_probe on
	fp_stream_recv "$S" 10.0.2.1 6000
	ip netns exec "$C" taskset -c 0 python3 "${PY[@]}" send 10.0.1.1 10.0.2.1 6000 50 ||
		true
	check "$kind: stock flowtable: 50 datagrams arrived" fp_stream_verdict 6000 50
	read -r sqm scount < <(qm_top)
	echo "INFO: $kind: stock: slaves got queue_mapping $sqm ($scount times)"
	fp_genl "$R" attach inet fp ft
	stream "$kind" "ipv4 neigh" 10.0.1.1 10.0.2.1 6001 neigh
	read -r mqm mcount < <(qm_top)
	qm_probe off
	echo "INFO: $kind: module: slaves got queue_mapping $mqm ($mcount times)"
	if [ "$kind" = xor1 ]; then
		check "$kind: the slaves get the stream with the stock path's queue_mapping ($sqm)" \
			test "$sqm" != none -a "$mqm" = "$sqm" -a "$mcount" -ge $((N * 99 / 100))
	else
		check "$kind: the slaves get the stream with the stock path's queue_mapping ($sqm, not 0)" \
			test "$sqm" != 0 -a "$sqm" != none -a "$mqm" = "$sqm" -a "$mcount" -ge $((N * 99 / 100))
	fi
	stream "$kind" "ipv6 neigh" fd00:1::1 fd00:2::1 6002 neigh
	stream "$kind" "ipv4 bridge port (direct)" 10.0.1.1 10.0.3.1 6003 direct
	fp_genl "$R" detach inet fp ft
	cleanup_all_ns
done

exit "$ret"
