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
#
# The pick on the built frame (xor only, vlan_pick() below): a stream
# into a VLAN device on the bond, the bulk to the bond with the tag pushed
# by the module: bond_select_queue() must see the frame as the stock path
# shows it.
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
	pick_probe off
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

# The layouts of sk_buff and net_device in the running kernel's BTF, read
# once: pahole takes seconds under TCG, and the probes below are set up for
# every master.
btf_sk_buff=$(pahole -C sk_buff /sys/kernel/btf/vmlinux 2>/dev/null) || btf_sk_buff=
btf_net_device=$(pahole -C net_device /sys/kernel/btf/vmlinux 2>/dev/null) || btf_net_device=

# qm_probe on|off: a kprobe on __dev_queue_xmit() recording the device
# name and skb->queue_mapping (offsets from the running kernel's BTF).
qm_probe() {
	if [ "$1" = on ]; then
		local qm dev name
		qm=$(sed -n 's|.*__u16 *queue_mapping; */\* *\([0-9]*\) .*|\1|p' <<<"$btf_sk_buff" | head -n 1)
		dev=$(sed -n 's|.*struct net_device \* *dev; */\* *\([0-9]*\) .*|\1|p' <<<"$btf_sk_buff" | head -n 1)
		# Not at 0 since net_device's cacheline groups (6.8).
		name=$(sed -n 's|.*char *name\[16\]; */\* *\([0-9]*\) .*|\1|p' <<<"$btf_net_device" | head -n 1)
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
	elif [ -d "$TRACE/events/nfb_bond/qx" ]; then
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

# pick_probe on|off: a kprobe on bond_select_queue() recording, for the
# master it is asked for, what the pick sees of the frame: whether
# skb->data is at the MAC header (head + mac_header), the two bytes at
# data + 12 (the ethertype there, little-endian: 0x0008 for IPv4) and
# skb->vlan_tci. Offsets from the running kernel's BTF.
pick_probe() {
	if [ "$1" = on ]; then
		local data head mh tci name
		data=$(sed -n 's|.*unsigned char \* *data; */\* *\([0-9]*\) .*|\1|p' <<<"$btf_sk_buff" | head -n 1)
		head=$(sed -n 's|.*unsigned char \* *head; */\* *\([0-9]*\) .*|\1|p' <<<"$btf_sk_buff" | head -n 1)
		mh=$(sed -n 's|.*__u16 *mac_header; */\* *\([0-9]*\) .*|\1|p' <<<"$btf_sk_buff" | head -n 1)
		tci=$(sed -n 's|.*__u16 *vlan_tci; */\* *\([0-9]*\) .*|\1|p' <<<"$btf_sk_buff" | head -n 1)
		name=$(sed -n 's|.*char *name\[16\]; */\* *\([0-9]*\) .*|\1|p' <<<"$btf_net_device" | head -n 1)
		if [ -z "$data" ] || [ -z "$head" ] || [ -z "$mh" ] || [ -z "$tci" ] || [ -z "$name" ]; then
			log_fail "no offsets of sk_buff's data, head, mac_header, vlan_tci, net_device.name in the kernel's BTF"
			exit "$ksft_fail"
		fi
		[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE"
		echo 0 >"$TRACE/options/record-cmd"
		echo "p:nfb_bond/pick bond_select_queue dev=+$name(%di):string d=+$data(%si):x64 h=+$head(%si):x64 mh=+$mh(%si):u16 et=+12(+$data(%si)):x16 tci=+$tci(%si):u16" \
			>>"$TRACE/kprobe_events"
		: >"$TRACE/trace"
		echo 1 >"$TRACE/events/nfb_bond/pick/enable"
	elif [ -d "$TRACE/events/nfb_bond/pick" ]; then
		echo 0 >"$TRACE/events/nfb_bond/pick/enable"
		echo "-:nfb_bond/pick" >>"$TRACE/kprobe_events"
	fi
}

# pick_top: what bond_select_queue() saw most often for o0 since the last
# call, "MAC-AT-DATA ETHERTYPE TCI COUNT" (MAC-AT-DATA: 1 when skb->data
# was at the MAC header), then the number of picks that saw skb->data
# elsewhere: "... BAD".
pick_top() {
	local d h mh et tci
	sed -n 's/.* dev="o0" d=\(0x[0-9a-f]*\) h=\(0x[0-9a-f]*\) mh=\([0-9]*\) et=\(0x[0-9a-f]*\) tci=\([0-9]*\).*/\1 \2 \3 \4 \5/p' \
		"$TRACE/trace" | while read -r d h mh et tci; do
		echo "$((d - h == mh ? 1 : 0)) $et $((tci & 0xfff))"
	done | sort | uniq -c | sort -rn |
		awk '$2 != 1 { bad += $1 } NR == 1 { top = $2 " " $3 " " $4 " " $1 }
			END { if (!NR) top = "none none none 0"; print top, bad + 0 }'
	: >"$TRACE/trace"
}

# vlan_pick: the queue pick on the built frame (finding 6 of issue 40).
# A VLAN device o0.10 on the bond o0 (S: s0.10 on s0), 10.0.4.0/24
# through it: the module sends to the bond itself (before 6.19 standing in
# for o0.10, from 6.19 as the stock hook does) and asks its
# bond_select_queue() for the queue. A device's
# pick may read the frame (DCB picks read the tag, mac80211 the receiver
# address at skb->data), so it must get the frame the stock path gives it
# through o0.10: skb->data at the Ethernet header, the network protocol
# there, the tag in vlan_tci. A kprobe on bond_select_queue() records
# what each pick on o0 sees, with the module (its stream taken) and with
# the module detached (the stock flowtable's path). Picked before the
# header is pushed, skb->data would be the IP header. Leaves the module
# detached.
vlan_pick() {
	local smq scount sbad mmq mcount mbad
	local t0=$SECONDS
	ip -n "$R" link add link o0 name o0.10 type vlan id 10
	ip -n "$R" addr add 10.0.4.254/24 dev o0.10
	ip -n "$R" link set o0.10 up
	ip -n "$S" -b - <<-EOF
	link add link s0 name s0.10 type vlan id 10
	addr add 10.0.4.1/24 dev s0.10
	link set s0.10 up
	rule add from 10.0.4.1 table 4
	route add default via 10.0.4.254 table 4
	EOF
	busywait 60000 ip netns exec "$C" ping -c1 -W1 -q 10.0.4.1 >/dev/null ||
		{ log_fail "vlan: no connectivity to 10.0.4.1"; return; }
	pick_probe on
	stream "$kind" "ipv4 into a VLAN on the bond" 10.0.1.1 10.0.4.1 6004 neigh
	read -r mmq mcount mbad < <(pick_top | awk '{ print $1 "/" $2 "/" $3, $4, $5 }')
	fp_genl "$R" detach inet fp ft
	fp_stream_recv "$S" 10.0.4.1 6005
	ip netns exec "$C" taskset -c 0 python3 "${PY[@]}" send 10.0.1.1 10.0.4.1 6005 50 ||
		true
	check "$kind: vlan: stock flowtable: 50 datagrams arrived" fp_stream_verdict 6005 50
	read -r smq scount sbad < <(pick_top | awk '{ print $1 "/" $2 "/" $3, $4, $5 }')
	pick_probe off
	echo "INFO: $kind: vlan: picks on o0 (MAC header at data / bytes 12..13 / VLAN id): stock $smq $scount times ($sbad elsewhere), module $mmq $mcount times ($mbad elsewhere)"
	check "$kind: vlan: stock: the pick sees the frame, the tag in vlan_tci ($smq, $scount times)" \
		test "${smq%%/*}" = 1 -a "${smq##*/}" = 10 -a "$scount" -ge 50 -a "$sbad" = 0
	check "$kind: vlan: module: the pick sees it as the stock path's ($mmq, $mcount times, $mbad elsewhere)" \
		test "$mmq" = "$smq" -a "$mcount" -ge $((N * 99 / 100)) -a "$mbad" = 0
	echo "INFO: $kind: vlan: $((SECONDS - t0)) s"
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
# NFB_BOND_KINDS: the masters to run, a subset of "xor lacp team xor1" (a
# quicker run to watch a deliberately broken module fail).
for kind in ${NFB_BOND_KINDS:-xor lacp team xor1}; do
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
	if [ "$kind" = xor ]; then
		vlan_pick
	else
		fp_genl "$R" detach inet fp ft
	fi
	cleanup_all_ns
done

exit "$ret"
