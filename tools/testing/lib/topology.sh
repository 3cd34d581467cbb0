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
# Sourced by tools/bench/icount/guest.sh (and the other bench guest scripts) and
# by selftests/nfb_gro_list.sh.
#
# The west - east link may carry an encapsulation (topo_create's second
# argument); the other two links stay plain Ethernet:
#   vlan   802.1Q id 100: w1.100 on w1, e0.100 on e0 carry 10.0.2.0/24 and
#          fd00:2::/64 and their permanent neighbours; west pushes the tag,
#          east pops it.
#   pppoe  a kernel-mode PPPoE session on w1 - e0: east is the access
#          concentrator (nfb_pppoe.py of this directory answers discovery, east's
#          pppd joins the session it handed out), west the client (pppd);
#          pppw 10.0.2.1 in west, ppe 10.0.2.2 in east, the routes through
#          them; IPv4 only. The PPP devices are made noqueue, as every other
#          device of the path is (6.1 makes them so, 6.12 gives them its
#          default qdisc).
#   ipip   an IPIP tunnel over w1 - e0 (10.0.2.0/24 on the real devices):
#          tw in west, te in east (10.0.4.0/30), the routes between sunset's
#          and sunrise's networks through them; west pushes the outer
#          header, east pops it. IPv4 only. The tunnel devices are in the
#          flowtables too: before 6.19 a flow comes into east on te, after
#          the stack took the outer header off; from 6.19 the flowtable
#          resolves the tunnel to w1 / e0 and pops and pushes itself.
# TOPO_EGRESS_TXQ=N (veth only, default 1): the links west - east and
# east - sunrise get N transmit and receive queues, so that the routers'
# egress devices (w1, e1) can carry mq (tools/bench/icount/guest.sh --qdisc mq).
# The flowtables stay on the real devices (w0 w1, e0 e1): the stock
# flowtable resolves a route through w1.100 or pppw to w1 with the VLAN or
# PPPoE encapsulation (dev_fill_forward_path), as selftests/nfb_encap.sh and
# nfb_pppoe.sh set it up.

NS_SUNSET=nfb-sunset
NS_WEST=nfb-west
NS_EAST=nfb-east
NS_SUNRISE=nfb-sunrise
TOPO_ALL_NS=("$NS_SUNSET" "$NS_WEST" "$NS_EAST" "$NS_SUNRISE")
# shellcheck disable=SC2034 # read by the scripts that source this file
TOPO_DST4=10.0.3.2
# shellcheck disable=SC2034
TOPO_DST6=fd00:3::2
# The encapsulation of the west - east link (topo_create), the devices that
# carry its addresses, the routers' tunnel devices (added to the flowtables),
# the PPPoE session's pppd processes and scratch files.
TOPO_ENCAP=none
TOPO_TUN_W=
TOPO_TUN_E=
TOPO_EGRESS_TXQ=${TOPO_EGRESS_TXQ:-1}
TOPO_MID_W=w1
TOPO_MID_E=e0
TOPO_PIDS=()
TOPO_TMP=
# The PPPoE session id east's access concentrator hands out.
TOPO_PPPOE_SID=4660

in_ns() { ip netns exec "$@"; }

# bench_start: load the generator/sink module and find its control file
# (sets ctl); on exit the topology and the module go away. ip netns exec
# mounts a fresh /sys, without debugfs: the file lives in a mount of our own.
bench_start() {
	local debugfs=/run/nfb-debugfs
	mkdir -p "$debugfs"
	mountpoint -q "$debugfs" || mount -t debugfs debugfs "$debugfs"
	trap bench_stop EXIT
	insmod "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/build/kmod/$(uname -r)/bench/nfb_bench.ko"
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
	local ns p i
	for ns in "${TOPO_ALL_NS[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
	done
	# pppd ends its session (LCP terminate, PADT) on SIGTERM: let it, so
	# that nothing of this topology outlives it.
	for p in "${TOPO_PIDS[@]}"; do
		for ((i = 0; i < 100; i++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	TOPO_PIDS=()
	for ns in "${TOPO_ALL_NS[@]}"; do
		ip netns del "$ns" 2>/dev/null || true
	done
	if [ -n "$TOPO_TMP" ]; then
		rm -rf "$TOPO_TMP"
		TOPO_TMP=
	fi
	return 0
}

# topo_wait TENTHS CMD...: run CMD every 0.1 s until it succeeds, at most
# TENTHS times.
topo_wait() {
	local n=$1 i
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# topo_link KIND PAIR NS_A DEV_A NS_B DEV_B
topo_link() {
	local kind=$1 pair=$2 nsa=$3 deva=$4 nsb=$5 devb=$6 a b
	if [ "$kind" = veth ] && [ "$pair" != 0 ] && [ "$TOPO_EGRESS_TXQ" -gt 1 ]; then
		ip link add "$deva" netns "$nsa" numtxqueues "$TOPO_EGRESS_TXQ" \
			numrxqueues "$TOPO_EGRESS_TXQ" type veth peer name "$devb" netns "$nsb" \
			numtxqueues "$TOPO_EGRESS_TXQ" numrxqueues "$TOPO_EGRESS_TXQ"
	elif [ "$kind" = veth ]; then
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

# topo_drops: the drop counters of the line's devices, sunset to sunrise,
# for a test that lost packets to say where (a veth whose peer's ring is
# full counts the packet in its own tx_dropped).
topo_drops() {
	local nd ns dev tx rx out=
	for nd in "$NS_SUNSET s0" "$NS_WEST w0" "$NS_WEST $TOPO_MID_W" \
		"$NS_EAST $TOPO_MID_E" "$NS_EAST e1" "$NS_SUNRISE r0"; do
		read -r ns dev <<<"$nd"
		tx=$(ip netns exec "$ns" cat "/sys/class/net/$dev/statistics/tx_dropped" 2>/dev/null || echo -)
		rx=$(ip netns exec "$ns" cat "/sys/class/net/$dev/statistics/rx_dropped" 2>/dev/null || echo -)
		out+=" $dev tx_dropped $tx rx_dropped $rx,"
	done
	echo "${out%,}"
}

topo_addr() {
	local ns=$1 dev=$2 net=$3 host=$4
	ip -n "$ns" addr add "10.0.$net.$host/24" dev "$dev"
	ip -n "$ns" addr add "fd00:$net::$host/64" dev "$dev" nodad
}

# topo_create veth|virtio [none|vlan|pppoe|ipip]
topo_create() {
	local kind=$1 encap=${2:-none} ns
	topo_destroy
	TOPO_ENCAP=$encap
	TOPO_TUN_W='' TOPO_TUN_E=''
	case "$encap" in
	none) TOPO_MID_W=w1 TOPO_MID_E=e0 ;;
	ipip) TOPO_MID_W=w1 TOPO_MID_E=e0 TOPO_TUN_W=tw TOPO_TUN_E=te ;;
	vlan) TOPO_MID_W=w1.100 TOPO_MID_E=e0.100 ;;
	pppoe) TOPO_MID_W=pppw TOPO_MID_E=ppe ;;
	*) echo "topology.sh: unknown encapsulation $encap" >&2; return 2 ;;
	esac
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
	topo_addr "$NS_EAST" e1 3 1
	topo_addr "$NS_SUNRISE" r0 3 2
	ip -n "$NS_SUNSET" route add default via 10.0.1.2
	ip -n "$NS_SUNSET" -6 route add default via fd00:1::2
	case "$encap" in
	none | vlan | ipip)
		if [ "$encap" = vlan ]; then
			topo_vlan "$NS_WEST" w1 100
			topo_vlan "$NS_EAST" e0 100
		fi
		topo_addr "$NS_WEST" "$TOPO_MID_W" 2 1
		topo_addr "$NS_EAST" "$TOPO_MID_E" 2 2
		if [ "$encap" = ipip ]; then
			topo_ipip
		else
			ip -n "$NS_WEST" route add 10.0.3.0/24 via 10.0.2.2
			ip -n "$NS_EAST" route add 10.0.1.0/24 via 10.0.2.1
		fi
		ip -n "$NS_WEST" -6 route add fd00:3::/64 via fd00:2::2
		ip -n "$NS_EAST" -6 route add fd00:1::/64 via fd00:2::1
		;;
	pppoe)
		topo_pppoe
		ip -n "$NS_WEST" route add 10.0.3.0/24 dev pppw
		ip -n "$NS_EAST" route add 10.0.1.0/24 dev ppe
		;;
	esac
	ip -n "$NS_SUNRISE" route add default via 10.0.3.1
	ip -n "$NS_SUNRISE" -6 route add default via fd00:3::1
	topo_neigh_permanent
	# A dummy device in sunset: the "generator alone" baseline sends there.
	ip -n "$NS_SUNSET" link add d0 type dummy
	ip -n "$NS_SUNSET" link set d0 up
}

# topo_ipip: the IPIP tunnel between west (tw) and east (te) over
# 10.0.2.0/24, and the IPv4 routes between the outer networks through it.
topo_ipip() {
	ip -n "$NS_WEST" link add tw type ipip local 10.0.2.1 remote 10.0.2.2
	ip -n "$NS_EAST" link add te type ipip local 10.0.2.2 remote 10.0.2.1
	ip -n "$NS_WEST" addr add 10.0.4.1/30 dev tw
	ip -n "$NS_EAST" addr add 10.0.4.2/30 dev te
	ip -n "$NS_WEST" link set tw up
	ip -n "$NS_EAST" link set te up
	ip -n "$NS_WEST" route add 10.0.3.0/24 dev tw
	ip -n "$NS_EAST" route add 10.0.1.0/24 dev te
}

# topo_vlan NS DEV ID: an 802.1Q device DEV.ID on DEV, up.
topo_vlan() {
	ip -n "$1" link add link "$2" name "$2.$3" type vlan id "$3"
	ip -n "$1" link set "$2.$3" up
}

# shellcheck source=tools/testing/lib/ppp.sh
source "$(dirname "${BASH_SOURCE[0]}")/ppp.sh"

# topo_pppd NS LOG OPTION...: nfb_pppd (ppp.sh), its PID
# kept. The guest's clock runs ahead while the vCPU waits for I/O (icount,
# sleep=off): pppd's LCP retries would run out (10 x 3 s) while the other
# end's pppd is still being loaded, so they are made practically unlimited.
topo_pppd() {
	local ns=$1 log=$2
	shift 2
	nfb_pppd "$ns" "$TOPO_PPP_PLUGIN" "$log" lcp-max-configure 10000 \
		ipcp-max-configure 10000 "$@"
	TOPO_PIDS+=("$NFB_PPPD_PID")
}

# topo_has_addr NS DEV ADDR
topo_has_addr() {
	ip -n "$1" -4 addr show dev "$2" 2>/dev/null | grep -q "inet $3 "
}

# topo_pppoe: the PPPoE session between west (client, pppw) and east
# (access concentrator, ppe). Discovery is answered by nfb_pppoe.py on e0
# (Debian's pppoe-server has no kernel mode); west's pppd discovers it, and
# east's pppd joins the session handed out (pppoe-sess SID:MAC).
topo_pppoe() {
	local repo sid cmac f
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
	TOPO_PPP_PLUGIN=$(nfb_ppp_plugin) || {
		echo "topology.sh: no kernel PPPoE plugin for pppd (package ppp)" >&2
		return 1
	}
	modprobe pppoe
	TOPO_TMP=$(mktemp -d /tmp/nfb-bench.XXXXXX)
	ip netns exec "$NS_EAST" python3 "$repo/tools/testing/lib/nfb_pppoe.py" ac e0 \
		"$TOPO_PPPOE_SID" "$TOPO_TMP/session" &
	TOPO_PIDS+=($!)
	topo_wait 300 test -e "$TOPO_TMP/session.ready"
	topo_pppd "$NS_WEST" "$TOPO_TMP/pppd-west.log" nic-w1 ifname pppw noipdefault
	if ! topo_wait 600 test -s "$TOPO_TMP/session"; then
		echo "topology.sh: no PPPoE discovery" >&2
		cat "$TOPO_TMP"/*.log >&2
		return 1
	fi
	read -r sid cmac <"$TOPO_TMP/session"
	topo_pppd "$NS_EAST" "$TOPO_TMP/pppd-east.log" nic-e0 ifname ppe \
		pppoe-sess "$sid:$cmac" 10.0.2.2:10.0.2.1
	if ! topo_wait 600 topo_has_addr "$NS_WEST" pppw 10.0.2.1 ||
		! topo_wait 300 topo_has_addr "$NS_EAST" ppe 10.0.2.2; then
		echo "topology.sh: the PPP link did not come up" >&2
		for f in "$TOPO_TMP"/*.log; do sed "s|^|${f##*/}: |" "$f" >&2; done
		return 1
	fi
	ip -n "$NS_WEST" link set pppw up
	ip -n "$NS_EAST" link set ppe up
	tc -n "$NS_WEST" qdisc replace dev pppw root noqueue
	tc -n "$NS_EAST" qdisc replace dev ppe root noqueue
}

# Permanent neighbour entries on every link, both ways. Forwarded UDP never
# confirms a neighbour, so a dynamic entry cycles reachable -> stale ->
# delay -> probe, and each state sends packets down a different output path
# (cached header, or neigh_resolve_output): the cost of a run would depend
# on when it ran. Every configuration gets the same entries.
# On the west - east link they go on the VLAN devices; a PPP link has no
# neighbours.
topo_neigh_permanent() {
	local link nsa deva neta nsb devb netb maca macb pairs
	pairs=("$NS_SUNSET s0 1.1 $NS_WEST w0 1.2")
	[ "$TOPO_ENCAP" = pppoe ] || pairs+=("$NS_WEST $TOPO_MID_W 2.1 $NS_EAST $TOPO_MID_E 2.2")
	pairs+=("$NS_EAST e1 3.1 $NS_SUNRISE r0 3.2")
	for link in "${pairs[@]}"; do
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

# topo_gro on|off|list|udpfwd: veth receives in NAPI mode (GRO on, and TSO
# off on the sending peer so that nothing is aggregated on the way) or
# through the per-CPU backlog (GRO off). The two stock alternatives to the
# module, GRO on and at the routers' receive devices (w0, e0):
#   list    fraglist GRO (rx-gro-list), the RFC reviewers' proposal: a
#           train of one flow's packets is forwarded as one skb
#   udpfwd  UDP GRO forwarding (rx-udp-gro-forwarding): the train merged
#           into one UDP GSO skb
# and in both, no device sends those skbs on as they are (tx-gso-list,
# tx-udp-segmentation off), as on a NIC without them: the router's transmit
# segments them, and every link carries the packets the generator sent.
topo_gro() {
	local mode=$1 gro=on list=off udpfwd=off ns dev nd router
	case "$mode" in
	on) ;;
	off) gro=off ;;
	list) list=on ;;
	udpfwd) udpfwd=on ;;
	*) echo "topology.sh: unknown GRO mode $mode" >&2; return 2 ;;
	esac
	for nd in "$NS_SUNSET:s0" "$NS_WEST:w0" "$NS_WEST:w1" "$NS_EAST:e0" \
		"$NS_EAST:e1" "$NS_SUNRISE:r0"; do
		ns=${nd%%:*}
		dev=${nd#*:}
		router=off
		case "$dev" in w0 | e0) router=on ;; esac
		ip netns exec "$ns" ethtool -K "$dev" gro "$gro" >/dev/null 2>&1 || true
		ip netns exec "$ns" ethtool -K "$dev" tso off >/dev/null 2>&1 || true
		if [ "$list" = on ] || [ "$udpfwd" = on ]; then
			ip netns exec "$ns" ethtool -K "$dev" tx-gso-list off \
				tx-udp-segmentation off >/dev/null
		fi
		# Set both ways every time: the modes follow each other in one topology.
		ip netns exec "$ns" ethtool -K "$dev" \
			rx-gro-list "$([ "$router" = on ] && echo "$list" || echo off)" \
			rx-udp-gro-forwarding "$([ "$router" = on ] && echo "$udpfwd" || echo off)" \
			>/dev/null 2>&1 || [ "$list$udpfwd" = offoff ] || {
			echo "topology.sh: $dev: GRO mode $mode not supported" >&2
			return 1
		}
	done
	return 0
}

# Program both routers the way an operator would, with flowbulk: a table,
# a flowtable on both of the router's devices, the forward chain with
# "flow add" for TCP and UDP. HOOK is ingress (the stock flowtable) or
# early_ingress (the same flowtable, created at ingress and attached to
# nf_flow_bulk in the same step). Needs build/userspace/flowbulk.
topo_flowtable_add() {
	local hook=${1:-ingress} fb nd ns in out tun
	fb=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/build/userspace/flowbulk
	for nd in "$NS_WEST:w0:w1:$TOPO_TUN_W" "$NS_EAST:e0:e1:$TOPO_TUN_E"; do
		IFS=: read -r ns in out tun <<<"$nd"
		ip netns exec "$ns" "$fb" table add inet nfb_bench
		ip netns exec "$ns" "$fb" flowtable add inet nfb_bench ft \
			hook "$hook" priority 0 devices "$in,$out${tun:+,$tun}"
		ip netns exec "$ns" "$fb" offload add inet nfb_bench ft proto all
		# Flows stay for an hour, not 30 s: under -icount the guest's
		# clock runs ahead while a process is read in from the host,
		# the more so on a busy host, and flows left between the
		# warm-up and the runs (the slow path then measured, and the
		# stock fraglist path's TTL in the module's figures).
		ip netns exec "$ns" sysctl -qw net.netfilter.nf_flowtable_udp_timeout=3600 \
			net.netfilter.nf_flowtable_tcp_timeout=3600
	done
}

# topo_stack_forwarded 4|6: packets the routers' IP stacks forwarded so far
# (ip_forward(): Ip ForwDatagrams, Ip6OutForwDatagrams), summed over both
# routers; what a flowtable or XDP forwards is not counted.
topo_stack_forwarded() {
	local ns n=0 v
	for ns in "$NS_WEST" "$NS_EAST"; do
		if [ "$1" = 6 ]; then
			v=$(in_ns "$ns" cat /proc/net/snmp6 | awk '$1 == "Ip6OutForwDatagrams" { print $2 }')
		else
			v=$(in_ns "$ns" cat /proc/net/snmp | awk '$1 == "Ip:" && !h {
				for (i = 2; i <= NF; i++) if ($i == "ForwDatagrams") k = i; h = 1; next }
				$1 == "Ip:" { print $k }')
		fi
		n=$((n + ${v:-0}))
	done
	echo "$n"
}

# topo_offloaded NS 4|6: the flows of that family in NS's flowtable.
topo_offloaded() {
	in_ns "$1" conntrack -L -f "ipv$2" 2>/dev/null | grep -c OFFLOAD || true
}

# Delete what topo_flowtable_add made (flowbulk also detaches the module)
# and the conntrack entries, so that the next configuration starts clean.
topo_flowtable_del() {
	local fb ns
	fb=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/build/userspace/flowbulk
	for ns in "$NS_WEST" "$NS_EAST"; do
		ip netns exec "$ns" "$fb" table delete inet nfb_bench >/dev/null 2>&1 || true
		ip netns exec "$ns" conntrack -F >/dev/null 2>&1 || true
	done
}
