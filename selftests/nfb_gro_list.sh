#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fraglist GRO (ethtool -K DEV rx-gro-list on) hands the routers trains of
# UDP packets merged into one skb each. The module takes such a train
# apart after one lookup and forwards every packet of it as a packet of
# its own, in one bulk (fastpath.c, nfb_unbundle()); it used to take the
# train whole and leave the cutting to skb_segment_list() at transmit,
# which, as the stock path does, leaves every packet but the first with the
# TTL it arrived with.
#
# The benchmark's topology (tools/testing/lib/topology.sh: sunset - west - east
# - sunrise, two routers, the flowtable with nf_flow_bulk attached on
# both, fraglist GRO on their receive devices w0 and e0) and its generator
# and sink (tools/bench/kmod): west masquerades what leaves through w1, so
# that every packet of a train needs its own NAT and checksum update.
# For IPv4 and IPv6, trains of 1, 4 flows in turn (8 packets each), in
# bursts of 32 so that GRO merges them:
#   - every packet arrives, in order, each with TTL / hop limit 62 (two
#     routers), a right IPv4 header checksum and a right UDP checksum (the
#     sink's verify mode); the last one from west's masquerade address;
#   - the module took at least 99 % of the packets at both routers,
#     counted per packet (taken whole, a train counted once);
#   - its bulks average at least 8 packets.
# A train the module cannot take apart (its packets shared with a clone
# that a packet socket on the receive device holds) is taken whole, as
# before, and every packet still arrives, in order.
# nfb-timeout: 600
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tools/testing/lib/topology.sh
source "$NFB_LIB/topology.sh"

nfb_require_tool ip nft ethtool jq python3

count=3200
sock_pid=
tmp=$(mktemp -d)

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	[ -z "$sock_pid" ] || kill "$sock_pid" 2>/dev/null || true
	rm -rf "$tmp"
	bench_stop
	if nfb_module_loaded; then nfb_unload_module; fi
}

nfb_load_module
bench_start
trap cleanup EXIT

topo_create veth
topo_gro list
topo_flowtable_add early_ingress
ip netns exec "$NS_WEST" nft -f - <<'EOF'
table inet nfb_nat {
	chain post {
		type nat hook postrouting priority srcnat;
		oifname "w1" masquerade
	}
}
EOF
in_ns "$NS_SUNSET" ping -q -c 1 -W 5 "$TOPO_DST4" >/dev/null
in_ns "$NS_SUNSET" ping -q -c 1 -W 5 "$TOPO_DST6" >/dev/null

# taken NS: packets the module took in NS (flowbulk -j stats), and bulks.
taken() {
	in_ns "$1" "$repo/build/userspace/flowbulk" -j stats |
		jq -r '.stats.total | "\(.packets) \(.bulks)"'
}

# sink_read: the sink's counters once it has the $count packets of the
# last generator run, or after 10 s. The generator's write returns once it
# has sent them; the routers' NAPI polls may still be at work (a softirq
# that runs out of budget goes on in ksoftirqd), more so on a busy host:
# a make check whose host ran two more guests read 3167 of 3200.
sink_read() {
	local first
	first=$(sed -n 's/^sink_packets=//p' "$ctl")
	busywait 10000 grep -qx "sink_packets=$count" "$ctl" || true
	ctl_read
	[ "$first" = "$count" ] || {
		echo "# the sink had $first of $count when the generator returned, then ${ctl_val[sink_packets]}"
		echo "# drops on the way:$(topo_drops)"
	}
}

# run FAMILY FLOWS TRAIN: one generator run; checks what the sink saw.
run() {
	local family=$1 flows=$2 train=$3 src dst masq dmac what i
	local wp0 wb0 ep0 eb0 wp1 wb1 ep1 eb1 taken_all bulks
	what="IPv$family, $flows flow(s), trains of $train"
	if [ "$family" = 6 ]; then
		src=fd00:1::1 dst=$TOPO_DST6 masq=fd00:2::1
	else
		src=10.0.1.1 dst=$TOPO_DST4 masq=10.0.2.1
	fi
	dmac=$(in_ns "$NS_WEST" cat /sys/class/net/w0/address)
	gen() { # gen COUNT [TRAIN]
		echo "gen dev=s0 dmac=$dmac src=$src dst=$dst flows=$flows count=$1 burst=32 train=${2:-$train}" |
			in_ns "$NS_SUNSET" tee "$ctl" >/dev/null
	}
	echo "sink dev=r0 verify=1" | in_ns "$NS_SUNRISE" tee "$ctl" >/dev/null
	# Into the flowtables, every flow (a packet each: trains of 1): a UDP
	# flow is offloaded once its conntrack entry is confirmed, by a later
	# packet. A flow left out would start on the slow path, which
	# forwards a train whole.
	for i in 1 2 3; do gen "$flows" 1; done
	read -r wp0 wb0 < <(taken "$NS_WEST")
	read -r ep0 eb0 < <(taken "$NS_EAST")
	echo reset >"$ctl"
	gen "$count"
	sink_read
	read -r wp1 wb1 < <(taken "$NS_WEST")
	read -r ep1 eb1 < <(taken "$NS_EAST")
	taken_all=$((wp1 - wp0 + ep1 - ep0))
	bulks=$((wb1 - wb0 + eb1 - eb0))
	echo "# $what: sent ${ctl_val[gen_sent]}, received ${ctl_val[sink_packets]}," \
		"reordered ${ctl_val[sink_reordered]}, TTL ${ctl_val[sink_ttl_min]}..${ctl_val[sink_ttl_max]}," \
		"bad checksums ${ctl_val[sink_bad_csum]}, source ${ctl_val[sink_src]:-}; module took $taken_all in $bulks bulks"
	check "$what: masqueraded, from $masq" test "${ctl_val[sink_src]:-}" = "$masq"
	check "$what: every packet arrives, in order, TTL 62, checksums right" \
		delivered_right 62
	check "$what: the module took >= 99 % of the packets at both routers, per packet" \
		test $((taken_all * 100)) -ge $((2 * count * 99))
	check "$what: bulks of >= 8 packets on average" \
		test $((bulks > 0 ? taken_all / bulks : 0)) -ge 8
}

# delivered_right [TTL]: the last run's $count packets all arrived, in
# order, with TTL (any, if not given) and right checksums.
delivered_right() {
	[ "${ctl_val[gen_sent]}" = "$count" ] && [ "${ctl_val[sink_packets]}" = "$count" ] &&
		[ "${ctl_val[sink_reordered]}" = 0 ] && [ "${ctl_val[sink_bad_csum]}" = 0 ] &&
		{ [ -z "${1:-}" ] ||
			{ [ "${ctl_val[sink_ttl_min]}" = "$1" ] && [ "${ctl_val[sink_ttl_max]}" = "$1" ]; }; }
}

for family in 4 6; do
	run "$family" 1 1
	run "$family" 4 8
done

# A packet socket on w0 (ETH_P_ALL: a tap, before the ingress hooks) that
# does not read: each train's head it is
# handed is cloned and waits in its queue, and its packets are shared
# with the clone, so west cannot take the train apart: it takes it whole,
# as the stock path forwards it (east, without a socket, takes it apart
# again). Every packet still arrives, in order, checksums right.
in_ns "$NS_WEST" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.setsockopt(socket.SOL_SOCKET, 33, 1 << 26)  # SO_RCVBUFFORCE: hold every clone
s.bind(("w0", 0))
open(sys.argv[1], "w").close()
time.sleep(600)' "$tmp/bound" &
sock_pid=$!
busywait 20000 test -e "$tmp/bound"
run_whole() {
	local dmac wp0 wb0 wp1 wb1
	dmac=$(in_ns "$NS_WEST" cat /sys/class/net/w0/address)
	echo "sink dev=r0 verify=1" | in_ns "$NS_SUNRISE" tee "$ctl" >/dev/null
	read -r wp0 wb0 < <(taken "$NS_WEST")
	echo "gen dev=s0 dmac=$dmac src=10.0.1.1 dst=$TOPO_DST4 flows=1 count=$count burst=32" |
		in_ns "$NS_SUNSET" tee "$ctl" >/dev/null
	sink_read
	read -r wp1 wb1 < <(taken "$NS_WEST")
	west_taken=$((wp1 - wp0))
	echo "# packet socket on w0: received ${ctl_val[sink_packets]}, reordered ${ctl_val[sink_reordered]}," \
		"TTL ${ctl_val[sink_ttl_min]}..${ctl_val[sink_ttl_max]}; west took $west_taken"
}
west_taken=0
run_whole
check "packet socket on w0: every packet arrives, in order, checksums right" delivered_right
check "packet socket on w0: west took the trains whole (fewer than half the packets counted)" \
	test "$west_taken" -gt 0 -a "$west_taken" -lt $((count / 2))

exit "$ret"
