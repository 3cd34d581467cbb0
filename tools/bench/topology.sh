#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark topology of the upstream RFC, in four network namespaces:
#
#   sunset          west                east              sunrise
#   [s0] ------ [w0]    [w1] ------ [e0]    [e1] ------ [r0]
#    .1   10.0.1.0/24  .2 .1  10.0.2.0/24  .2 .1  10.0.3.0/24  .2
#         fd00:1::/64          fd00:2::/64          fd00:3::/64
#
# west and east are routers; the generator sends from sunset to sunrise.
# Links are veth pairs, or the virtio-net pairs of tools/vm/run --nics 3
# (pair 0: sunset-west, 1: west-east, 2: east-sunrise) for the NIC-driver path.
# Sourced by tools/bench/guest.sh and by selftests.

NS_SUNSET=nfb-sunset
NS_WEST=nfb-west
NS_EAST=nfb-east
NS_SUNRISE=nfb-sunrise
TOPO_ALL_NS=("$NS_SUNSET" "$NS_WEST" "$NS_EAST" "$NS_SUNRISE")
# shellcheck disable=SC2034 # read by the scripts that source this file
TOPO_DST4=10.0.3.2
# shellcheck disable=SC2034
TOPO_DST6=fd00:3::2

in_ns() { ip netns exec "$@"; }

# bench_start: load the generator/sink module and find its control file
# (sets ctl); on exit the topology and the module go away. ip netns exec
# mounts a fresh /sys, without debugfs: the file lives in a mount of our own.
bench_start() {
	local debugfs=/run/nfb-debugfs
	mkdir -p "$debugfs"
	mountpoint -q "$debugfs" || mount -t debugfs debugfs "$debugfs"
	trap bench_stop EXIT
	insmod "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/kmod/$(uname -r)/bench/nfb_bench.ko"
	ctl=$debugfs/nfb_bench/ctl
}

bench_stop() {
	topo_destroy
	rmmod nfb_bench 2>/dev/null
	return 0
}

# ctl_read: the generator's and sink's counters (global to the module, so
# read from here, without a namespace) into the array ctl_val; no process
# is started, which matters in a TCG guest.
# shellcheck disable=SC2034 # read by the scripts that source this file
declare -A ctl_val
ctl_read() {
	local line
	ctl_val=()
	while IFS= read -r line; do
		# shellcheck disable=SC2034 # read by the scripts that source this file
		ctl_val[${line%%=*}]=${line#*=}
	done <"$ctl"
}

topo_destroy() {
	local ns
	for ns in "${TOPO_ALL_NS[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
	return 0
}

# topo_link KIND PAIR NS_A DEV_A NS_B DEV_B
topo_link() {
	local kind=$1 pair=$2 nsa=$3 deva=$4 nsb=$5 devb=$6 a b
	if [ "$kind" = veth ]; then
		ip link add "$deva" netns "$nsa" type veth peer name "$devb" netns "$nsb"
	else
		a=$(tools/vm/nic "$pair" 1)
		b=$(tools/vm/nic "$pair" 2)
		ip link set "$a" netns "$nsa"
		ip link set "$b" netns "$nsb"
		ip -n "$nsa" link set "$a" name "$deva"
		ip -n "$nsb" link set "$b" name "$devb"
	fi
	ip -n "$nsa" link set "$deva" up
	ip -n "$nsb" link set "$devb" up
}

topo_addr() {
	local ns=$1 dev=$2 net=$3 host=$4
	ip -n "$ns" addr add "10.0.$net.$host/24" dev "$dev"
	ip -n "$ns" addr add "fd00:$net::$host/64" dev "$dev" nodad
}

# topo_create veth|virtio
topo_create() {
	local kind=$1 ns
	topo_destroy
	for ns in "${TOPO_ALL_NS[@]}"; do
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
			net.ipv6.conf.default.accept_dad=0 net.ipv4.conf.all.rp_filter=0 \
			net.ipv4.conf.default.rp_filter=0
	done
	for ns in "$NS_WEST" "$NS_EAST"; do
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 \
			net.ipv6.conf.all.forwarding=1
	done
	topo_link "$kind" 0 "$NS_SUNSET" s0 "$NS_WEST" w0
	topo_link "$kind" 1 "$NS_WEST" w1 "$NS_EAST" e0
	topo_link "$kind" 2 "$NS_EAST" e1 "$NS_SUNRISE" r0
	topo_addr "$NS_SUNSET" s0 1 1
	topo_addr "$NS_WEST" w0 1 2
	topo_addr "$NS_WEST" w1 2 1
	topo_addr "$NS_EAST" e0 2 2
	topo_addr "$NS_EAST" e1 3 1
	topo_addr "$NS_SUNRISE" r0 3 2
	ip -n "$NS_SUNSET" route add default via 10.0.1.2
	ip -n "$NS_SUNSET" -6 route add default via fd00:1::2
	ip -n "$NS_WEST" route add 10.0.3.0/24 via 10.0.2.2
	ip -n "$NS_WEST" -6 route add fd00:3::/64 via fd00:2::2
	ip -n "$NS_EAST" route add 10.0.1.0/24 via 10.0.2.1
	ip -n "$NS_EAST" -6 route add fd00:1::/64 via fd00:2::1
	ip -n "$NS_SUNRISE" route add default via 10.0.3.1
	ip -n "$NS_SUNRISE" -6 route add default via fd00:3::1
	topo_neigh_permanent
	# A dummy device in sunset: the "generator alone" baseline sends there.
	ip -n "$NS_SUNSET" link add d0 type dummy
	ip -n "$NS_SUNSET" link set d0 up
}

# Permanent neighbour entries on every link, both ways. Forwarded UDP never
# confirms a neighbour, so a dynamic entry cycles reachable -> stale ->
# delay -> probe, and each state sends packets down a different output path
# (cached header, or neigh_resolve_output): the cost of a run would depend
# on when it ran. Every configuration gets the same entries.
topo_neigh_permanent() {
	local link nsa deva neta nsb devb netb maca macb
	for link in "$NS_SUNSET s0 1.1 $NS_WEST w0 1.2" "$NS_WEST w1 2.1 $NS_EAST e0 2.2" \
		"$NS_EAST e1 3.1 $NS_SUNRISE r0 3.2"; do
		read -r nsa deva neta nsb devb netb <<<"$link"
		maca=$(ip netns exec "$nsa" cat "/sys/class/net/$deva/address")
		macb=$(ip netns exec "$nsb" cat "/sys/class/net/$devb/address")
		ip -n "$nsa" neigh replace "10.0.$netb" lladdr "$macb" dev "$deva" nud permanent
		ip -n "$nsb" neigh replace "10.0.$neta" lladdr "$maca" dev "$devb" nud permanent
		ip -n "$nsa" neigh replace "fd00:${netb%.*}::${netb#*.}" lladdr "$macb" \
			dev "$deva" nud permanent
		ip -n "$nsb" neigh replace "fd00:${neta%.*}::${neta#*.}" lladdr "$maca" \
			dev "$devb" nud permanent
	done
}

# topo_gro on|off: veth receives in NAPI mode (GRO on, and TSO off on the
# sending peer so that nothing is aggregated on the way) or through the
# per-CPU backlog (GRO off).
topo_gro() {
	local mode=$1 ns dev
	for nd in "$NS_SUNSET:s0" "$NS_WEST:w0" "$NS_WEST:w1" "$NS_EAST:e0" \
		"$NS_EAST:e1" "$NS_SUNRISE:r0"; do
		ns=${nd%%:*}
		dev=${nd#*:}
		ip netns exec "$ns" ethtool -K "$dev" gro "$mode" >/dev/null 2>&1 || true
		ip netns exec "$ns" ethtool -K "$dev" tso off >/dev/null 2>&1 || true
	done
	return 0
}

# Program both routers the way an operator would, with flowbulk: a table,
# a flowtable on both of the router's devices, the forward chain with
# "flow add" for TCP and UDP. HOOK is ingress (the stock flowtable) or
# early_ingress (the same flowtable, created at ingress and attached to
# nf_flow_bulk in the same step). Needs build/userspace/flowbulk.
topo_flowtable_add() {
	local hook=${1:-ingress} fb nd ns in out
	fb=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/userspace/flowbulk
	for nd in "$NS_WEST:w0:w1" "$NS_EAST:e0:e1"; do
		IFS=: read -r ns in out <<<"$nd"
		ip netns exec "$ns" "$fb" table add inet nfb_bench
		ip netns exec "$ns" "$fb" flowtable add inet nfb_bench ft \
			hook "$hook" priority 0 devices "$in,$out"
		ip netns exec "$ns" "$fb" offload add inet nfb_bench ft proto all
	done
}

# Delete what topo_flowtable_add made (flowbulk also detaches the module)
# and the conntrack entries, so that the next configuration starts clean.
topo_flowtable_del() {
	local fb ns
	fb=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/userspace/flowbulk
	for ns in "$NS_WEST" "$NS_EAST"; do
		ip netns exec "$ns" "$fb" table delete inet nfb_bench >/dev/null 2>&1 || true
		ip netns exec "$ns" conntrack -F >/dev/null 2>&1 || true
	done
}
